//! PodSecurity admission against the real binary with kubectl: a namespace's enforce level
//! refuses pods with kube-apiserver's message, warn answers with kubectl's `Warning:` lines,
//! pod-template kinds are only warned about, relabelling a namespace names the existing pods
//! the new level would refuse, a pinned version applies the checks of that version, and the
//! configuration file's defaults and exemptions apply (with the audit annotations).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use common::TestServer;
use serde_json::{json, Value};

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A pod manifest written to `dir`: one container `c` with `container` as its security context.
fn pod_file(dir: &Path, name: &str, pod_security: Value, container: Value) -> PathBuf {
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"securityContext": pod_security, "containers": [{"name": "c", "image": "nginx", "securityContext": container}]},
    });
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, pod.to_string()).unwrap();
    path
}

fn namespace(s: &TestServer, name: &str, labels: &[&str]) {
    s.kubectl_ok(&["create", "namespace", name]);
    if !labels.is_empty() {
        s.kubectl_ok(&[&["label", "namespace", name], labels].concat());
    }
}

/// What the restricted level asks of a container, and of its pod.
fn restricted_container() -> Value {
    json!({"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}})
}
fn restricted_pod() -> Value {
    json!({"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}})
}

const PLAIN_POD_RESTRICTED: &str = "allowPrivilegeEscalation != false (container \"p\" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container \"p\" must set securityContext.capabilities.drop=[\"ALL\"]), runAsNonRoot != true (pod or container \"p\" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container \"p\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enforce_refuses_pods_at_the_namespace_s_level_and_version() {
    let s = TestServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    namespace(&s, "strict", &["pod-security.kubernetes.io/enforce=restricted"]);

    let out = s.kubectl(&["run", "p", "--image=nginx", "-n", "strict"]);
    assert!(!out.status.success());
    assert_eq!(stderr(&out).trim(), format!("Error from server (Forbidden): pods \"p\" is forbidden: violates PodSecurity \"restricted:latest\": {PLAIN_POD_RESTRICTED}"));
    let compliant = pod_file(dir.path(), "ok", restricted_pod(), restricted_container());
    let out = s.kubectl(&["create", "-f", compliant.to_str().unwrap(), "-n", "strict"]);
    assert!(out.status.success() && stderr(&out).is_empty(), "{}", stderr(&out));

    // Baseline refuses a privileged container and nothing of restricted's.
    namespace(&s, "base", &["pod-security.kubernetes.io/enforce=baseline"]);
    let privileged = pod_file(dir.path(), "priv", json!({}), json!({"privileged": true}));
    let out = s.kubectl(&["create", "-f", privileged.to_str().unwrap(), "-n", "base"]);
    assert_eq!(
        stderr(&out).trim(),
        "Error from server (Forbidden): error when creating \"".to_string()
            + privileged.to_str().unwrap()
            + "\": pods \"priv\" is forbidden: violates PodSecurity \"baseline:latest\": privileged (container \"c\" must not set securityContext.privileged=true)"
    );
    s.kubectl_ok(&["run", "plain", "--image=nginx", "-n", "base"]);

    // runAsUser=0 is refused from policy version v1.23 on: a namespace pinned to v1.22 takes
    // the pod, one at latest does not.
    namespace(&s, "old", &["pod-security.kubernetes.io/enforce=restricted", "pod-security.kubernetes.io/enforce-version=v1.22"]);
    let root = pod_file(dir.path(), "root", json!({"runAsNonRoot": true, "runAsUser": 0, "seccompProfile": {"type": "RuntimeDefault"}}), restricted_container());
    let out = s.kubectl(&["create", "-f", root.to_str().unwrap(), "-n", "old"]);
    assert!(out.status.success() && stderr(&out).is_empty(), "{}", stderr(&out));
    let out = s.kubectl(&["create", "-f", root.to_str().unwrap(), "-n", "strict"]);
    assert!(stderr(&out).ends_with("pods \"root\" is forbidden: violates PodSecurity \"restricted:latest\": runAsUser=0 (pod must not set runAsUser=0)\n"), "{}", stderr(&out));

    // An update that changes no image is not evaluated; one that does is.
    s.kubectl_ok(&["label", "namespace", "old", "pod-security.kubernetes.io/enforce-version=latest", "--overwrite"]);
    s.kubectl_ok(&["label", "pod", "root", "-n", "old", "touched=yes"]);
    let out = s.kubectl(&["set", "image", "pod/root", "c=nginx:1.27", "-n", "old"]);
    assert!(stderr(&out).contains("pods \"root\" is forbidden: violates PodSecurity \"restricted:latest\": runAsUser=0 (pod must not set runAsUser=0)"), "{}", stderr(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warn_templates_and_relabelled_namespaces_answer_with_warnings() {
    let s = TestServer::start().await;
    let dir = tempfile::tempdir().unwrap();

    // warn: the pod is created, and kubectl shows the warning.
    namespace(&s, "watched", &["pod-security.kubernetes.io/warn=baseline"]);
    let privileged = pod_file(dir.path(), "priv", json!({}), json!({"privileged": true}));
    let out = s.kubectl(&["create", "-f", privileged.to_str().unwrap(), "-n", "watched"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), "Warning: would violate PodSecurity \"baseline:latest\": privileged (container \"c\" must not set securityContext.privileged=true)\n");

    // A Deployment is never refused, only warned about (warn follows a stricter enforce).
    namespace(&s, "strict", &["pod-security.kubernetes.io/enforce=restricted"]);
    let out = s.kubectl(&["create", "deployment", "web", "--image=nginx", "-n", "strict"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), format!("Warning: would violate PodSecurity \"restricted:latest\": {}\n", PLAIN_POD_RESTRICTED.replace("\"p\"", "\"nginx\"")));
    s.kubectl_ok(&["get", "deployment", "web", "-n", "strict"]);

    // Labelling a namespace with an enforce level its pods break: warnings name them, pods
    // with the same reasons together under the first name.
    namespace(&s, "busy", &[]);
    for name in ["b-priv", "a-priv"] {
        let file = pod_file(dir.path(), name, json!({}), json!({"privileged": true}));
        s.kubectl_ok(&["create", "-f", file.to_str().unwrap(), "-n", "busy"]);
    }
    let host = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "host"}, "spec": {"hostNetwork": true, "containers": [{"name": "c", "image": "nginx"}]}});
    std::fs::write(dir.path().join("host.json"), host.to_string()).unwrap();
    s.kubectl_ok(&["create", "-f", dir.path().join("host.json").to_str().unwrap(), "-n", "busy"]);
    s.kubectl_ok(&["run", "plain", "--image=nginx", "-n", "busy"]);
    let out = s.kubectl(&["label", "namespace", "busy", "pod-security.kubernetes.io/enforce=baseline"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "Warning: existing pods in namespace \"busy\" violate the new PodSecurity enforce level \"baseline:latest\"\n\
         Warning: a-priv (and 1 other pod): privileged\n\
         Warning: host: host namespaces\n"
    );
    // Relaxing it says nothing; a value that names no level is refused.
    let out = s.kubectl(&["label", "namespace", "busy", "pod-security.kubernetes.io/enforce=privileged", "--overwrite"]);
    assert!(out.status.success() && stderr(&out).is_empty(), "{}", stderr(&out));
    let out = s.kubectl(&["label", "namespace", "busy", "pod-security.kubernetes.io/enforce=strict", "--overwrite"]);
    assert_eq!(
        stderr(&out).trim(),
        "The Namespace \"busy\" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: \"strict\": must be one of privileged, baseline, restricted"
    );
    let bad = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bad", "labels": {"pod-security.kubernetes.io/warn-version": "1.30"}}});
    std::fs::write(dir.path().join("bad.json"), bad.to_string()).unwrap();
    let out = s.kubectl(&["create", "-f", dir.path().join("bad.json").to_str().unwrap()]);
    assert!(stderr(&out).contains("Namespace \"bad\" is invalid: metadata.labels[pod-security.kubernetes.io/warn-version]: Invalid value: \"1.30\": must be \"latest\" or \"v1.x\""), "{}", stderr(&out));
}

/// The audit event of the create of pod `name` in `namespace`, once written.
async fn pod_event(log: &Path, namespace: &str, name: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let found = text.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).find(|e| e["verb"] == "create" && e["objectRef"]["resource"] == "pods" && e["objectRef"]["namespace"] == namespace && e["objectRef"]["name"] == name && e["stage"] == "ResponseComplete");
        match found {
            Some(event) => return event,
            None if Instant::now() > deadline => panic!("no audit event for pod {name}"),
            None => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_configuration_sets_defaults_and_exemptions() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("admission.yaml");
    std::fs::write(
        &config,
        "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: PodSecurity\n  configuration:\n    apiVersion: pod-security.admission.config.k8s.io/v1\n    kind: PodSecurityConfiguration\n    defaults:\n      enforce: baseline\n      audit: restricted\n    exemptions:\n      namespaces: [free]\n      usernames: [ci-bot]\n",
    )
    .unwrap();
    let (policy, log) = (dir.path().join("policy.yaml"), dir.path().join("audit.log"));
    std::fs::write(&policy, "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  resources: [{group: \"\", resources: [pods]}]\n").unwrap();
    let s = TestServer::start_with(&["--admission-control-config-file", config.to_str().unwrap(), "--audit-policy-file", policy.to_str().unwrap(), "--audit-log-path", log.to_str().unwrap()]).await;

    // Without labels a namespace enforces the default level, and audits at restricted.
    namespace(&s, "plain", &[]);
    let privileged = pod_file(dir.path(), "priv", json!({}), json!({"privileged": true}));
    let out = s.kubectl(&["create", "-f", privileged.to_str().unwrap(), "-n", "plain"]);
    assert!(stderr(&out).ends_with("pods \"priv\" is forbidden: violates PodSecurity \"baseline:latest\": privileged (container \"c\" must not set securityContext.privileged=true)\n"), "{}", stderr(&out));
    let refused = pod_event(&log, "plain", "priv").await;
    assert_eq!(refused["responseStatus"]["code"], 403, "{refused}");
    assert_eq!(refused["annotations"]["pod-security.kubernetes.io/enforce-policy"], "baseline:latest", "{refused}");
    s.kubectl_ok(&["run", "p", "--image=nginx", "-n", "plain"]);
    let event = pod_event(&log, "plain", "p").await;
    assert_eq!(event["annotations"]["pod-security.kubernetes.io/enforce-policy"], "baseline:latest", "{event}");
    assert_eq!(event["annotations"]["pod-security.kubernetes.io/audit-violations"], format!("would violate PodSecurity \"restricted:latest\": {PLAIN_POD_RESTRICTED}"), "{event}");

    // An exempt namespace takes the pod, and its labels draw a warning that they are ignored.
    let free = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "free", "labels": {"pod-security.kubernetes.io/enforce": "restricted"}}});
    std::fs::write(dir.path().join("free.json"), free.to_string()).unwrap();
    let out = s.kubectl(&["create", "-f", dir.path().join("free.json").to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), "Warning: namespace \"free\" is exempt from Pod Security, and the policy (enforce=restricted:latest) will be ignored\n");
    s.kubectl_ok(&["create", "-f", privileged.to_str().unwrap(), "-n", "free"]);
    let event = pod_event(&log, "free", "priv").await;
    assert_eq!(event["annotations"]["pod-security.kubernetes.io/exempt"], "namespace", "{event}");

    // An exempt user's pods are not evaluated either.
    let ci = s.kubeconfig_for("ci-bot", &["system:masters"]);
    let out = s.kubectl_as(&ci, &["create", "-f", privileged.to_str().unwrap(), "-n", "plain"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[tokio::test]
async fn an_invalid_configuration_stops_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("admission.yaml");
    std::fs::write(
        &config,
        "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: PodSecurity\n  configuration:\n    apiVersion: pod-security.admission.config.k8s.io/v1\n    kind: PodSecurityConfiguration\n    defaults:\n      enforce: strict\n",
    )
    .unwrap();
    let mut s = TestServer::new(&["--admission-control-config-file", config.to_str().unwrap()]);
    s.launch();
    assert!(s.wait_ready().await.is_err());
    assert!(s.log().contains("PodSecurity invalid: defaults.enforce: Invalid value: \"strict\": must be one of privileged, baseline, restricted"), "{}", s.log());
}
