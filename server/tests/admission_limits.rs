//! The optional admission plugins EventRateLimit and OwnerReferencesPermissionEnforcement
//! against the real binary: events over a limit refused with 429 in kube-apiserver's words, an
//! invalid or missing EventRateLimit configuration stopping the server at start, and owner
//! references that need `delete` on the object or `update` on the owner's finalizers.

use crate::common;

use std::path::Path;

use common::{api_error, send, TestServer};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kube::Client;
use serde_json::{json, Value};

/// An `AdmissionConfiguration` in `dir` whose EventRateLimit configuration is in a file of its
/// own holding `limits`.
fn event_rate_limit_config(dir: &Path, limits: Value) -> String {
    let limits = json!({"apiVersion": "eventratelimit.admission.k8s.io/v1alpha1", "kind": "Configuration", "limits": limits});
    std::fs::write(dir.join("eventratelimit.json"), limits.to_string()).unwrap();
    let config = dir.join("admission.yaml");
    std::fs::write(&config, "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: EventRateLimit\n  path: eventratelimit.json\n").unwrap();
    config.to_str().unwrap().to_string()
}

/// POSTs an event about a pod to `namespace` (at `path_prefix`: core or events.k8s.io).
async fn post_event(client: &Client, path_prefix: &str, namespace: &str, name: &str, query: &str) -> (u16, Value, http::HeaderMap) {
    let body = match path_prefix {
        "/api/v1" => json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": name},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": namespace}, "reason": "Tested", "message": "m", "source": {"component": "test"}}),
        _ => json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": name},
            "regarding": {"kind": "Pod", "name": "p", "namespace": namespace}, "reason": "Tested", "action": "Test", "type": "Normal",
            "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "test", "reportingInstance": "test-1"}),
    };
    let path = format!("{path_prefix}/namespaces/{namespace}/events{query}");
    let req = http::Request::post(path).header("content-type", "application/json").body(body.to_string().into_bytes()).unwrap();
    let reply = send(client, req).await;
    let body = reply.json();
    (reply.status, body, reply.headers)
}

#[tokio::test]
async fn events_over_a_limit_are_too_many_requests() {
    let dir = tempfile::tempdir().unwrap();
    let config = event_rate_limit_config(dir.path(), json!([{"type": "Namespace", "qps": 1, "burst": 3}, {"type": "User", "qps": 1, "burst": 5, "cacheSize": 10}]));
    let server = TestServer::start_with(&["--enable-admission-plugins=EventRateLimit", "--admission-control-config-file", &config]).await;
    for ns in ["busy", "calm"] {
        server.kubectl_ok(&["create", "namespace", ns]);
    }
    let alice = server.client_for(&server.kubeconfig_for("alice", &["system:masters"])).await;

    // Not limited: dry runs and events.k8s.io's events.
    for i in 0..4 {
        assert_eq!(post_event(&alice, "/api/v1", "busy", &format!("dry-{i}"), "?dryRun=All").await.0, 201);
        assert_eq!(post_event(&alice, "/apis/events.k8s.io/v1", "busy", &format!("new-{i}"), "").await.0, 201);
    }
    // The namespace's burst of 3, then refusals.
    for i in 0..3 {
        let (status, body, _) = post_event(&alice, "/api/v1", "busy", &format!("e-{i}"), "").await;
        assert_eq!(status, 201, "{body}");
    }
    let (status, body, headers) = post_event(&alice, "/api/v1", "busy", "e-3", "").await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(
        body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "code": 429, "reason": "TooManyRequests",
            "message": "Too many requests: limit reached on type Namespace for key busy"})
    );
    assert!(headers.get("retry-after").is_none(), "{headers:?}");
    // Another namespace has its own bucket, but the user's (5 tokens, one taken by the refused
    // event) runs out.
    assert_eq!(post_event(&alice, "/api/v1", "calm", "c-0", "").await.0, 201);
    let (status, body, _) = post_event(&alice, "/api/v1", "calm", "c-1", "").await;
    assert_eq!((status, &body["message"]), (429, &json!("Too many requests: limit reached on type User for key alice")), "{body}");
    let (_, body, _) = post_event(&alice, "/api/v1", "busy", "e-4", "").await;
    assert_eq!(body["message"], "Too many requests: [limit reached on type Namespace for key busy, limit reached on type User for key alice]");
    // Another user in the calm namespace is not limited.
    let bob = server.client_for(&server.kubeconfig_for("bob", &["system:masters"])).await;
    assert_eq!(post_event(&bob, "/api/v1", "calm", "b-0", "").await.0, 201);
}

#[tokio::test]
async fn an_invalid_or_missing_event_rate_limit_configuration_stops_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let config = event_rate_limit_config(dir.path(), json!([{"type": "Pod", "qps": 0, "burst": 1}]));
    let mut server = TestServer::new(&["--enable-admission-plugins=EventRateLimit", "--admission-control-config-file", &config]);
    server.launch();
    assert!(server.wait_ready().await.is_err());
    let expected = r#"couldn't init admission plugin "EventRateLimit": [limits[0].type: Unsupported value: "Pod": supported values: "Server", "Namespace", "User", "SourceAndObject", limits[0].qps: Invalid value: 0: must be positive]"#;
    assert!(server.log().contains(expected), "{}", server.log());

    let mut server = TestServer::new(&["--enable-admission-plugins=EventRateLimit"]);
    server.launch();
    assert!(server.wait_ready().await.is_err());
    assert!(server.log().contains(r#"couldn't init admission plugin "EventRateLimit": limits: Invalid value: null: must not be empty"#), "{}", server.log());
}

fn configmap(name: &str, owners: Value) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name, "ownerReferences": owners}, "data": {"k": "v"}})).unwrap()
}

#[tokio::test]
async fn owner_references_need_delete_and_blocking_needs_the_owners_finalizers() {
    let server = TestServer::start_with(&["--enable-admission-plugins=OwnerReferencesPermissionEnforcement"]).await;
    server.kubectl_ok(&["create", "namespace", "team"]);
    server.kubectl_ok(&["create", "role", "cm-writer", "--verb=create,update", "--resource=configmaps", "-n", "team"]);
    server.kubectl_ok(&["create", "rolebinding", "bob-writes", "--role=cm-writer", "--user=bob", "-n", "team"]);
    let admin: Api<ConfigMap> = Api::namespaced(server.client(), "team");
    let owner = admin.create(&PostParams::default(), &configmap("owner", json!([]))).await.unwrap();
    let owner_ref = |block: Option<bool>| {
        let mut r = json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid.clone().unwrap()});
        if let Some(b) = block {
            r["blockOwnerDeletion"] = json!(b);
        }
        r
    };
    let bob_config = server.kubeconfig_for("bob", &[]);
    let bob: Api<ConfigMap> = Api::namespaced(server.client_for(&bob_config).await, "team");
    let pp = PostParams::default();

    // Creating with a reference needs no delete; changing references on update does.
    bob.create(&pp, &configmap("plain", json!([]))).await.unwrap();
    bob.create(&pp, &configmap("owned", json!([owner_ref(Some(false))]))).await.unwrap();
    let mut plain = admin.get("plain").await.unwrap();
    plain.data = Some([("k".to_string(), "changed".to_string())].into());
    plain = bob.replace("plain", &pp, &plain).await.unwrap();
    plain.metadata.owner_references = Some(serde_json::from_value(json!([owner_ref(None)])).unwrap());
    let status = api_error(bob.replace("plain", &pp, &plain).await);
    assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"));
    assert_eq!(status.message, r#"configmaps "plain" is forbidden: cannot set an ownerRef on a resource you can't delete: , <nil>"#);

    // Blocking the owner's deletion needs update on its finalizers, and a kind that maps to a
    // resource.
    let blocking = server.dir().join("blocking.json");
    std::fs::write(&blocking, json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "blocking", "ownerReferences": [owner_ref(Some(true))]}}).to_string()).unwrap();
    let out = server.kubectl_as(&bob_config, &["create", "-n", "team", "-f", blocking.to_str().unwrap()]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim_end(),
        format!(
            r#"Error from server (Forbidden): error when creating "{}": configmaps "blocking" is forbidden: cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on: , <nil>"#,
            blocking.display()
        )
    );
    let widget = json!([{"apiVersion": "example.com/v1", "kind": "Widget", "name": "w", "uid": "u", "blockOwnerDeletion": true}]);
    let status = api_error(bob.create(&pp, &configmap("widget", widget)).await);
    assert_eq!(
        status.message,
        r#"configmaps "widget" is forbidden: cannot set blockOwnerDeletion in this case because cannot find RESTMapping for APIVersion example.com/v1 Kind Widget: no matches for kind "Widget" in version "example.com/v1""#
    );
    // With delete on configmaps, references may change; turning blocking on for a reference that
    // did not block still needs the owner's finalizers.
    server.kubectl_ok(&["create", "role", "cm-deleter", "--verb=delete", "--resource=configmaps", "-n", "team"]);
    server.kubectl_ok(&["create", "rolebinding", "bob-deletes", "--role=cm-deleter", "--user=bob", "-n", "team"]);
    bob.replace("plain", &pp, &plain).await.unwrap();
    let mut owned = admin.get("owned").await.unwrap();
    owned.metadata.owner_references = Some(serde_json::from_value(json!([owner_ref(Some(true))])).unwrap());
    let status = api_error(bob.replace("owned", &pp, &owned).await);
    assert_eq!(
        status.message,
        r#"configmaps "owned" is forbidden: cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on: , <nil>"#
    );

    // With update on configmaps/finalizers, blocking goes through.
    server.kubectl_ok(&["create", "role", "cm-finalizer", "--verb=update", "--resource=configmaps/finalizers", "-n", "team"]);
    server.kubectl_ok(&["create", "rolebinding", "bob-finalizes", "--role=cm-finalizer", "--user=bob", "-n", "team"]);
    let out = server.kubectl_as(&bob_config, &["create", "-n", "team", "-f", blocking.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    bob.replace("owned", &pp, &owned).await.unwrap();
}
