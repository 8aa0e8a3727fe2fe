//! OpenTelemetry traces (`--tracing-config-file`): a write that arrives on a follower is one
//! trace across the three replicas, received by a real OTLP/gRPC receiver with every parent link
//! intact; a privileged client's `traceparent` is honoured, anyone else's only linked.

use crate::common;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use common::cluster::cluster_with;
use common::otlp_receiver::{OtlpReceiver, Received};
use common::{configmap, send, TestServer};

/// A `traceparent` of a sampled span the test's client pretends to be in.
fn traceparent(trace_id: &str, parent: &str) -> String {
    format!("00-{trace_id}-{parent}-01")
}

fn create_configmap(name: &str, traceparent: &str) -> http::Request<Vec<u8>> {
    http::Request::post("/api/v1/namespaces/default/configmaps")
        .header("content-type", "application/json")
        .header("traceparent", traceparent)
        .body(serde_json::to_vec(&configmap(name, &[])).unwrap())
        .unwrap()
}

/// The spans of `trace_id` once `done` holds of them (within 15 s).
async fn trace_of(receiver: &OtlpReceiver, trace_id: &str, done: impl Fn(&[Received]) -> bool) -> Vec<Received> {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let spans: Vec<Received> = receiver.spans().into_iter().filter(|s| s.trace_id == trace_id).collect();
        if done(&spans) {
            return spans;
        }
        assert!(Instant::now() < deadline, "the trace is incomplete: {:#?}", spans.iter().map(|s| (&s.instance, &s.name)).collect::<Vec<_>>());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn leader_id(text: &str) -> usize {
    let line = text.lines().find(|l| l.starts_with("apiserver_raft_leader_id ")).expect("the leader gauge");
    line.rsplit(' ').next().unwrap().parse::<f64>().unwrap() as usize
}

/// The one span named `name` that `instance` sent.
fn one<'a>(spans: &'a [Received], instance: &str, name: &str) -> &'a Received {
    let found: Vec<&Received> = spans.iter().filter(|s| s.instance == instance && s.name == name).collect();
    assert_eq!(found.len(), 1, "{instance} sent {} spans named {name:?}", found.len());
    found[0]
}

#[tokio::test]
async fn a_write_through_a_follower_is_one_trace_across_the_three_replicas() {
    let receiver = OtlpReceiver::start().await;
    let dir = tempfile::tempdir().unwrap();
    // Nothing sampled by rate: only what a privileged client asks for is traced.
    let config = receiver.config_file(dir.path(), 0);
    let nodes = cluster_with(&["--tracing-config-file", config.to_str().unwrap()]).await;
    let leader = leader_id(&nodes[0].get("/metrics").await.text());
    let follower: &TestServer = nodes.iter().find(|n| n.flag("--node-id") != leader.to_string()).unwrap();
    let (follower_node, leader_node) = (format!("node-{}", follower.flag("--node-id")), format!("node-{leader}"));

    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let client_span = "00f067aa0ba902b7";
    let reply = follower.request(create_configmap("traced", &traceparent(trace_id, client_span))).await;
    assert_eq!(reply.status, 201, "{}", reply.text());

    let names_on = |spans: &[Received], node: &str| spans.iter().filter(|s| s.instance == node).map(|s| s.name.clone()).collect::<HashSet<_>>();
    let spans = trace_of(&receiver, trace_id, |spans| {
        (1..=3).all(|n| ["raft.append", "raft.apply", "watch.fanout"].iter().all(|s| names_on(spans, &format!("node-{n}")).contains(*s)))
            && names_on(spans, &follower_node).contains("POST /api/v1/namespaces/{:namespace}/configmaps")
            && names_on(spans, &leader_node).contains("raft.propose")
    })
    .await;
    assert!(spans.iter().all(|s| s.service == "apiserver"), "every span's service is apiserver");

    // The request on the follower, under the client's span, and its stages under it.
    let root = one(&spans, &follower_node, "POST /api/v1/namespaces/{:namespace}/configmaps");
    assert_eq!(root.parent_id, client_span, "the client's traceparent is the request's parent");
    assert_eq!(root.attributes["http.target"], "/api/v1/namespaces/default/configmaps");
    assert_eq!(root.attributes["http.response.status_code"], "201");
    for stage in ["authentication", "priorityandfairness", "authorization", "Create"] {
        assert_eq!(one(&spans, &follower_node, stage).parent_id, root.span_id, "{stage} is a stage of the request");
    }
    let handler = one(&spans, &follower_node, "Create");
    assert_eq!((handler.attributes["resource"].as_str(), handler.attributes["namespace"].as_str(), handler.attributes["verb"].as_str()), ("configmaps", "default", "POST"));
    for child in ["admission.mutate", "admission.validate", "Create etcd3"] {
        assert_eq!(one(&spans, &follower_node, child).parent_id, handler.span_id, "{child} is the handler's");
    }
    // The write: forwarded by the follower, proposed by the leader, appended and applied by all.
    let forward = one(&spans, &follower_node, "raft.forward");
    assert_eq!(forward.parent_id, one(&spans, &follower_node, "Create etcd3").span_id);
    let propose = one(&spans, &leader_node, "raft.propose");
    assert_eq!(propose.parent_id, forward.span_id, "the leader's proposal continues the follower's forward");
    let index = &propose.attributes["raft.index"];
    for n in 1..=3 {
        let node = format!("node-{n}");
        for stage in ["raft.append", "raft.apply", "watch.fanout"] {
            let span = one(&spans, &node, stage);
            assert_eq!(span.parent_id, propose.span_id, "{node}'s {stage} is the proposal's");
        }
        assert_eq!(&one(&spans, &node, "raft.append").attributes["raft.index"], index);
    }
    // Every parent is in the trace, but the client's own span.
    let ids: HashSet<&str> = spans.iter().map(|s| s.span_id.as_str()).collect();
    for s in &spans {
        assert!(s.parent_id == client_span || ids.contains(s.parent_id.as_str()), "{} on {} has a parent outside the trace", s.name, s.instance);
    }
    // No credential in any attribute.
    for s in &spans {
        for (k, v) in &s.attributes {
            assert!(!k.to_lowercase().contains("authorization") && !v.contains("Bearer") && !v.contains("PRIVATE KEY"), "{k}={v} in {}", s.name);
        }
    }
    // Counted once the receiver has answered the export (a moment after it holds the spans).
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let metrics = follower.get("/metrics").await.text();
        if metrics.lines().any(|l| l.starts_with("apiserver_tracing_spans_total{result=\"exported\"}") && !l.ends_with(" 0")) {
            break;
        }
        assert!(Instant::now() < deadline, "exported spans are not counted");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // An unprivileged client's traceparent does not make the server trace: at a rate of zero,
    // nothing of its trace is exported.
    let user = follower.kubeconfig_for("alice", &["developers"]);
    let other_trace = "5bf92f3577b34da6a3ce929d0e0e4737";
    let reply = send(&follower.client_for(&user).await, create_configmap("untraced", &traceparent(other_trace, client_span))).await;
    assert_eq!(reply.status, 403, "{}", reply.text());
    let marker = "6bf92f3577b34da6a3ce929d0e0e4738";
    follower.request(create_configmap("marker", &traceparent(marker, client_span))).await;
    trace_of(&receiver, marker, |spans| spans.iter().any(|s| s.name == "watch.fanout" && s.instance == follower_node)).await;
    let leaked: Vec<_> = receiver.spans().into_iter().filter(|s| s.trace_id == other_trace).map(|s| (s.instance, s.name)).collect();
    assert!(leaked.is_empty(), "an unprivileged client's trace was continued: {leaked:?}");
}

#[tokio::test]
async fn sampled_by_rate_and_an_unreachable_receiver_never_holds_a_request() {
    // Every request sampled, the receiver gone: requests are answered as usual, the spans
    // counted as failed (or dropped once the queue is full).
    let dir = tempfile::tempdir().unwrap();
    let receiver = OtlpReceiver::start().await;
    let config = receiver.config_file(dir.path(), 1_000_000);
    drop(receiver);
    let server = TestServer::start_with(&["--tracing-config-file", config.to_str().unwrap()]).await;
    let started = Instant::now();
    for i in 0..20 {
        let reply = server.request(create_configmap(&format!("cm-{i}"), "")).await;
        assert_eq!(reply.status, 201, "{}", reply.text());
    }
    assert!(started.elapsed() < Duration::from_secs(10), "requests were held: {:?}", started.elapsed());
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = server.get("/metrics").await.text();
        let lost: f64 = text
            .lines()
            .filter(|l| l.starts_with("apiserver_tracing_spans_total{result=\"failed\"}") || l.starts_with("apiserver_tracing_spans_total{result=\"dropped\"}"))
            .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
            .sum();
        if lost > 0.0 {
            break;
        }
        assert!(Instant::now() < deadline, "no span was counted as lost:\n{}", text.lines().filter(|l| l.contains("tracing")).collect::<Vec<_>>().join("\n"));
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
