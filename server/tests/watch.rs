//! Watches against the real binary through kube-rs: ordered ADDED/MODIFIED/DELETED events with
//! increasing resourceVersions, resuming from a revision, synthetic initial state, streaming
//! lists ending in the initial-events-end bookmark, selector filtering and timeoutSeconds.

use crate::common;

use std::time::{Duration, Instant};

use common::{configmap, rv, TestServer};
use futures::{Stream, StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;

/// A watch event reduced to what the tests compare: type, object name, resourceVersion.
type Seen = (&'static str, String, u64);

fn seen<K: kube::Resource>(event: WatchEvent<K>) -> Seen {
    match event {
        WatchEvent::Added(o) => ("ADDED", o.name_any(), rv(&o)),
        WatchEvent::Modified(o) => ("MODIFIED", o.name_any(), rv(&o)),
        WatchEvent::Deleted(o) => ("DELETED", o.name_any(), rv(&o)),
        WatchEvent::Bookmark(b) => ("BOOKMARK", String::new(), b.metadata.resource_version.parse().unwrap()),
        WatchEvent::Error(status) => panic!("ERROR event: {status:?}"),
    }
}

/// The next event, bookmarks included; fails after 10 s or when the stream ends.
async fn next_event<K, S>(stream: &mut S) -> WatchEvent<K>
where
    S: Stream<Item = kube::Result<WatchEvent<K>>> + Unpin,
{
    match tokio::time::timeout(Duration::from_secs(10), stream.try_next()).await {
        Ok(Ok(Some(event))) => event,
        Ok(Ok(None)) => panic!("the watch ended early"),
        Ok(Err(e)) => panic!("watch failed: {e}"),
        Err(_) => panic!("no watch event within 10 s"),
    }
}

/// The next `n` events that are not bookmarks.
async fn next_changes<K: kube::Resource, S>(stream: &mut S, n: usize) -> Vec<Seen>
where
    S: Stream<Item = kube::Result<WatchEvent<K>>> + Unpin,
{
    let mut out = Vec::new();
    while out.len() < n {
        let event = seen(next_event(stream).await);
        if event.0 != "BOOKMARK" {
            out.push(event);
        }
    }
    out
}

/// Everything up to the server closing the stream (bookmarks left out).
async fn until_closed<K: kube::Resource, S>(stream: &mut S) -> Vec<Seen>
where
    S: Stream<Item = kube::Result<WatchEvent<K>>> + Unpin,
{
    let all: Vec<_> = tokio::time::timeout(Duration::from_secs(15), stream.try_collect::<Vec<_>>())
        .await
        .expect("the server did not close the watch")
        .expect("watch failed");
    all.into_iter().map(seen).filter(|e| e.0 != "BOOKMARK").collect()
}

async fn current_rv(api: &Api<ConfigMap>) -> String {
    api.list(&ListParams::default()).await.unwrap().metadata.resource_version.unwrap()
}

#[tokio::test]
async fn events_in_order_and_resume_from_a_revision() {
    let s = TestServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let start = current_rv(&api).await;
    let mut stream = api.watch(&WatchParams::default(), &start).await.unwrap().boxed();

    let added = api.create(&PostParams::default(), &configmap("w", &[])).await.unwrap();
    let mut next = added.clone();
    next.data = Some([("key".to_string(), "2".to_string())].into());
    let replaced = api.replace("w", &PostParams::default(), &next).await.unwrap();
    // Writes elsewhere must not show up in this namespace's watch.
    Api::<ConfigMap>::namespaced(s.client(), "kube-public")
        .create(&PostParams::default(), &configmap("w", &[]))
        .await
        .unwrap();
    let patched = api.patch("w", &PatchParams::default(), &Patch::Merge(json!({"data": {"key": "3"}}))).await.unwrap();
    api.delete("w", &DeleteParams::default()).await.unwrap();

    let events = next_changes(&mut stream, 4).await;
    let w = "w".to_string();
    assert_eq!(
        events[..3],
        [
            ("ADDED", w.clone(), rv(&added)),
            ("MODIFIED", w.clone(), rv(&replaced)),
            ("MODIFIED", w.clone(), rv(&patched))
        ]
    );
    assert_eq!((events[3].0, &events[3].1), ("DELETED", &w));
    assert!(events[3].2 > rv(&patched), "DELETED at {} after {}", events[3].2, rv(&patched));

    // Resuming from the first MODIFIED replays exactly what came after it.
    let mut resumed = api.watch(&WatchParams::default().timeout(2), &rv(&replaced).to_string()).await.unwrap().boxed();
    assert_eq!(until_closed(&mut resumed).await, events[2..]);
    // Resuming from the last event replays nothing.
    let mut caught_up = api.watch(&WatchParams::default().timeout(1), &events[3].2.to_string()).await.unwrap().boxed();
    let nothing = until_closed(&mut caught_up).await;
    assert!(nothing.is_empty(), "{nothing:?}");
}

#[tokio::test]
async fn watch_without_a_revision_starts_with_the_current_state() {
    let s = TestServer::start_with(common::WITHOUT_ROOT_CA).await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let a = api.create(&PostParams::default(), &configmap("a", &[])).await.unwrap();
    let b = api.create(&PostParams::default(), &configmap("b", &[])).await.unwrap();
    let deleted = api.create(&PostParams::default(), &configmap("gone", &[])).await.unwrap();
    api.delete(&deleted.name_any(), &DeleteParams::default()).await.unwrap();
    for version in ["", "0"] {
        let mut stream = api.watch(&WatchParams::default(), version).await.unwrap().boxed();
        let mut initial = next_changes(&mut stream, 2).await;
        initial.sort();
        assert_eq!(
            initial,
            [("ADDED", "a".to_string(), rv(&a)), ("ADDED", "b".to_string(), rv(&b))],
            "resourceVersion={version:?}"
        );
        let c = api.create(&PostParams::default(), &configmap(&format!("c{version}"), &[])).await.unwrap();
        assert_eq!(
            next_changes(&mut stream, 1).await,
            [("ADDED", c.name_any(), rv(&c))],
            "resourceVersion={version:?}"
        );
        api.delete(&c.name_any(), &DeleteParams::default()).await.unwrap();
    }
}

#[tokio::test]
async fn selectors_filter_watch_events() {
    let s = TestServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let start = current_rv(&api).await;
    let mut stream = api.watch(&WatchParams::default().labels("app=web"), &start).await.unwrap().boxed();
    let mut by_name = api.watch(&WatchParams::default().fields("metadata.name=other"), &start).await.unwrap().boxed();

    let web = api.create(&PostParams::default(), &configmap("web", &[("app", "web")])).await.unwrap();
    let other = api.create(&PostParams::default(), &configmap("other", &[("app", "db")])).await.unwrap();
    // Leaving the selection is seen as a deletion by the filtered watch.
    let left = api
        .patch("web", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"labels": {"app": "api"}}})))
        .await
        .unwrap();
    let joined = api
        .patch("other", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"labels": {"app": "web"}}})))
        .await
        .unwrap();

    assert_eq!(
        next_changes(&mut stream, 3).await,
        [
            ("ADDED", "web".to_string(), rv(&web)),
            ("DELETED", "web".to_string(), rv(&left)),
            ("ADDED", "other".to_string(), rv(&joined)),
        ]
    );
    assert_eq!(
        next_changes(&mut by_name, 2).await,
        [("ADDED", "other".to_string(), rv(&other)), ("MODIFIED", "other".to_string(), rv(&joined))]
    );
}

#[tokio::test]
async fn a_nodes_pod_watch_sees_the_pods_bound_to_it_and_no_others() {
    let s = TestServer::start().await;
    let pods: Api<Pod> = Api::namespaced(s.client(), "default");
    let start = pods.list(&ListParams::default()).await.unwrap().metadata.resource_version.unwrap();
    // A kubelet's watch, the scheduler's (pods not yet bound), and a node's with no pods; the
    // old `spec.host` names the same field.
    let watch = |fields: &str| WatchParams::default().fields(fields).timeout(4);
    let mut on_a = pods.watch(&watch("spec.nodeName=node-a"), &start).await.unwrap().boxed();
    let mut unbound = pods.watch(&watch("spec.nodeName="), &start).await.unwrap().boxed();
    let mut on_c = pods.watch(&watch("spec.host=node-c"), &start).await.unwrap().boxed();

    let pod = |name: &str, node: Option<&str>| -> Pod {
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]}})).unwrap()
    };
    let p1 = pods.create(&PostParams::default(), &pod("p1", None)).await.unwrap();
    let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p1"}, "target": {"kind": "Node", "name": "node-a"}});
    let _: serde_json::Value = pods.create_subresource("binding", "p1", &PostParams::default(), &binding).await.unwrap();
    let bound = pods.get("p1").await.unwrap();
    pods.create(&PostParams::default(), &pod("p2", Some("node-b"))).await.unwrap();
    pods.delete("p1", &DeleteParams { grace_period_seconds: Some(0), ..Default::default() }).await.unwrap();
    pods.delete("p2", &DeleteParams { grace_period_seconds: Some(0), ..Default::default() }).await.unwrap();

    let name = "p1".to_string();
    let a = until_closed(&mut on_a).await;
    assert_eq!(a[..1], [("ADDED", name.clone(), rv(&bound))]);
    assert!(matches!(&a[1..], [("DELETED", n, deleted)] if *n == name && *deleted > rv(&bound)), "{a:?}");
    assert_eq!(until_closed(&mut unbound).await, [("ADDED", name.clone(), rv(&p1)), ("DELETED", name, rv(&bound))]);
    assert_eq!(until_closed(&mut on_c).await, []);
}

#[tokio::test]
async fn streaming_list_ends_initial_events_with_a_bookmark() {
    let s = TestServer::start_with(common::WITHOUT_ROOT_CA).await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let a = api.create(&PostParams::default(), &configmap("a", &[])).await.unwrap();
    let b = api.create(&PostParams::default(), &configmap("b", &[])).await.unwrap();

    // sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true
    let mut stream = api.watch(&WatchParams::streaming_lists().timeout(30), "").await.unwrap().boxed();
    let mut initial = Vec::new();
    let bookmark = loop {
        match next_event(&mut stream).await {
            WatchEvent::Bookmark(bookmark) => break bookmark,
            event => initial.push(seen(event)),
        }
    };
    initial.sort();
    assert_eq!(initial, [("ADDED", "a".to_string(), rv(&a)), ("ADDED", "b".to_string(), rv(&b))]);
    assert_eq!(bookmark.metadata.annotations.get("k8s.io/initial-events-end").map(String::as_str), Some("true"));
    assert!(bookmark.metadata.resource_version.parse::<u64>().unwrap() >= rv(&b));
    let c = api.create(&PostParams::default(), &configmap("c", &[])).await.unwrap();
    assert_eq!(next_changes(&mut stream, 1).await, [("ADDED", "c".to_string(), rv(&c))]);

    // sendInitialEvents requires resourceVersionMatch=NotOlderThan.
    s.get("/api/v1/namespaces/default/configmaps?watch=true&sendInitialEvents=true&allowWatchBookmarks=true")
        .await
        .expect_status(422, "Invalid");
}

#[tokio::test]
async fn timeout_seconds_ends_the_stream() {
    let s = TestServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let start = current_rv(&api).await;
    let begun = Instant::now();
    let mut stream = api.watch(&WatchParams::default().timeout(1), &start).await.unwrap().boxed();
    let events = until_closed(&mut stream).await;
    assert!(events.is_empty(), "{events:?}");
    let took = begun.elapsed();
    assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(10), "closed after {took:?}");
}

#[tokio::test]
async fn a_bookmark_comes_before_the_watch_times_out() {
    let s = TestServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let start: u64 = current_rv(&api).await.parse().unwrap();
    // Writes elsewhere move the revision on; the bookmark before the timeout carries it.
    let other: Api<ConfigMap> = Api::namespaced(s.client(), "kube-system");
    let mut stream = api.watch(&WatchParams::default().timeout(3), &start.to_string()).await.unwrap().boxed();
    other.create(&PostParams::default(), &configmap("elsewhere", &[])).await.unwrap();
    let mut all = Vec::new();
    while let Some(event) = stream.next().await {
        all.push(seen(event.unwrap()));
    }
    let bookmarks: Vec<_> = all.iter().filter(|e| e.0 == "BOOKMARK").collect();
    assert_eq!(bookmarks.len(), 1, "{all:?}");
    assert!(bookmarks[0].2 > start, "the bookmark carries the newer revision: {all:?}");
}

#[tokio::test]
async fn watch_lists_stream_tables_as_kubernetes_does() {
    let s = TestServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    api.create(&PostParams::default(), &configmap("t1", &[("watchlist", "true")])).await.unwrap();
    api.create(&PostParams::default(), &configmap("t2", &[("watchlist", "true")])).await.unwrap();
    let path = "/api/v1/namespaces/default/configmaps?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&labelSelector=watchlist%3Dtrue&timeoutSeconds=2";
    let req = http::Request::get(path).header("accept", "application/json;as=Table;v=v1;g=meta.k8s.io").body(vec![]).unwrap();
    let reply = s.request(req).await;
    assert_eq!(reply.status, 200);
    let events: Vec<serde_json::Value> = reply.text().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    // (A progress bookmark may follow, shortly before the watch times out.)
    assert!(events.len() >= 3, "{events:?}");
    // One row per event; column definitions with the first only.
    assert_eq!(events[0]["type"], "ADDED");
    assert_eq!(events[0]["object"]["kind"], "Table");
    assert!(events[0]["object"]["columnDefinitions"].as_array().is_some_and(|c| !c.is_empty()));
    assert_eq!(events[1]["object"]["columnDefinitions"], serde_json::Value::Null);
    assert_eq!(events[1]["object"]["rows"].as_array().unwrap().len(), 1);
    // The bookmark is a table too, its row's object carrying the end-of-initial-events mark.
    assert_eq!(events[2]["type"], "BOOKMARK");
    assert_eq!(events[2]["object"]["kind"], "Table");
    assert_eq!(events[2]["object"]["rows"][0]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
}
