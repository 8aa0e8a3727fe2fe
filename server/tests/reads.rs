//! Reads against the real binary: every row of the get/list resourceVersion table, chunked
//! lists (remainingItemCount, a stable snapshot across pages), label and field selectors, 504
//! for a far-future resourceVersion, 410 once history is compacted, the metadata-only form, and a
//! list of a gibibyte streamed without the server holding it a second time.

use crate::common;

use std::time::{Duration, Instant};

use common::{configmap, names, rv, Reply, TestServer};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams, VersionMatch, WatchEvent, WatchParams};
use kube::{Api, ResourceExt};
use serde_json::{json, Value};

const CMS: &str = "/api/v1/namespaces/default/configmaps";

/// Creates ConfigMaps `names` in order; returns the last resourceVersion.
async fn create_all(api: &Api<ConfigMap>, names: &[&str]) -> u64 {
    let mut last = 0;
    for name in names {
        last = rv(&api.create(&PostParams::default(), &configmap(name, &[])).await.unwrap());
    }
    last
}

fn item_names(list: &Value) -> Vec<&str> {
    list["items"].as_array().expect("no items").iter().map(|i| i["metadata"]["name"].as_str().unwrap()).collect()
}

fn list_rv(list: &Value) -> u64 {
    list["metadata"]["resourceVersion"].as_str().expect("list without resourceVersion").parse().unwrap()
}

/// `continue=<token>`, encoded for a query string.
fn continue_param(token: &str) -> String {
    serde_urlencoded::to_string([("continue", token)]).unwrap()
}

/// A successful JSON list from a raw GET.
async fn list_ok(s: &TestServer, query: &str) -> Value {
    let reply = s.get(&format!("{CMS}?{query}")).await;
    assert_eq!(reply.status, 200, "{query}: {}", reply.text());
    let list = reply.json();
    assert_eq!(list["kind"], "ConfigMapList", "{query}");
    list
}

#[tokio::test]
async fn get_resource_version_semantics() {
    let s = TestServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let first = api.create(&PostParams::default(), &configmap("a", &[])).await.unwrap();
    let second = api.patch("a", &PatchParams::default(), &Patch::Merge(json!({"data": {"key": "v2"}}))).await.unwrap();
    assert!(rv(&second) > rv(&first));

    // Most Recent.
    assert_eq!(rv(&api.get("a").await.unwrap()), rv(&second));
    // Any: whatever the server has, but a real version of the object.
    let any = api.get_with("a", &kube::api::GetParams::any()).await.unwrap();
    assert!([rv(&first), rv(&second)].contains(&rv(&any)), "rv=0 gave {}", rv(&any));
    // Not older than: never the version before N.
    for n in [rv(&first), rv(&second)] {
        let got = api.get_with("a", &kube::api::GetParams::at(&n.to_string())).await.unwrap();
        assert!(rv(&got) >= n);
        assert_eq!(rv(&got), rv(&second), "not older than {n}");
    }
}

#[tokio::test]
async fn list_resource_version_table() {
    let s = TestServer::start_with(common::WITHOUT_ROOT_CA).await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let m = create_all(&api, &["c0", "c1", "c2", "c3", "c4"]).await;
    // Later writes that an Exact read at `m` must not see.
    api.patch("c1", &PatchParams::default(), &Patch::Merge(json!({"data": {"key": "later"}}))).await.unwrap();
    api.delete("c2", &DeleteParams::default()).await.unwrap();
    let latest = create_all(&api, &["c5"]).await;
    let now = ["c0", "c1", "c3", "c4", "c5"];
    let at_m = ["c0", "c1", "c2", "c3", "c4"];

    // Most Recent.
    let recent = api.list(&ListParams::default()).await.unwrap();
    assert_eq!(names(&recent), now);
    assert!(recent.metadata.resource_version.unwrap().parse::<u64>().unwrap() >= latest);
    // Any (rv=0), with and without NotOlderThan, with and without limit: some real state, never
    // newer than a Most Recent read that follows.
    for q in ["resourceVersion=0", "resourceVersion=0&resourceVersionMatch=NotOlderThan", "resourceVersion=0&limit=2"] {
        let any = list_ok(&s, q).await;
        let then_recent = list_rv(&list_ok(&s, "").await);
        assert!(list_rv(&any) >= 1 && list_rv(&any) <= then_recent, "{q}: {} > {then_recent}", list_rv(&any));
    }
    // Not older than N: the collection is at least at N, so every write up to N shows.
    for q in
        [format!("resourceVersion={latest}"), format!("resourceVersion={latest}&resourceVersionMatch=NotOlderThan")]
    {
        let list = list_ok(&s, &q).await;
        assert!(list_rv(&list) >= latest, "{q}");
        assert_eq!(item_names(&list), now, "{q}");
    }
    let older = list_ok(&s, &format!("resourceVersion={m}&resourceVersionMatch=NotOlderThan&limit=10")).await;
    assert!(list_rv(&older) >= m);

    // Exact N, by resourceVersionMatch and by limit: the state as of N, even after later writes.
    for q in [
        format!("resourceVersionMatch=Exact&resourceVersion={m}"),
        format!("limit=10&resourceVersion={m}"),
        format!("limit=10&resourceVersion={m}&resourceVersionMatch=Exact"),
    ] {
        let list = list_ok(&s, &q).await;
        assert_eq!(list_rv(&list), m, "{q}");
        assert_eq!(item_names(&list), at_m, "{q}");
        assert_eq!(list["items"][1]["data"]["key"], "value", "{q}: c1 as of {m}");
    }
    let typed = api.list(&ListParams::default().at(&m.to_string()).matching(VersionMatch::Exact)).await.unwrap();
    assert_eq!(
        (names(&typed), typed.metadata.resource_version),
        (at_m.map(String::from).to_vec(), Some(m.to_string()))
    );

    // Continuation of an Exact first page stays at N.
    let page1 = list_ok(&s, &format!("limit=2&resourceVersion={m}")).await;
    assert_eq!(item_names(&page1), ["c0", "c1"]);
    assert_eq!(page1["metadata"]["remainingItemCount"], 3);
    let cont = continue_param(page1["metadata"]["continue"].as_str().unwrap());
    let page2 = list_ok(&s, &format!("limit=10&{cont}")).await;
    assert_eq!((item_names(&page2), list_rv(&page2)), (vec!["c2", "c3", "c4"], m));
    // rv=0 with a continue token is still a Continuation.
    let page2_any = list_ok(&s, &format!("limit=10&{cont}&resourceVersion=0")).await;
    assert_eq!((item_names(&page2_any), list_rv(&page2_any)), (vec!["c2", "c3", "c4"], m));
}

#[tokio::test]
async fn invalid_list_parameter_combinations() {
    let s = TestServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let n = create_all(&api, &["a", "b", "c"]).await;
    let page = api.list(&ListParams::default().limit(1)).await.unwrap();
    let cont = continue_param(&page.metadata.continue_.unwrap());
    for (query, code, reason) in [
        ("resourceVersionMatch=Exact".to_string(), 422, "Invalid"),
        ("resourceVersionMatch=NotOlderThan".to_string(), 422, "Invalid"),
        ("resourceVersionMatch=Exact&limit=1".to_string(), 422, "Invalid"),
        ("resourceVersionMatch=Exact&resourceVersion=0".to_string(), 422, "Invalid"),
        (format!("resourceVersionMatch=Bogus&resourceVersion={n}"), 422, "Invalid"),
        (format!("limit=1&{cont}&resourceVersion={n}"), 400, "BadRequest"),
        ("limit=1&continue=not-a-token".to_string(), 400, "BadRequest"),
        ("limit=-1x".to_string(), 400, "BadRequest"),
    ] {
        let reply = s.get(&format!("{CMS}?{query}")).await;
        assert_eq!(reply.status, code, "{query}: {}", reply.text());
        reply.expect_status(code, reason);
    }
}

#[tokio::test]
async fn paging_keeps_its_snapshot_across_writes() {
    let s = TestServer::start_with(common::WITHOUT_ROOT_CA).await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let all = ["p0", "p1", "p2", "p3", "p4", "p5", "p6"];
    create_all(&api, &all).await;

    let first = api.list(&ListParams::default().limit(3)).await.unwrap();
    assert_eq!(names(&first), ["p0", "p1", "p2"]);
    assert_eq!(first.metadata.remaining_item_count, Some(4));
    let snapshot = first.metadata.resource_version.clone().unwrap();
    // Writes between pages: a new object, a deletion and an update in the pages still to come.
    create_all(&api, &["p3a", "zz-late"]).await;
    api.delete("p5", &DeleteParams::default()).await.unwrap();
    api.patch("p6", &PatchParams::default(), &Patch::Merge(json!({"data": {"key": "changed"}}))).await.unwrap();

    let mut seen = names(&first);
    let mut token = first.metadata.continue_.clone();
    let mut remaining = vec![];
    let mut last_page = None;
    while let Some(t) = token.filter(|t| !t.is_empty()) {
        let page = api.list(&ListParams::default().limit(3).continue_token(&t)).await.unwrap();
        assert_eq!(page.metadata.resource_version.as_deref(), Some(snapshot.as_str()), "collection rv moved");
        remaining.push(page.metadata.remaining_item_count);
        seen.extend(names(&page));
        token = page.metadata.continue_.clone();
        last_page = Some(page);
    }
    assert_eq!(seen, all);
    assert_eq!(remaining, [Some(1), None], "remainingItemCount of pages 2 and 3");
    assert_eq!(last_page.unwrap().items[0].data.as_ref().unwrap()["key"], "value", "p6 as of the snapshot");

    // A new list sees the writes.
    let fresh = api.list(&ListParams::default()).await.unwrap();
    assert_eq!(names(&fresh), ["p0", "p1", "p2", "p3", "p3a", "p4", "p6", "zz-late"]);
    // A complete list has no continue token and no remainingItemCount.
    assert!(fresh.metadata.continue_.unwrap_or_default().is_empty());
    assert_eq!(fresh.metadata.remaining_item_count, None);
    // With a selector the count is left out.
    let selected = api.list(&ListParams::default().limit(2).fields("metadata.name!=p0")).await.unwrap();
    assert_eq!(names(&selected), ["p1", "p2"]);
    assert!(!selected.metadata.continue_.unwrap_or_default().is_empty());
    assert_eq!(selected.metadata.remaining_item_count, None);
}

#[tokio::test]
async fn metadata_only_reads_and_watches() {
    let s = TestServer::start_with(common::WITHOUT_ROOT_CA).await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let first = create_all(&api, &["m1", "m2"]).await;
    let one = api.get_metadata("m1").await.unwrap();
    assert_eq!((one.types.as_ref().unwrap().kind.as_str(), one.name_any().as_str()), ("PartialObjectMetadata", "m1"));
    let list = api.list_metadata(&ListParams::default().limit(1)).await.unwrap();
    assert_eq!(names(&list), ["m1"]);
    assert!(list.metadata.continue_.is_some());
    // The raw answers hold metadata and nothing else.
    let accept = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
    let raw = s.request(http::Request::get(CMS).header("accept", accept).body(vec![]).unwrap()).await.json();
    assert_eq!(raw["kind"], "PartialObjectMetadataList");
    assert!(raw["items"][0].get("data").is_none(), "{raw}");

    let mut events = api.watch_metadata(&WatchParams::default(), &first.to_string()).await.unwrap().boxed();
    let mut m3 = configmap("m3", &[]);
    m3.data = Some([("k".to_string(), "v".to_string())].into());
    api.create(&PostParams::default(), &m3).await.unwrap();
    match tokio::time::timeout(Duration::from_secs(10), events.try_next()).await.unwrap().unwrap() {
        Some(WatchEvent::Added(meta)) => assert_eq!(meta.name_any(), "m3"),
        other => panic!("expected ADDED m3, got {other:?}"),
    }
}

#[tokio::test]
async fn label_and_field_selectors() {
    let s = TestServer::start_with(common::WITHOUT_ROOT_CA).await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    for (name, labels) in [
        ("a", &[("app", "web"), ("tier", "fe")][..]),
        ("b", &[("app", "web"), ("tier", "be")][..]),
        ("c", &[("app", "db")][..]),
        ("d", &[][..]),
    ] {
        api.create(&PostParams::default(), &configmap(name, labels)).await.unwrap();
    }
    for (selector, want) in [
        ("app=web", &["a", "b"][..]),
        ("app==db", &["c"][..]),
        ("app!=web", &["c", "d"][..]),
        ("app in (web,db)", &["a", "b", "c"][..]),
        ("app notin (web)", &["c", "d"][..]),
        ("tier", &["a", "b"][..]),
        ("!tier", &["c", "d"][..]),
        ("app=web,tier=be", &["b"][..]),
        ("app=nothing", &[][..]),
    ] {
        assert_eq!(
            names(&api.list(&ListParams::default().labels(selector)).await.unwrap()),
            want,
            "labelSelector {selector}"
        );
    }
    for (selector, want) in [
        ("metadata.name=a", &["a"][..]),
        ("metadata.name!=a", &["b", "c", "d"][..]),
        ("metadata.name=a,metadata.namespace=default", &["a"][..]),
        ("metadata.namespace=elsewhere", &[][..]),
    ] {
        assert_eq!(
            names(&api.list(&ListParams::default().fields(selector)).await.unwrap()),
            want,
            "fieldSelector {selector}"
        );
    }
    let both = api.list(&ListParams::default().labels("app=web").fields("metadata.name!=a")).await.unwrap();
    assert_eq!(names(&both), ["b"]);

    // metadata.namespace across all namespaces.
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "other"}})).unwrap();
    Api::<Namespace>::all(s.client()).create(&PostParams::default(), &ns).await.unwrap();
    Api::<ConfigMap>::namespaced(s.client(), "other")
        .create(&PostParams::default(), &configmap("a", &[]))
        .await
        .unwrap();
    let everywhere: Api<ConfigMap> = Api::all(s.client());
    let in_other = everywhere.list(&ListParams::default().fields("metadata.namespace=other")).await.unwrap();
    assert_eq!(
        in_other.items.iter().map(|c| (c.namespace().unwrap(), c.name_any())).collect::<Vec<_>>(),
        [("other".to_string(), "a".to_string())]
    );
    let named_a = everywhere.list(&ListParams::default().fields("metadata.name=a")).await.unwrap();
    assert_eq!(named_a.items.len(), 2);

    // Pods: spec.nodeName and status.phase.
    let pods: Api<Pod> = Api::namespaced(s.client(), "default");
    for (name, node) in [("on-node", Some("node-1")), ("unscheduled", None)] {
        let mut spec = json!({"containers": [{"name": "c", "image": "busybox"}]});
        if let Some(node) = node {
            spec["nodeName"] = json!(node);
        }
        let pod: Pod = serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).unwrap();
        pods.create(&PostParams::default(), &pod).await.unwrap();
    }
    for (selector, want) in [
        ("spec.nodeName=node-1", &["on-node"][..]),
        ("spec.nodeName=", &["unscheduled"][..]),
        ("spec.nodeName!=node-1", &["unscheduled"][..]),
        ("status.phase=Pending", &["on-node", "unscheduled"][..]),
        ("status.phase=Running", &[][..]),
        ("status.phase=Pending,spec.nodeName=node-1", &["on-node"][..]),
    ] {
        assert_eq!(
            names(&pods.list(&ListParams::default().fields(selector)).await.unwrap()),
            want,
            "fieldSelector {selector}"
        );
    }

    // Unsupported fields and malformed selectors: 400.
    for query in [
        "fieldSelector=spec.bogus%3Dx",
        "fieldSelector=data.key%3Dvalue",
        "labelSelector=app%20in%20(",
        "labelSelector=%3Dx",
    ] {
        s.get(&format!("{CMS}?{query}")).await.expect_status(400, "BadRequest");
    }
    s.get("/api/v1/namespaces/default/pods?fieldSelector=spec.image%3Dx").await.expect_status(400, "BadRequest");
}

async fn timed_get(s: &TestServer, path: String) -> (Reply, Duration) {
    let started = Instant::now();
    let reply = s.get(&path).await;
    (reply, started.elapsed())
}

/// Asserts a "Too large resource version" 504 that came after the server waited.
fn assert_too_large(reply: &Reply, waited: Duration) {
    let body = reply.expect_status(504, "Timeout");
    assert!(body["message"].as_str().unwrap().contains("Too large resource version"), "{body}");
    let retry: u64 = reply.headers.get("retry-after").expect("no Retry-After").to_str().unwrap().parse().unwrap();
    assert!(retry >= 1);
    assert!(waited >= Duration::from_secs(2), "answered after {waited:?}, without waiting for the revision");
}

#[tokio::test]
async fn far_future_resource_version_times_out_with_504() {
    let s = TestServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let n = create_all(&api, &["a"]).await;
    let far = n + 1_000_000;
    let (list, get, page) = tokio::join!(
        timed_get(&s, format!("{CMS}?resourceVersion={far}")),
        timed_get(&s, format!("{CMS}/a?resourceVersion={far}")),
        timed_get(&s, format!("{CMS}?resourceVersion={far}&resourceVersionMatch=NotOlderThan&limit=5")),
    );
    for (reply, waited) in [list, get, page] {
        assert_too_large(&reply, waited);
    }
    // The server is still fine afterwards.
    assert_eq!(rv(&api.get("a").await.unwrap()), n);
}

#[tokio::test]
async fn compacted_history_gives_410() {
    let s = TestServer::start_with(&["--history-retention", "2s", common::WITHOUT_ROOT_CA[0]]).await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let old = create_all(&api, &["a", "b", "c"]).await;
    let page = api.list(&ListParams::default().limit(1)).await.unwrap();
    let cont = continue_param(&page.metadata.continue_.unwrap());
    // Right now all of it is readable.
    assert_eq!(list_rv(&list_ok(&s, &format!("resourceVersionMatch=Exact&resourceVersion={old}")).await), old);
    api.patch("a", &PatchParams::default(), &Patch::Merge(json!({"data": {"key": "newer"}}))).await.unwrap();
    tokio::time::sleep(Duration::from_secs(4)).await;

    for query in [
        format!("resourceVersionMatch=Exact&resourceVersion={old}"),
        format!("limit=1&resourceVersion={old}"),
    ] {
        s.get(&format!("{CMS}?{query}")).await.expect_status(410, "Expired");
    }
    // An expired continue token comes back with one that goes on from the same place at the
    // latest revision (an inconsistent list, as Kubernetes offers).
    let expired = s.get(&format!("{CMS}?limit=1&{cont}")).await.expect_status(410, "Expired");
    let inconsistent = expired["metadata"]["continue"].as_str().expect("a continue token in the 410").to_string();
    let rest = list_ok(&s, &format!("limit=1&{}", continue_param(&inconsistent))).await;
    assert_eq!(item_names(&rest), ["b"]);
    assert!(list_rv(&rest) > old, "the continuation reads the latest revision");
    assert_eq!(rest["metadata"]["remainingItemCount"], 1, "{rest}");
    let mut watch = api.watch(&WatchParams::default().disable_bookmarks(), &old.to_string()).await.unwrap().boxed();
    match tokio::time::timeout(Duration::from_secs(10), watch.try_next()).await.expect("no event within 10 s") {
        Ok(Some(WatchEvent::Error(status))) => {
            assert_eq!((status.code, status.reason.as_str()), (410, "Expired"), "{status:?}")
        }
        other => panic!("expected an ERROR 410 event, got {other:?}"),
    }

    // The present stays readable, exactly and by watch.
    let fresh = create_all(&api, &["d"]).await;
    let exact = list_ok(&s, &format!("resourceVersionMatch=Exact&resourceVersion={fresh}")).await;
    assert_eq!((list_rv(&exact), item_names(&exact)), (fresh, vec!["a", "b", "c", "d"]));
    let mut watch = api.watch(&WatchParams::default().disable_bookmarks(), &fresh.to_string()).await.unwrap().boxed();
    api.delete("d", &DeleteParams::default()).await.unwrap();
    match tokio::time::timeout(Duration::from_secs(10), watch.try_next()).await.expect("no event within 10 s") {
        Ok(Some(WatchEvent::Deleted(cm))) => assert_eq!(cm.name_any(), "d"),
        other => panic!("expected DELETED d, got {other:?}"),
    }
}

#[tokio::test]
async fn history_past_its_bytes_gives_410_however_recent() {
    // A window of 64 KiB of objects, and five minutes' retention: 40 writes of 4 KiB overflow
    // it in a moment.
    let s = TestServer::start_with(&["--history-max-bytes", "65536", common::WITHOUT_ROOT_CA[0]]).await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let old = create_all(&api, &["first"]).await;
    let big = "x".repeat(4096);
    let mut last = old;
    for i in 0..40 {
        let mut cm = configmap(&format!("big-{i}"), &[]);
        cm.data = Some([("key".to_string(), big.clone())].into());
        last = rv(&api.create(&PostParams::default(), &cm).await.unwrap());
    }
    s.get(&format!("{CMS}?resourceVersionMatch=Exact&resourceVersion={old}")).await.expect_status(410, "Expired");
    let mut watch = api.watch(&WatchParams::default().disable_bookmarks(), &old.to_string()).await.unwrap().boxed();
    match tokio::time::timeout(Duration::from_secs(10), watch.try_next()).await.expect("no event within 10 s") {
        Ok(Some(WatchEvent::Error(status))) => assert_eq!((status.code, status.reason.as_str()), (410, "Expired"), "{status:?}"),
        other => panic!("expected an ERROR 410 event, got {other:?}"),
    }
    // The newest changes stay in the window.
    let exact = list_ok(&s, &format!("resourceVersionMatch=Exact&resourceVersion={}", last - 1)).await;
    assert_eq!(list_rv(&exact), last - 1);
}

#[tokio::test]
async fn list_items_carry_no_type_meta() {
    // As in kube-apiserver: client-go's typed clients compare listed items with the objects
    // their creates returned, which they decode without kind and apiVersion.
    let s = TestServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    api.create(&PostParams::default(), &configmap("typed", &[("a", "b")])).await.unwrap();
    let list = s.get("/api/v1/namespaces/default/configmaps").await.json();
    assert_eq!(list["kind"], "ConfigMapList");
    let item = list["items"].as_array().unwrap().iter().find(|i| i["metadata"]["name"] == "typed").unwrap().clone();
    assert_eq!(item.get("kind"), None, "{item}");
    assert_eq!(item.get("apiVersion"), None, "{item}");
    assert_eq!(item["metadata"]["labels"]["a"], "b");
    // A single object keeps them.
    assert_eq!(s.get("/api/v1/namespaces/default/configmaps/typed").await.json()["kind"], "ConfigMap");
}

/// A list of 300 ConfigMaps of 1 KiB: well over the 128 KiB threshold.
async fn big_namespace(s: &TestServer) {
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    for i in 0..300 {
        let mut cm = configmap(&format!("big-{i}"), &[]);
        cm.data = Some([("payload".to_string(), "x".repeat(1024))].into());
        api.create(&PostParams::default(), &cm).await.unwrap();
    }
}

fn gzip_get(path: &str) -> http::Request<Vec<u8>> {
    http::Request::get(path).header("accept-encoding", "gzip").body(vec![]).unwrap()
}

#[tokio::test]
async fn large_responses_are_gzipped_when_the_client_accepts_it() {
    use std::io::Read;
    let s = TestServer::start().await;
    big_namespace(&s).await;
    let reply = s.request(gzip_get(CMS)).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.headers.get("content-encoding").map(|v| v.to_str().unwrap()), Some("gzip"));
    let mut text = String::new();
    flate2::read::GzDecoder::new(&reply.body[..]).read_to_string(&mut text).unwrap();
    let list: Value = serde_json::from_str(&text).unwrap();
    assert!(list["items"].as_array().unwrap().len() >= 300);
    assert!(reply.body.len() < text.len() / 4, "compressed {} of {}", reply.body.len(), text.len());
    // Small answers, and clients that do not ask, get plain bodies.
    let small = s.request(gzip_get(&format!("{CMS}/big-1"))).await;
    assert!(small.headers.get("content-encoding").is_none());
    let plain = s.get(CMS).await;
    assert!(plain.headers.get("content-encoding").is_none() && plain.json()["items"].is_array());

    // A list past 16 MiB, streamed as it is made, is gzipped piece by piece.
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    for i in 0..20 {
        let mut cm = configmap(&format!("bigger-{i}"), &[]);
        cm.data = Some([("payload".to_string(), "y".repeat(1_000_000))].into());
        api.create(&PostParams::default(), &cm).await.unwrap();
    }
    let reply = s.request(gzip_get(CMS)).await;
    assert_eq!(reply.headers.get("content-encoding").map(|v| v.to_str().unwrap()), Some("gzip"));
    assert!(reply.headers.get("content-length").is_none(), "the list was not streamed");
    let mut text = String::new();
    flate2::read::GzDecoder::new(&reply.body[..]).read_to_string(&mut text).unwrap();
    assert!(text.len() > 16 << 20, "{} bytes", text.len());
    let list: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(list["kind"], "ConfigMapList");
    assert!(list["items"].as_array().unwrap().len() >= 320);
}

#[tokio::test]
async fn response_compression_can_be_turned_off() {
    let s = TestServer::start_with(&["--feature-gates", "APIResponseCompression=false"]).await;
    big_namespace(&s).await;
    let reply = s.request(gzip_get(CMS)).await;
    assert!(reply.headers.get("content-encoding").is_none());
    assert!(reply.json()["items"].is_array());
}

/// The server's resident memory, in bytes.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.split_whitespace().next()).and_then(|n| n.parse().ok()).unwrap();
    kb * 1024
}

#[tokio::test(flavor = "multi_thread")]
async fn a_list_of_a_gibibyte_is_streamed_without_holding_it_twice() {
    let server = TestServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    // 1,100 ConfigMaps of 0.95 MiB: about 1 GiB.
    let value = "x".repeat(1_000_000);
    futures::stream::iter(0..1100)
        .map(|i| {
            let (api, value) = (api.clone(), value.clone());
            async move {
                let mut cm = configmap(&format!("big-{i}"), &[]);
                cm.data = Some([("v".to_string(), value)].into());
                api.create(&PostParams::default(), &cm).await.unwrap();
            }
        })
        .buffer_unordered(4)
        .collect::<Vec<_>>()
        .await;

    let pid = server.pid();
    let before = rss(pid);
    let peak = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(before));
    let sampling = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let sampler = {
        let (peak, sampling) = (peak.clone(), sampling.clone());
        tokio::spawn(async move {
            while sampling.load(std::sync::atomic::Ordering::Relaxed) {
                peak.fetch_max(rss(pid), std::sync::atomic::Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    let resp = server.client().send(http::Request::get("/api/v1/namespaces/default/configmaps").body(kube::client::Body::empty()).unwrap()).await.unwrap();
    assert_eq!(resp.status(), 200);
    assert!(resp.headers().get("content-length").is_none(), "a list of a gibibyte was not streamed");
    let mut body = resp.into_body();
    let (mut size, mut head, mut tail) = (0usize, Vec::new(), Vec::new());
    while let Some(frame) = http_body_util::BodyExt::frame(&mut body).await {
        let Ok(data) = frame.unwrap().into_data() else { continue };
        if head.len() < 64 {
            head.extend_from_slice(&data[..data.len().min(64)]);
        }
        tail = data[data.len().saturating_sub(16)..].to_vec();
        size += data.len();
    }
    sampling.store(false, std::sync::atomic::Ordering::Relaxed);
    sampler.await.unwrap();
    assert!(size > 1_100_000_000, "{size} bytes listed");
    let head = String::from_utf8_lossy(&head);
    assert!(head.starts_with('{') && head.contains(r#""kind":"ConfigMapList""#), "{head}");
    assert!(tail.ends_with(b"}}]}"), "{}", String::from_utf8_lossy(&tail));
    let grew = peak.load(std::sync::atomic::Ordering::Relaxed).saturating_sub(before);
    assert!(grew < 200 << 20, "the server grew by {} MiB while listing {} MiB", grew >> 20, size >> 20);
}
