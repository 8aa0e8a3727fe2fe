//! API Priority and Fairness against the real binary: every response names the FlowSchema and
//! priority level its request was classified in; the leader keeps each schema's `Dangling`
//! condition; the levels' nominal seats are in /metrics.

mod common;

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
}
