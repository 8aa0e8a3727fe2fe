//! Server-side apply and managed fields against the real binary, with kubectl and kube-rs:
//! ownership recorded for creates, updates and applies, conflicts (kubectl's message) and
//! `--force-conflicts`, shared ownership, fields released by the applier, apply creating an
//! object, the checks of the apply options, the client-side to server-side migration,
//! `kubectl diff --server-side` and `kubectl edit`, and
//! map-typed lists owned item by item.

use crate::common;

use common::TestServer;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Patch, PatchParams};
use kube::Api;
use serde_json::{json, Value};

fn write(dir: &std::path::Path, name: &str, doc: &Value) -> String {
    let path = dir.join(name);
    std::fs::write(&path, serde_yaml::to_string(doc).unwrap()).unwrap();
    path.to_str().unwrap().to_string()
}

fn cm(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": "default"}, "data": data})
}

/// The managers that own `.data.<key>`, as `manager/operation`.
fn owners_of(obj: &Value, key: &str) -> Vec<String> {
    let mut out: Vec<String> = obj["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["fieldsV1"]["f:data"].get(format!("f:{key}")).is_some())
        .map(|e| format!("{}/{}", e["manager"].as_str().unwrap(), e["operation"].as_str().unwrap()))
        .collect();
    out.sort();
    out
}

fn get_cm(s: &TestServer) -> Value {
    serde_json::from_str(&s.kubectl_ok(&["get", "configmap", "cfg", "-o", "json", "--show-managed-fields"])).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_server_side_apply_owns_conflicts_and_releases() {
    let s = TestServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    s.kubectl_ok(&["create", "configmap", "cfg", "--from-literal=a=1"]);
    assert_eq!(owners_of(&get_cm(&s), "a"), ["kubectl-create/Update"]);

    // Changing a field kubectl-create set is a conflict, as kubectl prints it.
    let file = write(dir.path(), "cfg.yaml", &cm(json!({"a": "2", "b": "2"})));
    let out = s.kubectl(&["apply", "--server-side", "-f", &file]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("Apply failed with 1 conflict: conflict with \"kubectl-create\" using v1: .data.a"), "{err}");
    // Forced, the applier takes it.
    s.kubectl_ok(&["apply", "--server-side", "--force-conflicts", "-f", &file]);
    let now = get_cm(&s);
    assert_eq!(now["data"], json!({"a": "2", "b": "2"}));
    assert_eq!(owners_of(&now, "a"), ["kubectl/Apply"]);
    // Without --show-managed-fields kubectl hides them; the server sends them.
    let plain: Value = serde_json::from_str(&s.kubectl_ok(&["get", "configmap", "cfg", "-o", "json"])).unwrap();
    assert!(plain["metadata"].get("managedFields").is_none());

    // Another applier setting the same value shares it; a different value conflicts.
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let robot = PatchParams::apply("robot");
    api.patch("cfg", &robot, &Patch::Apply(cm(json!({"b": "2"})))).await.unwrap();
    assert_eq!(owners_of(&get_cm(&s), "b"), ["kubectl/Apply", "robot/Apply"]);
    let status = common::api_error(api.patch("cfg", &robot, &Patch::Apply(cm(json!({"a": "3"})))).await);
    assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"));
    let causes = status.details.unwrap().causes;
    assert_eq!((causes[0].reason.as_str(), causes[0].field.as_str(), causes[0].message.as_str()), ("FieldManagerConflict", ".data.a", "conflict with \"kubectl\""));

    // kubectl stops sending a and b: a goes (nobody else owns it), b stays (robot owns it).
    let file = write(dir.path(), "cfg.yaml", &cm(json!({"c": "3"})));
    s.kubectl_ok(&["apply", "--server-side", "-f", &file]);
    assert_eq!(get_cm(&s)["data"], json!({"b": "2", "c": "3"}));

    // An update records its manager and takes the fields it changed.
    s.kubectl_ok(&["patch", "configmap", "cfg", "--type", "merge", "-p", r#"{"data":{"c":"4"}}"#]);
    assert_eq!(owners_of(&get_cm(&s), "c"), ["kubectl-patch/Update"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn apply_creates_and_checks_its_options() {
    let s = TestServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let created = api.patch("cfg", &PatchParams::apply("robot"), &Patch::Apply(cm(json!({"a": "1"})))).await.unwrap();
    let entry = &created.metadata.managed_fields.as_ref().unwrap()[0];
    assert_eq!((entry.manager.as_deref(), entry.operation.as_deref(), entry.fields_type.as_deref()), (Some("robot"), Some("Apply"), Some("FieldsV1")));
    // Applying the same again changes nothing, not even the resourceVersion.
    let again = api.patch("cfg", &PatchParams::apply("robot"), &Patch::Apply(cm(json!({"a": "1"})))).await.unwrap();
    assert_eq!(again.metadata.resource_version, created.metadata.resource_version);

    let patch = |query: &str, body: &Value| {
        http::Request::patch(format!("/api/v1/namespaces/default/configmaps/cfg{query}"))
            .header("content-type", "application/apply-patch+yaml")
            .body(serde_json::to_vec(body).unwrap())
            .unwrap()
    };
    let status = s.request(patch("", &cm(json!({"a": "2"})))).await.expect_status(422, "Invalid");
    assert_eq!(status["message"], "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch");
    let long = "m".repeat(129);
    let status = s.request(patch(&format!("?fieldManager={long}"), &cm(json!({"a": "2"})))).await.expect_status(422, "Invalid");
    assert!(status["message"].as_str().unwrap().contains("fieldManager: Too long"), "{status}");
    let mut with_fields = cm(json!({"a": "2"}));
    with_fields["metadata"]["managedFields"] = json!([{"manager": "x"}]);
    let status = s.request(patch("?fieldManager=m", &with_fields)).await.expect_status(400, "BadRequest");
    assert_eq!(status["message"], "metadata.managedFields must be nil");
    let merge = http::Request::patch("/api/v1/namespaces/default/configmaps/cfg?force=true")
        .header("content-type", "application/merge-patch+json")
        .body(br#"{"data":{"a":"2"}}"#.to_vec())
        .unwrap();
    let status = s.request(merge).await.expect_status(422, "Invalid");
    assert!(status["message"].as_str().unwrap().contains("force: Forbidden: may not be specified for non-apply patch"), "{status}");
}

#[tokio::test(flavor = "multi_thread")]
async fn client_side_apply_then_server_side() {
    let s = TestServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "cfg.yaml", &cm(json!({"a": "1"})));
    s.kubectl_ok(&["apply", "-f", &file]);
    assert_eq!(owners_of(&get_cm(&s), "a"), ["kubectl-client-side-apply/Update"]);
    // kubectl moves the client-side applier's fields to its server-side manager: no conflict.
    let file = write(dir.path(), "cfg.yaml", &cm(json!({"a": "2"})));
    s.kubectl_ok(&["apply", "--server-side", "-f", &file]);
    let now = get_cm(&s);
    assert_eq!(now["data"]["a"], "2");
    assert_eq!(owners_of(&now, "a"), ["kubectl/Apply"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn list_items_are_owned_one_by_one() {
    let s = TestServer::start().await;
    let api: Api<Deployment> = Api::namespaced(s.client(), "default");
    let deployment = |containers: Value| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
               "spec": {"selector": {"matchLabels": {"app": "web"}},
                        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": containers}}}})
    };
    api.patch("web", &PatchParams::apply("team-a"), &Patch::Apply(deployment(json!([{"name": "app", "image": "app:1"}])))).await.unwrap();
    api.patch("web", &PatchParams::apply("team-b"), &Patch::Apply(deployment(json!([{"name": "sidecar", "image": "sc:1"}])))).await.unwrap();
    let names = |d: &Deployment| d.spec.as_ref().unwrap().template.spec.as_ref().unwrap().containers.iter().map(|c| c.name.clone()).collect::<Vec<_>>();
    assert_eq!(names(&api.get("web").await.unwrap()), ["app", "sidecar"]);
    // team-b's image is team-b's.
    let status = common::api_error(api.patch("web", &PatchParams::apply("team-a"), &Patch::Apply(deployment(json!([{"name": "app", "image": "app:1"}, {"name": "sidecar", "image": "sc:2"}])))).await);
    assert!(status.message.contains(".spec.template.spec.containers[name=\"sidecar\"].image"), "{}", status.message);
    // team-b leaves: its container goes, team-a's stays.
    api.patch("web", &PatchParams::apply("team-b"), &Patch::Apply(deployment(json!([])))).await.unwrap();
    assert_eq!(names(&api.get("web").await.unwrap()), ["app"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_diff_and_edit() {
    let s = TestServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "cfg.yaml", &cm(json!({"a": "1"})));
    s.kubectl_ok(&["apply", "--server-side", "-f", &file]);
    // No difference: exit 0; a difference: exit 1 and the change shown; nothing written.
    let same = s.kubectl(&["diff", "--server-side", "-f", &file]);
    assert_eq!(same.status.code(), Some(0), "{}", String::from_utf8_lossy(&same.stderr));
    let changed = write(dir.path(), "cfg2.yaml", &cm(json!({"a": "2"})));
    let diff = s.kubectl(&["diff", "--server-side", "-f", &changed]);
    assert_eq!(diff.status.code(), Some(1), "{}", String::from_utf8_lossy(&diff.stderr));
    let text = String::from_utf8_lossy(&diff.stdout);
    assert!(text.contains("-  a: \"1\"") && text.contains("+  a: \"2\""), "{text}");
    assert_eq!(get_cm(&s)["data"]["a"], "1");
    // kubectl edit with an editor that changes the value: recorded for kubectl-edit.
    let editor = dir.path().join("editor.sh");
    std::fs::write(&editor, "#!/bin/sh\nsed -i 's/a: \"1\"/a: \"9\"/' \"$1\"\n").unwrap();
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut cmd = s.kubectl_command(&["edit", "configmap", "cfg"]);
    cmd.env("KUBE_EDITOR", &editor);
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let now = get_cm(&s);
    assert_eq!(now["data"]["a"], "9");
    assert_eq!(owners_of(&now, "a"), ["kubectl-edit/Update"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn applying_ports_without_their_protocol_twice_changes_nothing() {
    let s = TestServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "image": "nginx", "ports": [{"containerPort": 80}]}]}}}});
    let file = write(dir.path(), "web.yaml", &deployment);
    s.kubectl_ok(&["apply", "--server-side", "-f", &file]);
    let first = s.kubectl_ok(&["get", "deployment", "web", "-o", "jsonpath={.metadata.resourceVersion} {.spec.template.spec.containers[0].ports}"]);
    let out = s.kubectl_ok(&["apply", "--server-side", "-f", &file]);
    assert!(out.contains("serverside-applied"), "{out}");
    let second = s.kubectl_ok(&["get", "deployment", "web", "-o", "jsonpath={.metadata.resourceVersion} {.spec.template.spec.containers[0].ports}"]);
    assert_eq!(first, second, "the second apply changed the deployment");
    assert!(first.contains(r#""protocol":"TCP""#), "{first}");
}
