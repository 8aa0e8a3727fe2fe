//! The admission plugins that apply namespace policies to pods, against the real binary with
//! kubectl: PodNodeSelector (node selectors from namespace annotations and the plugin's
//! configuration, conflicts and whitelists) and PodTolerationRestriction (default tolerations
//! and whitelists from namespace annotations and the configuration, on creates and updates), in
//! Kubernetes' words; configurations kube-apiserver reads, and one it refuses at start.

use crate::common;

use std::path::Path;

use common::TestServer;
use serde_json::{json, Value};

fn created(server: &TestServer, object: Value) -> Value {
    server.kubectl_create(&object).unwrap_or_else(|e| panic!("create: {e}"))
}

/// The create is refused with exactly `message` (kubectl's `Error from server (Reason): ...`).
fn refused(server: &TestServer, object: Value, message: &str) {
    let err = server.kubectl_create(&object).expect_err("should be refused");
    assert_eq!(err, message);
}

fn namespace(server: &TestServer, name: &str, annotations: Value) {
    created(server, json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "annotations": annotations}}));
}

/// A pod in `namespace` with `spec` (its container added).
fn pod(namespace: &str, name: &str, spec: Value) -> Value {
    let mut spec = spec;
    spec["containers"] = json!([{"name": "app", "image": "registry.k8s.io/pause:3.10"}]);
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": spec})
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

const NODE_SELECTOR: &str = "scheduler.alpha.kubernetes.io/node-selector";
const CONFLICT: &str = "pod node label selector conflicts with its namespace node label selector";
const NOT_WHITELISTED: &str = "pod node label selector labels conflict with its namespace whitelist";

#[tokio::test]
async fn pod_node_selector() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(dir.path(), "admission.yaml", "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: PodNodeSelector\n  configuration:\n    podNodeSelectorPluginConfig:\n      clusterDefaultNodeSelector: env=prod\n      listed: tier=web,zone=a\n");
    let server = TestServer::start_with(&["--enable-admission-plugins=PodNodeSelector", "--admission-control-config-file", &config]).await;
    namespace(&server, "plain", json!({}));
    namespace(&server, "annotated", json!({NODE_SELECTOR: "tier=web, zone = a"}));
    namespace(&server, "open", json!({NODE_SELECTOR: ""}));
    namespace(&server, "listed", json!({NODE_SELECTOR: "tier=web"}));
    namespace(&server, "broken", json!({NODE_SELECTOR: "tier"}));

    // The cluster's default without an annotation; the annotation instead of it (an empty one
    // too), merged with the pod's own selector.
    let p = created(&server, pod("plain", "p", json!({"nodeSelector": {"disk": "ssd"}})));
    assert_eq!(p["spec"]["nodeSelector"], json!({"disk": "ssd", "env": "prod"}));
    let a = created(&server, pod("annotated", "a", json!({"nodeSelector": {"zone": "a"}})));
    assert_eq!(a["spec"]["nodeSelector"], json!({"tier": "web", "zone": "a"}));
    let o = created(&server, pod("open", "o", json!({})));
    assert!(o["spec"]["nodeSelector"].as_object().is_none_or(|s| s.is_empty()), "{o}");

    // Conflicts with the namespace's selector, and the whitelist.
    refused(&server, pod("plain", "dev", json!({"nodeSelector": {"env": "dev"}})), &format!("Error from server (Forbidden): error when creating \"STDIN\": pods \"dev\" is forbidden: {CONFLICT}"));
    refused(&server, pod("annotated", "b", json!({"nodeSelector": {"zone": "b"}})), &format!("Error from server (Forbidden): error when creating \"STDIN\": pods \"b\" is forbidden: {CONFLICT}"));
    let l = created(&server, pod("listed", "l", json!({"nodeSelector": {"zone": "a"}})));
    assert_eq!(l["spec"]["nodeSelector"], json!({"tier": "web", "zone": "a"}));
    refused(&server, pod("listed", "elsewhere", json!({"nodeSelector": {"zone": "b"}})), &format!("Error from server (Forbidden): error when creating \"STDIN\": pods \"elsewhere\" is forbidden: {NOT_WHITELISTED}"));

    // An annotation that is not a selector: a plain error, a 500 without a reason.
    refused(&server, pod("broken", "x", json!({})), "Error from server: error when creating \"STDIN\": invalid selector: [tier]");
    let body = serde_json::to_vec(&pod("broken", "x", json!({}))).unwrap();
    let reply = server.request(http::Request::post("/api/v1/namespaces/broken/pods").header("content-type", "application/json").body(body).unwrap()).await;
    let status = reply.json();
    assert_eq!((reply.status, &status["message"], status.get("reason")), (500, &json!("invalid selector: [tier]"), None), "{status}");

    // Updates are not looked at: a pod whose namespace now selects otherwise is still updated,
    // while its node selector stays what pod updates may not change.
    server.kubectl_ok(&["annotate", "namespace", "annotated", "--overwrite", &format!("{NODE_SELECTOR}=tier=db")]);
    server.kubectl_ok(&["label", "pod", "a", "-n", "annotated", "updated=yes"]);
    let out = server.kubectl(&["patch", "pod", "a", "-n", "annotated", "--type=merge", "-p", r#"{"spec":{"nodeSelector":{"tier":"db"}}}"#]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("Forbidden: pod updates may not change fields other than"), "{out:?}");

    // The legacy configuration file kube-apiserver still reads: the plugin's map alone.
    let legacy = write(dir.path(), "legacy.yaml", "podNodeSelectorPluginConfig:\n  clusterDefaultNodeSelector: env=staging\n");
    let old = TestServer::start_with(&["--enable-admission-plugins=PodNodeSelector", "--admission-control-config-file", &legacy]).await;
    let d = created(&old, pod("default", "d", json!({})));
    assert_eq!(d["spec"]["nodeSelector"], json!({"env": "staging"}));
}

const DEFAULTS: &str = "scheduler.alpha.kubernetes.io/defaultTolerations";
const WHITELIST: &str = "scheduler.alpha.kubernetes.io/tolerationsWhitelist";

/// The tolerations DefaultTolerationSeconds gives every pod.
fn unready() -> Vec<Value> {
    ["not-ready", "unreachable"].map(|t| json!({"key": format!("node.kubernetes.io/{t}"), "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300})).to_vec()
}

fn tolerations(pod: &Value) -> Vec<Value> {
    pod["spec"]["tolerations"].as_array().cloned().unwrap_or_default()
}

#[tokio::test]
async fn pod_toleration_restriction() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "tolerations.yaml", r#"apiVersion: podtolerationrestriction.admission.k8s.io/v1alpha1
kind: Configuration
default:
- {key: team, operator: Equal, value: shared, effect: NoSchedule}
whitelist:
- {key: team, operator: Exists}
- {operator: Exists, effect: NoExecute}
- {key: node.kubernetes.io/memory-pressure, operator: Exists, effect: NoSchedule}
"#);
    let config = write(dir.path(), "admission.yaml", "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: PodTolerationRestriction\n  path: tolerations.yaml\n");
    let server = TestServer::start_with(&["--enable-admission-plugins=PodTolerationRestriction", "--admission-control-config-file", &config]).await;
    namespace(&server, "plain", json!({}));
    namespace(&server, "custom", json!({
        DEFAULTS: r#"[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]"#,
        WHITELIST: r#"[{"key": "gpu", "operator": "Exists"}, {"operator": "Exists", "effect": "NoExecute"}]"#}));
    namespace(&server, "free", json!({DEFAULTS: "", WHITELIST: ""}));
    namespace(&server, "broken", json!({WHITELIST: r#"{"key": "gpu"}"#}));
    let team = json!({"key": "team", "operator": "Equal", "value": "shared", "effect": "NoSchedule"});
    let memory = json!({"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"});

    // The cluster's defaults; a pod that is not BestEffort tolerates memory pressure too.
    let p = created(&server, pod("plain", "p", json!({})));
    assert_eq!(tolerations(&p), [unready(), vec![team.clone()]].concat());
    let mut burstable = pod("plain", "burstable", json!({}));
    burstable["spec"]["containers"][0]["resources"] = json!({"requests": {"cpu": "100m"}});
    assert_eq!(tolerations(&created(&server, burstable)), [unready(), vec![team.clone(), memory.clone()]].concat());
    // A toleration of the pod's own that covers a default keeps the default out.
    let own = json!({"key": "team", "operator": "Exists"});
    let wide = created(&server, pod("plain", "wide", json!({"tolerations": [own]})));
    assert_eq!(tolerations(&wide), [vec![own], unready()].concat());
    refused(&server, pod("plain", "gpu", json!({"tolerations": [{"key": "gpu", "operator": "Exists"}]})),
        "Error from server: error when creating \"STDIN\": pod tolerations (possibly merged with namespace default tolerations) conflict with its cluster whitelist");

    // The namespace's annotations instead of the configuration; empty ones add and check nothing.
    let c = created(&server, pod("custom", "c", json!({})));
    assert_eq!(tolerations(&c), [unready(), vec![json!({"key": "gpu", "operator": "Exists", "effect": "NoSchedule"})]].concat());
    refused(&server, pod("custom", "t", json!({"tolerations": [{"key": "team", "operator": "Exists"}]})),
        "Error from server: error when creating \"STDIN\": pod tolerations (possibly merged with namespace default tolerations) conflict with its namespace whitelist");
    let anything = json!({"key": "anything", "operator": "Exists"});
    let f = created(&server, pod("free", "f", json!({"tolerations": [anything]})));
    assert_eq!(tolerations(&f), [vec![anything], unready()].concat());
    refused(&server, pod("broken", "b", json!({})), "Error from server: error when creating \"STDIN\": json: cannot unmarshal object into Go value of type []v1.Toleration");

    // Updates: no defaults are added, the whitelist still holds.
    server.kubectl_ok(&["annotate", "namespace", "custom", "--overwrite", &format!(r#"{DEFAULTS}=[{{"key": "late", "operator": "Exists"}}]"#)]);
    let labelled: Value = serde_json::from_str(&server.kubectl_ok(&["label", "pod", "c", "-n", "custom", "updated=yes", "-o", "json"])).unwrap();
    assert_eq!(tolerations(&labelled), tolerations(&c));
    let add = |key: &str| server.kubectl(&["patch", "pod", "c", "-n", "custom", "--type=json", "-p", &format!(r#"[{{"op": "add", "path": "/spec/tolerations/-", "value": {{"key": "{key}", "operator": "Exists", "effect": "NoSchedule"}}}}]"#)]);
    let out = add("team");
    assert_eq!(String::from_utf8_lossy(&out.stderr).trim_end(), "Error from server: pod tolerations (possibly merged with namespace default tolerations) conflict with its namespace whitelist");
    let out = add("gpu");
    assert!(out.status.success(), "{out:?}");

    // A configuration that is not one, or with invalid tolerations, stops the server at start.
    for (text, error) in [
        ("default: []\n", "PodTolerationRestriction: the configuration is not a Configuration of podtolerationrestriction.admission.k8s.io/v1alpha1 (kind \"\", apiVersion \"\")"),
        ("apiVersion: podtolerationrestriction.admission.k8s.io/v1alpha1\nkind: Configuration\nwhitelist:\n- {key: k, operator: Exists, value: v}\n",
            "PodTolerationRestriction: invalid config: [podtolerationrestriction.whitelist[0].operator: Invalid value: \"v\": value must be empty when `operator` is 'Exists']"),
    ] {
        write(dir.path(), "tolerations.yaml", text);
        let mut bad = TestServer::new(&["--enable-admission-plugins=PodTolerationRestriction", "--admission-control-config-file", &config]);
        bad.launch();
        let err = bad.wait_ready().await.unwrap_err();
        assert!(err.contains(error), "{err}");
    }
}
