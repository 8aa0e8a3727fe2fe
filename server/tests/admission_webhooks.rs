//! Admission webhooks against the real binary: a real HTTPS webhook started here is called with
//! AdmissionReview v1 for the writes its rules and selectors select; mutating webhooks' JSON
//! patches land in the stored object; refusals come back as the webhook worded them; timeouts
//! follow the failure policy.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use common::webhook_server::WebhookServer;
use common::TestServer;
use serde_json::{json, Value};

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn apply(s: &TestServer, value: &Value) {
    let path = s.dir().join(format!("{}.json", value["metadata"]["name"].as_str().unwrap()));
    std::fs::write(&path, value.to_string()).unwrap();
    s.kubectl_ok(&["apply", "-f", path.to_str().unwrap()]);
}

/// Answers an AdmissionReview: refuses ConfigMaps with a `forbidden` key, adds a label to the
/// others.
fn review_answer(review: &Value) -> (Duration, u16, Value) {
    let request = &review["request"];
    let object = &request["object"];
    let mut response = json!({"uid": request["uid"], "allowed": true});
    if object["data"].get("deprecated").is_some() {
        response["warnings"] = json!(["key \"deprecated\" goes away in the next release"]);
    }
    if object["data"].get("forbidden").is_some() {
        response = json!({"uid": request["uid"], "allowed": false, "status": {"code": 403, "reason": "Forbidden", "message": "no forbidden keys"}});
    } else if object["metadata"]["labels"].get("mutated").is_none() {
        let patch = if object["metadata"].get("labels").is_some() {
            json!([{"op": "add", "path": "/metadata/labels/mutated", "value": "yes"}])
        } else {
            json!([{"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}])
        };
        response["patchType"] = json!("JSONPatch");
        response["patch"] = json!(base64::engine::general_purpose::STANDARD.encode(patch.to_string()));
    }
    (Duration::ZERO, 200, json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}))
}

fn configuration(kind: &str, name: &str, webhook: &WebhookServer, extra: Value) -> Value {
    let mut hook = json!({
        "name": name,
        "clientConfig": {"url": webhook.url, "caBundle": webhook.ca_bundle()},
        "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["configmaps"]}],
        "namespaceSelector": {"matchLabels": {"webhooks": "on"}},
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "timeoutSeconds": 2,
    });
    for (k, v) in extra.as_object().unwrap() {
        hook[k] = v.clone();
    }
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name}, "webhooks": [hook]})
}

#[tokio::test(flavor = "multi_thread")]
async fn webhooks_mutate_and_validate_writes() {
    let webhook = WebhookServer::start(Arc::new(review_answer)).await;
    let s = TestServer::start().await;
    s.kubectl_ok(&["create", "namespace", "hooked"]);
    s.kubectl_ok(&["label", "namespace", "hooked", "webhooks=on"]);
    apply(&s, &configuration("MutatingWebhookConfiguration", "label.example.com", &webhook, json!({})));
    apply(&s, &configuration("ValidatingWebhookConfiguration", "deny.example.com", &webhook, json!({})));

    s.kubectl_ok(&["create", "configmap", "plain", "--from-literal=a=b", "-n", "hooked"]);
    assert_eq!(s.kubectl_ok(&["get", "configmap", "plain", "-n", "hooked", "-o", "jsonpath={.metadata.labels.mutated}"]), "yes");
    let reviews = webhook.received();
    // Asked twice: as the mutating webhook, then (seeing the label) as the validating one.
    assert_eq!(reviews.len(), 2);
    assert_eq!(reviews[1]["request"]["object"]["metadata"]["labels"]["mutated"], "yes");
    let first = &reviews[0];
    assert_eq!(first["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(first["request"]["operation"], "CREATE");
    assert_eq!(first["request"]["resource"], json!({"group": "", "version": "v1", "resource": "configmaps"}));
    assert_eq!(first["request"]["userInfo"]["username"], "kubernetes-admin");

    let out = s.kubectl(&["create", "configmap", "bad", "--from-literal=forbidden=x", "-n", "hooked"]);
    assert!(stderr(&out).contains("admission webhook \"label.example.com\" denied the request: no forbidden keys"), "{}", stderr(&out));
    // An allowing webhook's warnings reach the client (kubectl prints a repeated one once).
    let out = s.kubectl(&["create", "configmap", "old", "--from-literal=deprecated=x", "-n", "hooked"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("Warning: key \"deprecated\" goes away in the next release"), "{}", stderr(&out));
    // Namespaces the selector leaves out are not sent.
    let asked = webhook.received().len();
    s.kubectl_ok(&["create", "configmap", "bad", "--from-literal=forbidden=x", "-n", "default"]);
    assert_eq!(webhook.received().len(), asked);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hanging_webhook_follows_its_failure_policy() {
    let webhook = WebhookServer::start(Arc::new(|r: &Value| {
        (Duration::from_secs(5), 200, json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": {"uid": r["request"]["uid"], "allowed": true}}))
    }))
    .await;
    let s = TestServer::start().await;
    s.kubectl_ok(&["create", "namespace", "hooked"]);
    s.kubectl_ok(&["label", "namespace", "hooked", "webhooks=on"]);
    apply(&s, &configuration("ValidatingWebhookConfiguration", "slow.example.com", &webhook, json!({"timeoutSeconds": 1, "failurePolicy": "Ignore"})));
    let started = Instant::now();
    s.kubectl_ok(&["create", "configmap", "ignored", "--from-literal=a=b", "-n", "hooked"]);
    let took = started.elapsed();
    assert!(took >= Duration::from_secs(1) && took < Duration::from_secs(4), "{took:?}");

    apply(&s, &configuration("ValidatingWebhookConfiguration", "slow.example.com", &webhook, json!({"timeoutSeconds": 1, "failurePolicy": "Fail"})));
    let out = s.kubectl(&["create", "configmap", "refused", "--from-literal=a=b", "-n", "hooked"]);
    assert!(stderr(&out).contains("Internal error occurred: failed calling webhook \"slow.example.com\": failed to call webhook: Post"), "{}", stderr(&out));
    // Writes the webhook does not select are not held up.
    let started = Instant::now();
    s.kubectl_ok(&["create", "configmap", "elsewhere", "--from-literal=a=b", "-n", "default"]);
    assert!(started.elapsed() < Duration::from_secs(1));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_mutating_webhook_on_a_pods_resize_changes_nothing_but_its_resources() {
    let webhook = WebhookServer::start(Arc::new(review_answer)).await;
    let s = TestServer::start().await;
    let mut config = configuration("MutatingWebhookConfiguration", "label.example.com", &webhook, json!({"namespaceSelector": {}}));
    config["webhooks"][0]["rules"] = json!([{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": ["pods/resize"]}]);
    apply(&s, &config);
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sized", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}]}});
    // The namespace's default service account appears a moment after the server starts.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !s.kubectl(&["get", "serviceaccount", "default"]).status.success() {
        assert!(Instant::now() < deadline, "no default service account");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    apply(&s, &pod);
    s.kubectl_ok(&["patch", "pod", "sized", "--subresource=resize", "-p", r#"{"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "200m"}}}]}}"#]);
    let review = webhook.received().into_iter().find(|r| r["request"]["subResource"] == "resize").expect("the webhook was asked about the resize");
    assert_eq!(review["request"]["resource"]["resource"], "pods");
    // The webhook's label is dropped, as Kubernetes' resize strategy drops it; the resize is not.
    let stored: Value = serde_json::from_str(&s.kubectl_ok(&["get", "pod", "sized", "-o", "json"])).unwrap();
    assert_eq!(stored["spec"]["containers"][0]["resources"]["requests"]["cpu"], "200m", "{stored}");
    assert!(stored["metadata"]["labels"].get("mutated").is_none(), "{stored}");
}
