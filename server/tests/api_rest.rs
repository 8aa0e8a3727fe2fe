//! The resource API over HTTPS with kube-rs and raw requests: writes, optimistic concurrency,
//! validation, the resourceVersion semantics table, paging, watches and error codes.

mod support;

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Service};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::Api;
use serde_json::json;
use support::TestServer;

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": {"app": "t"}}, "data": {"k": "v"}})).unwrap()
}

fn rv(o: &impl kube::ResourceExt) -> u64 {
    o.resource_version().unwrap().parse().unwrap()
}

fn api_code(e: kube::Error) -> u16 {
    match e {
        kube::Error::Api(s) => s.code,
        other => panic!("not an API error: {other}"),
    }
}

#[tokio::test]
async fn create_update_conflict_patch_delete() {
    let s = TestServer::start(&[]).await;
    let api: Api<ConfigMap> = Api::namespaced(s.client().await, "default");
    let created = api.create(&PostParams::default(), &cm("a")).await.unwrap();
    assert!(created.metadata.uid.is_some() && created.metadata.creation_timestamp.is_some());
    assert_eq!(api_code(api.create(&PostParams::default(), &cm("a")).await.unwrap_err()), 409);

    let mut changed = created.clone();
    changed.data = Some([("k".to_string(), "w".to_string())].into());
    let updated = api.replace("a", &PostParams::default(), &changed).await.unwrap();
    assert!(rv(&updated) > rv(&created));
    // The same stale resourceVersion again: 409 Conflict.
    assert_eq!(api_code(api.replace("a", &PostParams::default(), &changed).await.unwrap_err()), 409);

    let merged = api.patch("a", &PatchParams::default(), &Patch::Merge(json!({"data": {"x": "y"}}))).await.unwrap();
    assert_eq!(merged.data.unwrap()["x"], "y");
    // A failing JSON-patch test op is 422 and changes nothing.
    let before = api.get("a").await.unwrap();
    let p = serde_json::to_vec(&json!([{"op": "test", "path": "/data/k", "value": "nope"}, {"op": "replace", "path": "/data/k", "value": "z"}])).unwrap();
    let req = http::Request::patch("/api/v1/namespaces/default/configmaps/a").header("content-type", "application/json-patch+json").body(p).unwrap();
    let (code, _, body) = s.raw(req).await;
    assert_eq!((code, body["reason"].as_str()), (422, Some("Invalid")));
    assert_eq!(api.get("a").await.unwrap().metadata.resource_version, before.metadata.resource_version);

    api.delete("a", &DeleteParams::default()).await.unwrap();
    assert_eq!(api_code(api.get("a").await.unwrap_err()), 404);

    let generated: ConfigMap = serde_json::from_value(json!({"metadata": {"generateName": "gen-"}})).unwrap();
    let g = api.create(&PostParams::default(), &generated).await.unwrap();
    assert!(g.metadata.name.unwrap().starts_with("gen-"));
}

#[tokio::test]
async fn defaults_validation_and_generation() {
    let s = TestServer::start(&[]).await;
    let client = s.client().await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let bad: Pod = serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": {"containers": []}})).unwrap();
    match pods.create(&PostParams::default(), &bad).await.unwrap_err() {
        kube::Error::Api(e) => {
            assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"));
            assert!(e.message.contains("spec.containers"), "{}", e.message);
        }
        e => panic!("{e}"),
    }
    let good: Pod = serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}})).unwrap();
    let p = pods.create(&PostParams::default(), &good).await.unwrap();
    let spec = p.spec.unwrap();
    assert_eq!(spec.restart_policy.as_deref(), Some("Always"));
    assert_eq!(spec.dns_policy.as_deref(), Some("ClusterFirst"));
    assert_eq!(spec.termination_grace_period_seconds, Some(30));
    let bad_name = cm("Not_A_Name");
    assert_eq!(api_code(Api::<ConfigMap>::namespaced(client.clone(), "default").create(&PostParams::default(), &bad_name).await.unwrap_err()), 422);

    let deploys: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let d: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
    })).unwrap();
    let d = deploys.create(&PostParams::default(), &d).await.unwrap();
    assert_eq!(d.metadata.generation, Some(1));
    assert_eq!(d.spec.as_ref().unwrap().replicas, Some(1));
    assert_eq!(d.spec.as_ref().unwrap().strategy.as_ref().unwrap().type_.as_deref(), Some("RollingUpdate"));
    let d2 = deploys.patch("d", &PatchParams::default(), &Patch::Merge(json!({"spec": {"replicas": 3}}))).await.unwrap();
    assert_eq!(d2.metadata.generation, Some(2));
    let d3 = deploys.patch("d", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}}))).await.unwrap();
    assert_eq!(d3.metadata.generation, Some(2));

    let svcs: Api<Service> = Api::namespaced(client, "default");
    let mut ips = std::collections::HashSet::new();
    for i in 0..5 {
        let svc: Service = serde_json::from_value(json!({"metadata": {"name": format!("s{i}")}, "spec": {"ports": [{"port": 80}]}})).unwrap();
        let svc = svcs.create(&PostParams::default(), &svc).await.unwrap();
        let spec = svc.spec.unwrap();
        assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
        assert_eq!(spec.session_affinity.as_deref(), Some("None"));
        let ip: std::net::Ipv4Addr = spec.cluster_ip.unwrap().parse().unwrap();
        assert!(ipnet::Ipv4Net::new("10.96.0.0".parse().unwrap(), 12).unwrap().contains(&ip));
        assert!(ips.insert(ip), "cluster IP handed out twice");
    }
}

#[tokio::test]
async fn resource_version_semantics_and_paging() {
    let s = TestServer::start(&[]).await;
    let api: Api<ConfigMap> = Api::namespaced(s.client().await, "default");
    let mut last = 0;
    for i in 0..6 {
        last = rv(&api.create(&PostParams::default(), &cm(&format!("c{i}"))).await.unwrap());
    }
    // Exact: a list at `last` keeps showing that state after later writes.
    api.delete("c0", &DeleteParams::default()).await.unwrap();
    let (code, exact) = s.get_json(&format!("/api/v1/namespaces/default/configmaps?resourceVersionMatch=Exact&resourceVersion={last}")).await;
    assert_eq!(code, 200);
    assert_eq!(exact["metadata"]["resourceVersion"], last.to_string());
    assert_eq!(exact["items"].as_array().unwrap().len(), 6);
    let (_, exact_limit) = s.get_json(&format!("/api/v1/namespaces/default/configmaps?limit=10&resourceVersion={last}")).await;
    assert_eq!(exact_limit["items"].as_array().unwrap().len(), 6);
    // Most Recent, Any, Not older than.
    let (_, recent) = s.get_json("/api/v1/namespaces/default/configmaps").await;
    assert_eq!(recent["items"].as_array().unwrap().len(), 5);
    let (code, _) = s.get_json("/api/v1/namespaces/default/configmaps?resourceVersion=0").await;
    assert_eq!(code, 200);
    let (_, not_older) = s.get_json(&format!("/api/v1/namespaces/default/configmaps?resourceVersion={last}")).await;
    assert!(not_older["metadata"]["resourceVersion"].as_str().unwrap().parse::<u64>().unwrap() > last);
    let (code, _) = s.get_json(&format!("/api/v1/namespaces/default/configmaps/c1?resourceVersion={last}")).await;
    assert_eq!(code, 200);
    // Invalid combinations.
    for (q, want) in [
        ("resourceVersionMatch=Exact", 422),
        ("resourceVersionMatch=Exact&resourceVersion=0", 422),
        ("resourceVersionMatch=NotOlderThan", 422),
        ("limit=1&continue=abc", 400),
    ] {
        let (code, body) = s.get_json(&format!("/api/v1/namespaces/default/configmaps?{q}")).await;
        assert_eq!(code, want, "{q}: {body}");
        assert_eq!(body["kind"], "Status");
    }

    // Paging with a write between pages: the collection revision stays, the write is unseen.
    let first = api.list(&ListParams::default().limit(2)).await.unwrap();
    let token = first.metadata.continue_.clone().unwrap();
    assert_eq!(first.metadata.remaining_item_count, Some(3));
    api.create(&PostParams::default(), &cm("zz-late")).await.unwrap();
    let (code, bad) = s.get_json(&format!("/api/v1/namespaces/default/configmaps?limit=2&continue={token}&resourceVersion=5")).await;
    assert_eq!(code, 400, "{bad}");
    let mut names: Vec<String> = first.items.iter().map(|c| c.metadata.name.clone().unwrap()).collect();
    let mut cont = Some(token);
    while let Some(c) = cont {
        let page = api.list(&ListParams::default().limit(2).continue_token(&c)).await.unwrap();
        assert_eq!(page.metadata.resource_version, first.metadata.resource_version);
        names.extend(page.items.iter().map(|c| c.metadata.name.clone().unwrap()));
        cont = page.metadata.continue_.filter(|c| !c.is_empty());
    }
    assert_eq!(names, ["c1", "c2", "c3", "c4", "c5"]);

    // Selectors.
    let sel = api.list(&ListParams::default().labels("app in (t,u)").fields("metadata.name=c3")).await.unwrap();
    assert_eq!(sel.items.len(), 1);
    let (code, _) = s.get_json("/api/v1/namespaces/default/configmaps?fieldSelector=spec.bogus%3Dx").await;
    assert_eq!(code, 400);

    // Not older than a revision that never comes: 504 after ~3 s with Retry-After.
    let far = last + 1_000_000;
    let (code, headers, body) = s.raw(http::Request::get(format!("/api/v1/namespaces/default/configmaps?resourceVersion={far}")).body(vec![]).unwrap()).await;
    assert_eq!(code, 504);
    assert!(body["message"].as_str().unwrap().contains("Too large resource version"));
    assert_eq!(headers["retry-after"], "1");
}

#[tokio::test]
async fn watch_events_resume_and_initial_events() {
    let s = TestServer::start(&[]).await;
    let api: Api<ConfigMap> = Api::namespaced(s.client().await, "default");
    let start = rv(&api.create(&PostParams::default(), &cm("w")).await.unwrap());
    let mut stream = api.watch(&WatchParams::default(), &start.to_string()).await.unwrap().boxed();
    let m = api.patch("w", &PatchParams::default(), &Patch::Merge(json!({"data": {"n": "1"}}))).await.unwrap();
    api.delete("w", &DeleteParams::default()).await.unwrap();
    let mut seen = Vec::new();
    while seen.len() < 2 {
        match tokio::time::timeout(Duration::from_secs(10), stream.try_next()).await.unwrap().unwrap() {
            Some(WatchEvent::Modified(o)) => seen.push(("MODIFIED", rv(&o))),
            Some(WatchEvent::Deleted(o)) => seen.push(("DELETED", rv(&o))),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(seen[0], ("MODIFIED", rv(&m)));
    assert_eq!(seen[1].0, "DELETED");
    assert!(seen[1].1 > seen[0].1);
    // Resuming from the MODIFIED revision replays exactly the DELETED event.
    let mut resumed = api.watch(&WatchParams::default().timeout(2), &rv(&m).to_string()).await.unwrap().boxed();
    let mut events = Vec::new();
    while let Some(ev) = resumed.try_next().await.unwrap() {
        events.push(ev);
    }
    assert_eq!(events.len(), 1, "{events:?}");
    assert!(matches!(events[0], WatchEvent::Deleted(_)));

    // sendInitialEvents: ADDED for what exists, then the initial-events-end bookmark.
    api.create(&PostParams::default(), &cm("init")).await.unwrap();
    let (code, _, body) = s
        .raw(http::Request::get("/api/v1/namespaces/default/configmaps?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1").body(vec![]).unwrap())
        .await;
    assert_eq!(code, 200);
    let text = body.as_str().map(str::to_string).unwrap_or_else(|| body.to_string());
    let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines[0]["type"], "ADDED");
    let end = lines.iter().find(|l| l["type"] == "BOOKMARK").expect("bookmark");
    assert_eq!(end["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
}

#[tokio::test]
async fn compaction_gives_410() {
    let s = TestServer::start(&["--history-retention", "1s"]).await;
    let api: Api<ConfigMap> = Api::namespaced(s.client().await, "default");
    let old = rv(&api.create(&PostParams::default(), &cm("a")).await.unwrap());
    api.create(&PostParams::default(), &cm("b")).await.unwrap();
    api.create(&PostParams::default(), &cm("c")).await.unwrap();
    let first = api.list(&ListParams::default().limit(1)).await.unwrap();
    api.create(&PostParams::default(), &cm("after-token")).await.unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    api.create(&PostParams::default(), &cm("d")).await.unwrap();
    let (code, body) = s.get_json(&format!("/api/v1/namespaces/default/configmaps?resourceVersionMatch=Exact&resourceVersion={old}")).await;
    assert_eq!((code, body["reason"].as_str()), (410, Some("Expired")));
    let token = first.metadata.continue_.unwrap();
    let (code, _) = s.get_json(&format!("/api/v1/namespaces/default/configmaps?limit=1&continue={token}")).await;
    assert_eq!(code, 410);
    let (code, _, body) = s.raw(http::Request::get(format!("/api/v1/namespaces/default/configmaps?watch=1&resourceVersion={old}")).body(vec![]).unwrap()).await;
    assert_eq!(code, 200);
    // A one-event stream parses as a single JSON document.
    let ev = match body.as_str() {
        Some(text) => serde_json::from_str(text.lines().next().unwrap()).unwrap(),
        None => body,
    };
    assert_eq!((ev["type"].as_str(), ev["object"]["code"].as_u64()), (Some("ERROR"), Some(410)));
}

#[tokio::test]
async fn error_codes_and_public_paths() {
    let s = TestServer::start(&[]).await;
    let post = |path: &str, ct: &str, body: Vec<u8>| http::Request::post(path.to_string()).header("content-type", ct).body(body).unwrap();
    // 413: nothing is written.
    let big = serde_json::to_vec(&json!({"metadata": {"name": "big"}, "data": {"k": "x".repeat(4 << 20)}})).unwrap();
    let (code, _, body) = s.raw(post("/api/v1/namespaces/default/configmaps", "application/json", big)).await;
    assert_eq!((code, body["reason"].as_str()), (413, Some("RequestEntityTooLarge")));
    assert_eq!(s.get_json("/api/v1/namespaces/default/configmaps/big").await.0, 404);
    // 415 and 406.
    let (code, _, _) = s.raw(post("/api/v1/namespaces/default/configmaps", "text/plain", b"x".to_vec())).await;
    assert_eq!(code, 415);
    let (code, _, body) = s.raw(http::Request::get("/api/v1/namespaces").header("accept", "text/html").body(vec![]).unwrap()).await;
    assert_eq!((code, body["kind"].as_str()), (406, Some("Status")));
    // 404 for an unknown resource and a missing object; 405 for POST on an object.
    let (code, body) = s.get_json("/api/v1/namespaces/default/widgets").await;
    assert_eq!((code, body["reason"].as_str()), (404, Some("NotFound")));
    let (code, body) = s.get_json("/api/v1/namespaces/default/configmaps/nope").await;
    assert_eq!((code, body["details"]["name"].as_str()), (404, Some("nope")));
    let (code, _, _) = s.raw(post("/api/v1/namespaces/default/configmaps/x", "application/json", b"{}".to_vec())).await;
    assert_eq!(code, 405);
    // Creating in a namespace that does not exist.
    let (code, _, _) = s.raw(post("/api/v1/namespaces/ghost/configmaps", "application/json", br#"{"metadata":{"name":"a"}}"#.to_vec())).await;
    assert_eq!(code, 404);
    // Strict field validation names the unknown field.
    let (code, _, body) = s.raw(post("/api/v1/namespaces/default/configmaps?fieldValidation=Strict", "application/json", br#"{"metadata":{"name":"a"},"bogus":1}"#.to_vec())).await;
    assert_eq!(code, 400);
    assert!(body["message"].as_str().unwrap().contains("unknown field \"bogus\""));

    let (_, version) = s.get_json("/version").await;
    assert_eq!(version["minor"], "34");
    let (_, core) = s.get_json("/api/v1").await;
    assert!(core["resources"].as_array().unwrap().iter().any(|r| r["name"] == "configmaps"));

    // Anonymous: health is public, the API is not.
    let ca = std::fs::read(s.path().join("pki/ca.crt")).unwrap();
    let anon = std::process::Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", s.path().join("pki/ca.crt").to_str().unwrap()])
        .arg(format!("https://127.0.0.1:{}/api", s.port))
        .output();
    if let Ok(out) = anon {
        assert!(!ca.is_empty());
        assert_eq!(String::from_utf8_lossy(&out.stdout), "403");
    }
}
