//! API Priority and Fairness against the real binary: every response names the FlowSchema and
//! priority level its request was classified in; the leader keeps each schema's `Dangling`
//! condition; the levels' nominal seats are in /metrics.

use crate::common;

use std::time::{Duration, Instant};

use common::{send, TestServer};
use serde_json::{json, Value};

fn post(path: &str, body: Value) -> http::Request<Vec<u8>> {
    http::Request::post(path).header("content-type", "application/json").body(body.to_string().into_bytes()).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn requests_are_classified_by_flow_schemas() {
    let s = TestServer::start().await;
    let level = s
        .request(post(
            "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations",
            json!({"metadata": {"name": "e2e-level"}, "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 1, "limitResponse": {"type": "Reject"}}}}),
        ))
        .await
        .json();
    let schema = s
        .request(post(
            "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas",
            json!({"metadata": {"name": "e2e-schema"}, "spec": {"matchingPrecedence": 1000, "priorityLevelConfiguration": {"name": "e2e-level"},
                "distinguisherMethod": {"type": "ByUser"},
                "rules": [{"subjects": [{"kind": "User", "user": {"name": "noxu"}}], "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]}}),
        ))
        .await
        .json();

    // The leader marks the schema as not dangling.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got = s.get("/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/e2e-schema").await.json();
        if got["status"]["conditions"].as_array().is_some_and(|c| c.iter().any(|c| c["type"] == "Dangling" && c["status"] == "False")) {
            break;
        }
        assert!(Instant::now() < deadline, "no Dangling condition: {got}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let metrics = s.kubectl_ok(&["get", "--raw", "/metrics"]);
    assert!(metrics.contains("apiserver_flowcontrol_nominal_limit_seats{priority_level=\"e2e-level\"} 3"), "{metrics}");

    let version_as = |user: &'static str| {
        let s = &s;
        async move {
            let client = s.impersonating_client(user, &["system:authenticated"]).await;
            send(&client, http::Request::get("/version").body(vec![]).unwrap()).await
        }
    };
    let matched = version_as("noxu").await;
    assert_eq!(matched.headers["x-kubernetes-pf-flowschema-uid"], schema["metadata"]["uid"].as_str().unwrap());
    assert_eq!(matched.headers["x-kubernetes-pf-prioritylevel-uid"], level["metadata"]["uid"].as_str().unwrap());
    let other = version_as("foo").await;
    let global = s.get("/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/global-default").await.json();
    assert_eq!(other.headers["x-kubernetes-pf-flowschema-uid"], global["metadata"]["uid"].as_str().unwrap());
    // The admin is exempt, refusals are classified too.
    let exempt = s.get("/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/exempt").await;
    assert_eq!(exempt.headers["x-kubernetes-pf-flowschema-uid"], exempt.json()["metadata"]["uid"].as_str().unwrap());
    let refused = send(&s.impersonating_client("foo", &[]).await, http::Request::get("/api/v1/secrets").body(vec![]).unwrap()).await;
    assert_eq!(refused.status, 403);
    assert!(refused.headers.contains_key("x-kubernetes-pf-prioritylevel-uid"));

    // A schema naming a level that does not exist is dangling.
    s.request(post(
        "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas",
        json!({"metadata": {"name": "lost"}, "spec": {"matchingPrecedence": 500, "priorityLevelConfiguration": {"name": "nowhere"}, "rules": []}}),
    ))
    .await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got = s.get("/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/lost").await.json();
        if got["status"]["conditions"].as_array().is_some_and(|c| c.iter().any(|c| c["type"] == "Dangling" && c["status"] == "True" && c["reason"] == "NotFound")) {
            break;
        }
        assert!(Instant::now() < deadline, "not dangling: {got}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Once the level exists, the schema no longer dangles (the controller follows levels too).
    s.request(post(
        "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations",
        json!({"metadata": {"name": "nowhere"}, "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 1, "limitResponse": {"type": "Reject"}}}}),
    ))
    .await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got = s.get("/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/lost").await.json();
        if got["status"]["conditions"].as_array().is_some_and(|c| c.iter().any(|c| c["type"] == "Dangling" && c["status"] == "False" && c["reason"] == "Found")) {
            break;
        }
        assert!(Instant::now() < deadline, "still dangling: {got}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits (up to 2 s) until `level`'s row of the APF dump shows `expected` active queues, waiting
/// and executing requests. Polled in process: the slow lists hold their seats for 3 s only, too
/// short for a kubectl process per poll on a loaded machine.
async fn level_reaches(s: &TestServer, level: &str, expected: (&str, &str, &str)) {
    let deadline = Instant::now() + Duration::from_secs(2);
    let prefix = format!("{level},");
    loop {
        let levels = s.get("/debug/api_priority_and_fairness/dump_priority_levels").await.text();
        let row: Vec<&str> = levels.lines().find(|l| l.starts_with(&prefix)).unwrap_or_default().split(',').map(str::trim).collect();
        if row.len() > 5 && (row[1], row[4], row[5]) == expected {
            return;
        }
        assert!(Instant::now() < deadline, "active queues, waiting, executing not {expected:?}:\n{levels}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A list that waits for a revision far ahead: it holds its seat for the server's wait (3 s),
/// then answers 504.
fn slow_list() -> http::Request<Vec<u8>> {
    http::Request::get("/api/v1/namespaces/default/configmaps?resourceVersion=999999999&resourceVersionMatch=NotOlderThan").body(vec![]).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_level_queues_then_refuses_with_429() {
    // 2 seats for the whole server: every limited level gets one.
    let s = TestServer::start_with(&["--max-requests-inflight", "1", "--max-mutating-requests-inflight", "1"]).await;
    s.request(post(
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        json!({"metadata": {"name": "flood-view"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
               "subjects": [{"kind": "User", "name": "flood", "apiGroup": "rbac.authorization.k8s.io"}]}),
    ))
    .await;
    s.request(post(
        "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations",
        json!({"metadata": {"name": "tiny"}, "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 1,
            "limitResponse": {"type": "Queue", "queuing": {"queues": 1, "handSize": 1, "queueLengthLimit": 1}}}}}),
    ))
    .await;
    let schema = s
        .request(post(
            "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas",
            json!({"metadata": {"name": "flood"}, "spec": {"matchingPrecedence": 100, "priorityLevelConfiguration": {"name": "tiny"},
                "distinguisherMethod": {"type": "ByUser"},
                "rules": [{"subjects": [{"kind": "User", "user": {"name": "flood"}}],
                           "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["*"], "clusterScope": true}]}]}}),
        ))
        .await
        .json();
    let flood = s.impersonating_client("flood", &["system:authenticated"]).await;

    // One runs, one waits in the only queue, the third finds it full. Each step waits until the
    // level shows the one before (the first holds its seat for the server's 3 s wait).
    let running = tokio::spawn({
        let flood = flood.clone();
        async move { send(&flood, slow_list()).await }
    });
    level_reaches(&s, "tiny", ("0", "0", "1")).await;
    let waiting = tokio::spawn({
        let flood = flood.clone();
        async move { send(&flood, slow_list()).await }
    });
    level_reaches(&s, "tiny", ("1", "1", "1")).await;
    let requests = s.get("/debug/api_priority_and_fairness/dump_requests?includeRequestDetails=1").await.text();
    assert_eq!(requests.lines().filter(|l| l.starts_with("tiny,") && l.contains("flood")).count(), 2, "{requests}");

    let refused = send(&flood, slow_list()).await;
    let status = refused.expect_status(429, "TooManyRequests");
    assert_eq!(status["message"], "Too many requests, please try again later.");
    assert_eq!(refused.headers["retry-after"], "1");
    assert_eq!(refused.headers["x-kubernetes-pf-flowschema-uid"], schema["metadata"]["uid"].as_str().unwrap());

    // The exempt admin is not held up meanwhile.
    let started = Instant::now();
    assert_eq!(s.get("/api/v1/namespaces").await.status, 200);
    assert!(started.elapsed() < Duration::from_secs(1), "{:?}", started.elapsed());

    // Both queued requests run in turn (each waits out its revision: 504).
    assert_eq!(running.await.unwrap().status, 504);
    assert_eq!(waiting.await.unwrap().status, 504);
    let metrics = s.kubectl_ok(&["get", "--raw", "/metrics"]);
    for line in [
        "apiserver_flowcontrol_rejected_requests_total{flow_schema=\"flood\",priority_level=\"tiny\",reason=\"queue-full\"} 1",
        "apiserver_flowcontrol_dispatched_requests_total{flow_schema=\"flood\",priority_level=\"tiny\"} 2",
        "apiserver_flowcontrol_current_executing_requests{flow_schema=\"flood\",priority_level=\"tiny\"} 0",
    ] {
        assert!(metrics.contains(line), "no {line} in:\n{metrics}");
    }

    // A level that rejects instead of queuing refuses at once.
    s.request(post(
        "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations",
        json!({"metadata": {"name": "strict"}, "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 1, "limitResponse": {"type": "Reject"}}}}),
    ))
    .await;
    let patch = json!({"spec": {"priorityLevelConfiguration": {"name": "strict"}}});
    let req = http::Request::patch("/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/flood")
        .header("content-type", "application/merge-patch+json")
        .body(patch.to_string().into_bytes())
        .unwrap();
    assert_eq!(s.request(req).await.status, 200);
    let running = tokio::spawn({
        let flood = flood.clone();
        async move { send(&flood, slow_list()).await }
    });
    level_reaches(&s, "strict", ("0", "0", "1")).await;
    send(&flood, slow_list()).await.expect_status(429, "TooManyRequests");
    assert_eq!(running.await.unwrap().status, 504);
    let metrics = s.kubectl_ok(&["get", "--raw", "/metrics"]);
    let line = "apiserver_flowcontrol_rejected_requests_total{flow_schema=\"flood\",priority_level=\"strict\",reason=\"concurrency-limit\"} 1";
    assert!(metrics.contains(line), "no {line} in:\n{metrics}");
}

#[tokio::test(flavor = "multi_thread")]
async fn without_apf_the_max_in_flight_limits_apply() {
    let s = TestServer::start_with(&["--enable-priority-and-fairness=false", "--max-requests-inflight", "1"]).await;
    s.request(post(
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        json!({"metadata": {"name": "reader-view"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
               "subjects": [{"kind": "User", "name": "reader", "apiGroup": "rbac.authorization.k8s.io"}]}),
    ))
    .await;
    let reader = s.impersonating_client("reader", &["system:authenticated"]).await;
    let running = tokio::spawn({
        let reader = reader.clone();
        async move { send(&reader, slow_list()).await }
    });
    let deadline = Instant::now() + Duration::from_secs(2);
    while !s.get("/metrics").await.text().contains("apiserver_current_inflight_requests{request_kind=\"readOnly\"} 1") {
        assert!(Instant::now() < deadline, "the slow list never took its seat");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let refused = send(&reader, slow_list()).await;
    refused.expect_status(429, "TooManyRequests");
    assert!(!refused.headers.contains_key("x-kubernetes-pf-flowschema-uid"));
    // system:masters is not limited; the mutating pool is apart.
    assert_eq!(s.get("/api/v1/namespaces").await.status, 200);
    let metrics = s.kubectl_ok(&["get", "--raw", "/metrics"]);
    assert!(metrics.contains("apiserver_current_inflight_requests{request_kind=\"readOnly\"} 1"), "{metrics}");
    assert_eq!(running.await.unwrap().status, 504);
    assert_eq!(s.get("/debug/api_priority_and_fairness/dump_priority_levels").await.status, 404);
}
