//! The audit log (`--audit-policy-file`, `--audit-log-path`): the policy's first matching rule
//! decides what is recorded, events are `audit.k8s.io/v1` JSON lines naming the user, whom they
//! impersonated, the object, the answer and the authorizer's decision, with the request and
//! response at their levels, what a ValidatingAdmissionPolicy audits and admission webhooks'
//! audit annotations; every response
//! carries its `Audit-Id`; a deprecated API's use is annotated `k8s.io/deprecated` and counted in
//! `apiserver_requested_deprecated_apis`; the log rotates by size and keeps as many files as told;
//! a webhook gets the events in batches, and one that hangs slows no request.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::webhook_server::WebhookServer;
use common::TestServer;
use serde_json::{json, Value};

const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  nonResourceURLs: ["/healthz*", "/readyz*", "/livez*", "/version", "/api*", "/openapi*"]
- level: RequestResponse
  omitManagedFields: true
  resources: [{group: "", resources: ["configmaps"]}]
  namespaces: ["audited"]
- level: Metadata
"#;

/// A server auditing by `policy` into a log in `scratch`; the log's path and the server.
async fn audited(scratch: &Path, policy: &str) -> (PathBuf, TestServer) {
    let (policy_file, log) = (scratch.join("policy.yaml"), scratch.join("audit.log"));
    std::fs::write(&policy_file, policy).unwrap();
    let s = TestServer::start_with(&["--audit-policy-file", policy_file.to_str().unwrap(), "--audit-log-path", log.to_str().unwrap()]).await;
    (log, s)
}

/// The events written so far, once `done` holds for them (they are written by a thread).
async fn events_until(log: &Path, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        // A line still being written has no newline yet.
        let whole = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
        let events: Vec<Value> = whole.lines().map(|l| serde_json::from_str(l).expect("an event is one JSON line")).collect();
        if done(&events) || Instant::now() > deadline {
            return events;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn find<'a>(events: &'a [Value], verb: &str, resource: &str, name: &str) -> Option<&'a Value> {
    events.iter().find(|e| e["verb"] == verb && e["objectRef"]["resource"] == resource && e["objectRef"]["name"].as_str().unwrap_or("") == name && e["stage"] == "ResponseComplete")
}

#[tokio::test]
async fn audited_requests_are_written_as_kubernetes_events() {
    let scratch = tempfile::tempdir().unwrap();
    let (log, s) = audited(scratch.path(), POLICY).await;

    // Every response names its audit ID; one the client chose is kept.
    let reply = s.request(http::Request::get("/api/v1/namespaces/default/configmaps").body(vec![]).unwrap()).await;
    let id = reply.headers.get("audit-id").expect("Audit-Id header").to_str().unwrap().to_string();
    assert_eq!(id.len(), 36, "{id}");
    let chosen = s.request(http::Request::get("/api/v1/namespaces/default/secrets").header("Audit-ID", "my-trace-1").body(vec![]).unwrap()).await;
    assert_eq!(chosen.headers.get("audit-id").unwrap(), "my-trace-1");

    // Metadata level: who, what, the answer, the decision; no objects.
    s.kubectl_ok(&["create", "namespace", "audited"]);
    s.kubectl_ok(&["create", "configmap", "plain", "-n", "default", "--from-literal=k=v"]);
    // RequestResponse level (and managed fields left out, as the rule says).
    s.kubectl_ok(&["create", "configmap", "full", "-n", "audited", "--from-literal=k=v"]);
    // Refused: a user with no rights.
    let nobody = s.kubeconfig_for("nobody", &[]);
    let out = s.kubectl_as(&nobody, &["get", "secret", "s1", "-n", "default"]);
    assert!(!out.status.success());
    // Impersonation: the admin acting as alice; nobody trying to act as alice.
    s.kubectl(&["get", "configmap", "plain", "-n", "default", "--as", "alice"]);
    assert!(!s.kubectl_as(&nobody, &["get", "configmap", "as-alice", "-n", "default", "--as", "alice"]).status.success());
    // A token nobody issued: 401, audited without a user.
    let stranger = s.token_kubeconfig("stranger", "not-a-token-anyone-issued");
    assert!(!s.kubectl_as(&stranger, &["get", "configmap", "unauthenticated", "-n", "default"]).status.success());

    let unauthenticated = |e: &Value| e["objectRef"]["name"] == "unauthenticated";
    let events = events_until(&log, |e| find(e, "get", "configmaps", "plain").is_some() && find(e, "get", "configmaps", "as-alice").is_some() && e.iter().any(unauthenticated)).await;
    assert!(events.iter().all(|e| e["apiVersion"] == "audit.k8s.io/v1" && e["kind"] == "Event"));
    assert!(events.iter().all(|e| e["stage"] != "RequestReceived"), "an omitted stage was written");
    assert!(events.iter().all(|e| e["requestURI"] != "/version" && !e["requestURI"].as_str().unwrap().starts_with("/readyz")), "a None rule was audited");
    let listed = events.iter().find(|e| e["auditID"] == id.as_str()).expect("the event of the first request");
    assert_eq!((listed["verb"].as_str(), listed["level"].as_str()), (Some("list"), Some("Metadata")));
    assert_eq!(events.iter().find(|e| e["auditID"] == "my-trace-1").map(|e| e["objectRef"]["resource"].clone()), Some(json!("secrets")));

    let plain = find(&events, "create", "configmaps", "plain").unwrap_or_else(|| panic!("create in default: {:?}", events.iter().filter(|e| e["verb"] == "create").collect::<Vec<_>>()));
    assert_eq!(plain["level"], "Metadata");
    assert_eq!(plain["responseStatus"]["code"], 201);
    assert_eq!(plain["user"]["username"], "kubernetes-admin");
    assert!(plain["user"]["groups"].as_array().unwrap().contains(&json!("system:masters")));
    assert_eq!(plain["objectRef"], json!({"resource": "configmaps", "namespace": "default", "name": "plain", "apiVersion": "v1"}));
    assert_eq!(plain["annotations"]["authorization.k8s.io/decision"], "allow");
    assert!(plain["userAgent"].as_str().unwrap().starts_with("kubectl"), "{plain}");
    assert!(plain["sourceIPs"].as_array().unwrap().contains(&json!("127.0.0.1")));
    assert!(plain.get("requestObject").is_none() && plain.get("responseObject").is_none());

    let full = find(&events, "create", "configmaps", "full").expect("create in audited");
    assert_eq!(full["level"], "RequestResponse");
    assert_eq!(full["requestObject"]["data"]["k"], "v");
    assert_eq!(full["responseObject"]["metadata"]["name"], "full");
    // The replica that served it, and the revision the write became.
    assert_eq!(full["annotations"]["apiserver/replica"], "node-1", "{full}");
    assert_eq!(full["annotations"]["apiserver/resource-version"], full["responseObject"]["metadata"]["resourceVersion"], "{full}");
    assert!(plain["annotations"]["apiserver/resource-version"].as_str().is_some_and(|rv| rv.parse::<u64>().is_ok()), "{plain}");
    assert!(full["responseObject"]["metadata"]["uid"].is_string());
    assert!(full["responseObject"]["metadata"].get("managedFields").is_none(), "{full}");

    let refused = find(&events, "get", "secrets", "s1").unwrap();
    assert_eq!(refused["user"]["username"], "nobody");
    assert_eq!(refused["responseStatus"]["code"], 403);
    assert_eq!(refused["responseStatus"]["reason"], "Forbidden");
    assert_eq!(refused["responseStatus"]["status"], "Failure");
    assert_eq!(refused["annotations"]["authorization.k8s.io/decision"], "forbid");
    assert_eq!(refused["annotations"]["apiserver/replica"], "node-1");
    assert!(refused["annotations"].get("apiserver/resource-version").is_none(), "a read became no revision: {refused}");

    let impersonated = find(&events, "get", "configmaps", "plain").unwrap();
    assert_eq!(impersonated["user"]["username"], "kubernetes-admin");
    assert_eq!(impersonated["impersonatedUser"]["username"], "alice");
    assert_eq!(impersonated["responseStatus"]["code"], 403, "alice has no rights: {impersonated}");
    // Impersonation refused: the caller is recorded, with the 403.
    let refused_impersonation = find(&events, "get", "configmaps", "as-alice").unwrap();
    assert_eq!(refused_impersonation["user"]["username"], "nobody");
    assert_eq!(refused_impersonation["responseStatus"]["code"], 403);
    assert!(refused_impersonation.get("impersonatedUser").is_none(), "{refused_impersonation}");
    // Failed authentication: one event, at ResponseStarted, with the 401 and no user.
    let failed: Vec<&Value> = events.iter().filter(|e| unauthenticated(e)).collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!((failed[0]["stage"].as_str(), failed[0]["responseStatus"]["code"].as_u64()), (Some("ResponseStarted"), Some(401)), "{:?}", failed[0]);
    assert_eq!(failed[0]["user"]["username"], "", "{:?}", failed[0]);
    for e in &events {
        let (received, stage) = (e["requestReceivedTimestamp"].as_str().unwrap(), e["stageTimestamp"].as_str().unwrap());
        assert!(received.ends_with('Z') && received.len() == 27 && received <= stage, "{e}");
    }
}

#[tokio::test]
async fn a_watch_is_audited_when_it_starts_and_when_it_ends() {
    let scratch = tempfile::tempdir().unwrap();
    // Only ConfigMap watches: the server's own controllers watch other kinds through its
    // loopback client, and those are audited too.
    let (log, s) = audited(scratch.path(), "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  verbs: [watch]\n  resources: [{group: \"\", resources: [configmaps]}]\n").await;
    let reply = s.request(http::Request::get("/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1").body(vec![]).unwrap()).await;
    assert_eq!(reply.status, 200);
    let events = events_until(&log, |e| e.iter().any(|e| e["stage"] == "ResponseComplete")).await;
    let stages: Vec<&str> = events.iter().map(|e| e["stage"].as_str().unwrap()).collect();
    assert_eq!(stages, ["RequestReceived", "ResponseStarted", "ResponseComplete"], "{events:?}");
    assert!(events.iter().all(|e| e["verb"] == "watch" && e["auditID"] == events[0]["auditID"]));
}

#[tokio::test]
async fn a_validating_policy_s_audit_action_and_annotations_are_recorded_in_the_event() {
    let scratch = tempfile::tempdir().unwrap();
    let (log, s) = audited(scratch.path(), "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  resources: [{group: \"\", resources: [configmaps]}]\n").await;
    let manifests = scratch.path().join("policy-objects.yaml");
    std::fs::write(
        &manifests,
        r#"apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: small-maps}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]
  validations:
  - expression: "!has(object.data) || size(object.data) < 2"
    message: too many keys
  auditAnnotations:
  - key: created
    valueExpression: "'configmap ' + object.metadata.name"
  - key: never
    valueExpression: "null"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: small-maps-audit}
spec:
  policyName: small-maps
  validationActions: [Audit]
"#,
    )
    .unwrap();
    s.kubectl_ok(&["apply", "-f", manifests.to_str().unwrap()]);
    // The policy is compiled on apply; allow it a moment to take effect.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut n = 0;
    loop {
        n += 1;
        let name = format!("big-{n}");
        s.kubectl_ok(&["create", "configmap", &name, "-n", "default", "--from-literal=a=1", "--from-literal=b=2"]);
        let events = events_until(&log, |e| find(e, "create", "configmaps", &name).is_some()).await;
        let event = find(&events, "create", "configmaps", &name).unwrap();
        let audited = event["annotations"]["validation.policy.admission.k8s.io/validation_failure"].as_str().map(|v| serde_json::from_str::<Value>(v).unwrap());
        if let Some(failures) = audited {
            // The policy's own annotations, keyed by its name; one whose value is null is left out.
            assert_eq!(event["annotations"]["small-maps/created"], format!("configmap {name}"), "{event}");
            assert!(event["annotations"].get("small-maps/never").is_none(), "{event}");
            assert_eq!(failures[0]["message"], "too many keys");
            assert_eq!(failures[0]["policy"], "small-maps");
            assert_eq!(failures[0]["binding"], "small-maps-audit");
            assert_eq!(failures[0]["validationActions"], json!(["Audit"]));
            break;
        }
        assert!(Instant::now() < deadline, "no validation failure was audited: {events:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Audit alone refuses nothing.
    assert!(s.kubectl_ok(&["get", "configmaps", "-n", "default"]).contains("big-1"));
}

// The webhook answers from this runtime while kubectl blocks the test's thread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admission_webhook_s_audit_annotations_are_recorded_under_its_name() {
    let scratch = tempfile::tempdir().unwrap();
    let (log, s) = audited(scratch.path(), "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  resources: [{group: \"\", resources: [configmaps]}]\n").await;
    // Allows everything, and says so in its audit annotations; refuses a `forbidden` key.
    let webhook = WebhookServer::start(Arc::new(|review: &Value| {
        let request = &review["request"];
        let allowed = request["object"]["data"].get("forbidden").is_none();
        let response = json!({"uid": request["uid"], "allowed": allowed, "auditAnnotations": {"checked": format!("data keys {}", request["object"]["data"].as_object().map_or(0, |d| d.len()))}});
        (Duration::ZERO, 200, json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}))
    }))
    .await;
    let configuration = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "checks"},
        "webhooks": [{
            "name": "check.example.com",
            "clientConfig": {"url": webhook.url, "caBundle": webhook.ca_bundle()},
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}],
            "sideEffects": "None", "admissionReviewVersions": ["v1"],
        }],
    });
    let path = scratch.path().join("webhook.json");
    std::fs::write(&path, configuration.to_string()).unwrap();
    s.kubectl_ok(&["apply", "-f", path.to_str().unwrap()]);
    // The configuration takes effect as it is applied; allow it a moment on a slow machine.
    let deadline = Instant::now() + Duration::from_secs(5);
    while webhook.received().is_empty() {
        let out = s.kubectl(&["create", "configmap", "probe", "--from-literal=a=1"]);
        assert!(Instant::now() < deadline, "the webhook was never called: {}", String::from_utf8_lossy(&out.stderr));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    s.kubectl_ok(&["create", "configmap", "checked", "--from-literal=a=1", "--from-literal=b=2"]);
    let refused = s.kubectl(&["create", "configmap", "refused", "--from-literal=forbidden=1"]);
    assert!(!refused.status.success());
    let events = events_until(&log, |e| find(e, "create", "configmaps", "checked").is_some() && find(e, "create", "configmaps", "refused").is_some()).await;
    let checked = find(&events, "create", "configmaps", "checked").unwrap();
    assert_eq!(checked["annotations"]["check.example.com/checked"], "data keys 2", "{checked}");
    let refused = find(&events, "create", "configmaps", "refused").unwrap();
    assert_eq!(refused["responseStatus"]["code"], 400, "{refused}");
    assert_eq!(refused["annotations"]["check.example.com/checked"], "data keys 1", "kept for a refusal too: {refused}");
}

#[tokio::test]
async fn a_deprecated_api_is_warned_about_audited_and_counted() {
    let scratch = tempfile::tempdir().unwrap();
    let (log, s) = audited(scratch.path(), POLICY).await;
    let reply = s.get("/api/v1/namespaces/default/endpoints").await;
    assert_eq!(reply.status, 200);
    let warning = reply.headers.get("warning").map(|v| v.to_str().unwrap().to_string()).unwrap_or_default();
    assert_eq!(warning, r#"299 - "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice""#);
    let events = events_until(&log, |events| find(events, "list", "endpoints", "").is_some()).await;
    let event = find(&events, "list", "endpoints", "").expect("the list of endpoints audited");
    assert_eq!(event["annotations"]["k8s.io/deprecated"], "true", "{event}");
    let metrics = s.get("/metrics").await.text();
    assert!(
        metrics.contains(r#"apiserver_requested_deprecated_apis{group="",removed_release="",resource="endpoints",subresource="",version="v1"} 1"#),
        "{metrics}"
    );
    // An API that is not deprecated is neither.
    s.get("/api/v1/namespaces/default/configmaps").await;
    let metrics = s.get("/metrics").await.text();
    assert!(!metrics.contains(r#"apiserver_requested_deprecated_apis{group="",removed_release="",resource="configmaps""#), "{metrics}");
}

#[tokio::test]
async fn the_log_rotates_past_its_size_and_keeps_the_newest_files() {
    let scratch = tempfile::tempdir().unwrap();
    let (policy, log) = (scratch.path().join("policy.yaml"), scratch.path().join("audit.log"));
    std::fs::write(&policy, "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: RequestResponse\n  resources: [{group: \"\", resources: [configmaps]}]\n").unwrap();
    let args = ["--audit-policy-file", policy.to_str().unwrap(), "--audit-log-path", log.to_str().unwrap(), "--audit-log-maxsize", "1", "--audit-log-maxbackup", "2"];
    let s = TestServer::start_with(&args).await;
    // About 200 KB an event (the object in the request and in the response): 6 MB in all.
    let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> = kube::Api::namespaced(s.client(), "default");
    let mut cm = common::configmap("big", &[]);
    for i in 0..30 {
        cm.metadata.name = Some(format!("big-{i}"));
        cm.data = Some([("payload".to_string(), format!("{i}").repeat(100_000 / format!("{i}").len()))].into());
        api.create(&Default::default(), &cm).await.unwrap();
    }
    let files = |dir: &Path| {
        let mut names: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).filter(|n| n.starts_with("audit")).collect();
        names.sort();
        names
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    let last = loop {
        let events = events_until(&log, |_| true).await;
        if let Some(last) = find(&events, "create", "configmaps", "big-29") {
            break last.clone();
        }
        assert!(Instant::now() < deadline, "the last create never reached the current file: {:?}", files(scratch.path()));
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(last["responseObject"]["metadata"]["name"], "big-29");
    // The current file and the two newest rotated ones, named by their time.
    let names = files(scratch.path());
    assert_eq!(names.len(), 3, "{names:?}");
    for rotated in &names[..2] {
        let stamp = rotated.strip_prefix("audit-").and_then(|r| r.strip_suffix(".log")).unwrap_or_else(|| panic!("{rotated}"));
        assert!(chrono::NaiveDateTime::parse_from_str(stamp, "%Y-%m-%dT%H-%M-%S%.3f").is_ok(), "{rotated}");
    }
    // Each file at most 1 MiB, of whole events; together the newest creates, in order.
    let mut created = Vec::new();
    for name in &names {
        let text = std::fs::read_to_string(scratch.path().join(name)).unwrap();
        assert!(text.len() <= 1 << 20, "{name}: {} bytes", text.len());
        for line in text.lines() {
            let event: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{name}: a broken event: {e}"));
            if event["verb"] == "create" {
                created.push(event["objectRef"]["name"].as_str().unwrap().trim_start_matches("big-").parse::<u32>().unwrap());
            }
        }
    }
    assert!(created.len() >= 8 && created.windows(2).all(|w| w[1] == w[0] + 1) && created.last() == Some(&29), "{created:?}");
}

#[tokio::test]
async fn events_reach_a_webhook_in_batches_and_a_stuck_webhook_slows_nobody() {
    let hook = WebhookServer::start(Arc::new(|_: &Value| (Duration::ZERO, 200, json!({})))).await;
    let scratch = tempfile::tempdir().unwrap();
    let (policy, kubeconfig) = (scratch.path().join("policy.yaml"), scratch.path().join("webhook.kubeconfig"));
    std::fs::write(&policy, "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  resources: [{group: \"\", resources: [configmaps]}]\n").unwrap();
    hook.write_kubeconfig(&kubeconfig);
    let s = TestServer::start_with(&[
        "--audit-policy-file",
        policy.to_str().unwrap(),
        "--audit-webhook-config-file",
        kubeconfig.to_str().unwrap(),
        "--audit-webhook-batch-max-wait",
        "500ms",
        "--audit-webhook-batch-buffer-size",
        "20",
        // One event a batch: once a batch hangs, the buffer takes 20 more and drops the rest.
        "--audit-webhook-batch-max-size",
        "1",
        "--audit-webhook-batch-throttle-enable=false",
    ])
    .await;
    s.kubectl_ok(&["create", "configmap", "hooked", "--from-literal=k=v"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    let event = loop {
        let lists = hook.received();
        let found = lists.iter().flat_map(|l| l["items"].as_array().cloned().unwrap_or_default()).find(|e| e["verb"] == "create" && e["objectRef"]["name"] == "hooked" && e["stage"] == "ResponseComplete");
        if let Some(event) = found {
            assert!(lists.iter().all(|l| l["kind"] == "EventList" && l["apiVersion"] == "audit.k8s.io/v1"), "{lists:?}");
            break event;
        }
        assert!(Instant::now() < deadline, "the webhook never got the create: {lists:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(event["responseStatus"]["code"], 201, "{event}");
    assert_eq!(event["user"]["username"], "kubernetes-admin", "{event}");

    // The webhook hangs now: its buffer fills and events are dropped, counted, while requests go on.
    hook.answer_with(Arc::new(|_: &Value| (Duration::from_secs(120), 200, json!({}))));
    let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> = kube::Api::namespaced(s.client(), "default");
    for i in 0..150 {
        let sent = Instant::now();
        api.create(&Default::default(), &common::configmap(&format!("unheard-{i}"), &[])).await.unwrap();
        assert!(sent.elapsed() < Duration::from_secs(10), "a create waited {:?} for the audit webhook", sent.elapsed());
    }
    let metrics = s.get("/metrics").await.text();
    let dropped: u64 = metrics.lines().find_map(|l| l.strip_prefix(r#"apiserver_audit_error_total{plugin="webhook"} "#)).and_then(|n| n.parse().ok()).unwrap_or(0);
    assert!(dropped > 0, "{metrics}");
    assert!(metrics.lines().any(|l| l.starts_with("apiserver_audit_event_total ")), "{metrics}");
}

/// A server auditing configmaps at Metadata to `hook` in `mode`.
async fn audited_to(hook: &WebhookServer, scratch: &Path, mode: &str) -> TestServer {
    let (policy, kubeconfig) = (scratch.join("policy.yaml"), scratch.join("webhook.kubeconfig"));
    std::fs::write(&policy, "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  resources: [{group: \"\", resources: [configmaps]}]\n").unwrap();
    hook.write_kubeconfig(&kubeconfig);
    TestServer::start_with(&["--audit-policy-file", policy.to_str().unwrap(), "--audit-webhook-config-file", kubeconfig.to_str().unwrap(), "--audit-webhook-mode", mode]).await
}

/// The stages of the request that created `name` the webhook received, in order.
fn delivered(hook: &WebhookServer, name: &str) -> Vec<String> {
    let events: Vec<Value> = hook.received().iter().flat_map(|l| l["items"].as_array().cloned().unwrap_or_default()).collect();
    let Some(id) = events.iter().find(|e| e["objectRef"]["name"] == name).map(|e| e["auditID"].clone()) else { return Vec::new() };
    events.iter().filter(|e| e["auditID"] == id).map(|e| e["stage"].as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn in_blocking_modes_a_request_waits_for_its_events_and_strict_refuses_what_was_not_delivered() {
    let hook = WebhookServer::start(Arc::new(|_: &Value| (Duration::ZERO, 200, json!({})))).await;
    let scratch = tempfile::tempdir().unwrap();
    let s = audited_to(&hook, scratch.path(), "blocking-strict").await;
    let cms: kube::Api<k8s_openapi::api::core::v1::ConfigMap> = kube::Api::namespaced(s.client(), "default");
    cms.create(&Default::default(), &common::configmap("waited-for", &[])).await.unwrap();
    // Delivered before the answer, each stage in a list of its own.
    assert_eq!(delivered(&hook, "waited-for"), ["RequestReceived", "ResponseComplete"]);
    assert!(hook.received().iter().all(|l| l["items"].as_array().map(Vec::len) == Some(1)));

    // The webhook refuses events: the request is refused before it runs, as kube-apiserver does.
    hook.answer_with(Arc::new(|_: &Value| (Duration::ZERO, 400, json!({}))));
    let reply = s
        .request(
            http::Request::post("/api/v1/namespaces/default/configmaps?fieldManager=t")
                .header("content-type", "application/json")
                .body(serde_json::to_vec(&common::configmap("unrecorded", &[])).unwrap())
                .unwrap(),
        )
        .await;
    assert_eq!(reply.status, 500);
    assert_eq!(reply.text(), "Internal Server Error: \"/api/v1/namespaces/default/configmaps?fieldManager=t\": failed to store audit event\n");
    hook.answer_with(Arc::new(|_: &Value| (Duration::ZERO, 200, json!({}))));
    assert!(cms.get_opt("unrecorded").await.unwrap().is_none(), "a request whose event was not stored ran");
    drop(s);
    hook.answer_with(Arc::new(|_: &Value| (Duration::ZERO, 400, json!({}))));

    // In `blocking` mode the failure is counted and the request goes on.
    let scratch = tempfile::tempdir().unwrap();
    let s = audited_to(&hook, scratch.path(), "blocking").await;
    let cms: kube::Api<k8s_openapi::api::core::v1::ConfigMap> = kube::Api::namespaced(s.client(), "default");
    cms.create(&Default::default(), &common::configmap("unrecorded", &[])).await.unwrap();
    let metrics = s.get("/metrics").await.text();
    let failed: u64 = metrics.lines().find_map(|l| l.strip_prefix(r#"apiserver_audit_error_total{plugin="webhook"} "#)).and_then(|n| n.parse().ok()).unwrap_or(0);
    assert!(failed >= 2, "both events of the create counted: {failed}");

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_apiserver")).args(["--audit-webhook-mode", "eventually"]).output().unwrap();
    let out = String::from_utf8_lossy(&out.stderr);
    assert!(out.contains("invalid audit webhook mode \"eventually\", allowed modes are \"batch,blocking,blocking-strict\""), "{out}");
}
