//! Versions as an operator sets them: Kubernetes 1.36 by default, an emulated 1.34 or 1.35
//! (`--emulated-version`), feature gates taken at that version (`--feature-gates`, reported in
//! `kubernetes_feature_enabled`), built-in APIs switched by `--runtime-config`, and the start
//! refused with kube-apiserver's messages when a flag asks for what cannot be.

use crate::common;

use common::TestServer;
use serde_json::Value;

fn version(s: &TestServer) -> Value {
    serde_json::from_str(&s.kubectl_ok(&["get", "--raw", "/version"])).unwrap()
}

/// `kubernetes_feature_enabled` for one gate: its stage label and value.
fn feature(s: &TestServer, name: &str) -> Option<(String, String)> {
    let metrics = s.kubectl_ok(&["get", "--raw", "/metrics"]);
    let prefix = format!("kubernetes_feature_enabled{{name=\"{name}\",stage=\"");
    metrics.lines().find_map(|l| l.strip_prefix(&prefix)).map(|rest| {
        let (stage, value) = rest.split_once("\"} ").unwrap();
        (stage.to_string(), value.to_string())
    })
}

fn api_resources(s: &TestServer, group: &str) -> String {
    s.kubectl_ok(&["api-resources", &format!("--api-group={group}"), "-o", "wide"])
}

#[tokio::test(flavor = "multi_thread")]
async fn kubernetes_1_36_by_default() {
    let s = TestServer::start().await;
    let v = version(&s);
    for (field, want) in [("major", "1"), ("minor", "36"), ("emulationMajor", "1"), ("emulationMinor", "36"), ("minCompatibilityMajor", "1"), ("minCompatibilityMinor", "35")] {
        assert_eq!(v[field], want, "{field} in {v}");
    }
    assert!(v["gitVersion"].as_str().unwrap().starts_with("v1.36."), "{v}");
    // GA in 1.36: MutatingAdmissionPolicies served in admissionregistration.k8s.io/v1, the
    // storage-readiness check on, and the gates reported with their stages.
    let resources = api_resources(&s, "admissionregistration.k8s.io");
    assert!(resources.lines().any(|l| l.starts_with("mutatingadmissionpolicies ") && l.contains("admissionregistration.k8s.io/v1 ")), "{resources}");
    assert!(s.kubectl_ok(&["get", "--raw", "/readyz?verbose"]).contains("[+]poststarthook/storage-readiness ok"));
    assert_eq!(feature(&s, "MutatingAdmissionPolicy"), Some((String::new(), "1".into())));
    assert_eq!(feature(&s, "CBORServingAndStorage"), Some(("ALPHA".into(), "0".into())));
    assert_eq!(feature(&s, "WatchList"), Some(("BETA".into(), "1".into())));
    assert_eq!(feature(&s, "ShardedListAndWatch"), Some(("ALPHA".into(), "0".into())));
    // The beta version stays off until asked for.
    let beta = s.get("/apis/admissionregistration.k8s.io/v1beta1/mutatingadmissionpolicies").await;
    assert_eq!(beta.status, 404, "{}", beta.text());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_emulated_release_serves_what_it_served() {
    let s = TestServer::start_with(&["--emulated-version=1.34"]).await;
    let v = version(&s);
    assert_eq!((v["minor"].as_str(), v["emulationMinor"].as_str(), v["minCompatibilityMinor"].as_str()), (Some("36"), Some("34"), Some("33")), "{v}");
    // 1.34 had no v1 MutatingAdmissionPolicy and kept the gate off; the readiness check was off.
    let resources = api_resources(&s, "admissionregistration.k8s.io");
    assert!(!resources.contains("mutatingadmissionpolicies"), "{resources}");
    assert!(!s.kubectl_ok(&["get", "--raw", "/readyz?verbose"]).contains("storage-readiness"));
    assert_eq!(feature(&s, "MutatingAdmissionPolicy"), Some(("BETA".into(), "0".into())));
    assert_eq!(feature(&s, "ShardedListAndWatch"), None, "introduced in 1.36");
    // With the beta version asked for, and the gate on, 1.34's MutatingAdmissionPolicies work.
    let s = TestServer::start_with(&["--emulated-version=1.34", "--runtime-config=admissionregistration.k8s.io/v1beta1=true", "--feature-gates=MutatingAdmissionPolicy=true"]).await;
    let resources = api_resources(&s, "admissionregistration.k8s.io");
    assert!(resources.lines().any(|l| l.starts_with("mutatingadmissionpolicies ") && l.contains("admissionregistration.k8s.io/v1beta1 ")), "{resources}");
    assert!(!resources.lines().any(|l| l.starts_with("mutatingadmissionpolicies ") && l.contains("admissionregistration.k8s.io/v1 ")), "{resources}");
    // Forward compatible: the newer v1 follows the beta version served, though 1.36 brought it.
    let s = TestServer::start_with(&[
        "--emulated-version=1.35",
        "--runtime-config=admissionregistration.k8s.io/v1beta1=true",
        "--feature-gates=MutatingAdmissionPolicy=true",
        "--emulation-forward-compatible",
    ])
    .await;
    let resources = api_resources(&s, "admissionregistration.k8s.io");
    assert!(resources.lines().any(|l| l.starts_with("mutatingadmissionpolicies ") && l.contains("admissionregistration.k8s.io/v1 ")), "{resources}");
    // And a resource newer than the emulated release, named on.
    let s = TestServer::start_with(&["--emulated-version=1.35", "--runtime-config=admissionregistration.k8s.io/v1/mutatingadmissionpolicies=true", "--runtime-config-emulation-forward-compatible"]).await;
    let resources = api_resources(&s, "admissionregistration.k8s.io");
    assert!(resources.lines().any(|l| l.starts_with("mutatingadmissionpolicies ") && l.contains("admissionregistration.k8s.io/v1 ")), "{resources}");
}

#[tokio::test(flavor = "multi_thread")]
async fn runtime_config_switches_versions_and_resources() {
    let s = TestServer::start_with(&["--runtime-config=autoscaling/v1=false,/v1/podtemplates=false"]).await;
    let versions = s.kubectl_ok(&["api-versions"]);
    assert!(!versions.lines().any(|l| l == "autoscaling/v1") && versions.lines().any(|l| l == "autoscaling/v2"), "{versions}");
    assert_eq!(s.get("/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers").await.status, 404);
    assert_eq!(s.get("/api/v1/namespaces/default/podtemplates").await.status, 404);
    assert_eq!(s.get("/api/v1/namespaces/default/configmaps").await.status, 200);
    let openapi: Value = serde_json::from_str(&s.kubectl_ok(&["get", "--raw", "/openapi/v3"])).unwrap();
    assert!(openapi["paths"].get("apis/autoscaling/v1").is_none() && openapi["paths"].get("apis/autoscaling/v2").is_some(), "{openapi}");
    // An object written through the version still served is read through it.
    let hpa = r#"{"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "minReplicas": 1, "maxReplicas": 3}}"#;
    let path = s.dir().join("hpa.json");
    std::fs::write(&path, hpa).unwrap();
    s.kubectl_ok(&["create", "-f", path.to_str().unwrap()]);
    assert_eq!(s.kubectl_ok(&["get", "horizontalpodautoscalers.v2.autoscaling", "web", "-o", "jsonpath={.spec.maxReplicas}"]), "3");
    let resources = s.kubectl_ok(&["api-resources", "--api-group="]);
    assert!(!resources.contains("podtemplates") && resources.contains("configmaps"), "{resources}");
}

#[tokio::test(flavor = "multi_thread")]
async fn impossible_settings_stop_the_start_with_kubernetes_messages() {
    for (flag, message) in [
        ("--emulated-version=1.33", "emulation version 1.33 is not between [1.34, 1.36.0]"),
        ("--emulated-version=1.35.1", "patch version not allowed, got: kube=1.35.1"),
        ("--feature-gates=APIServerTracing=false", "cannot set feature gate APIServerTracing to false, feature is locked to true"),
        ("--feature-gates=CBORServingAndStorage=maybe", "invalid value of CBORServingAndStorage=maybe"),
        ("--runtime-config=foo.example.com/v1=true", "unknown api groups foo.example.com/v1"),
        ("--runtime-config=apps/v1beta3=true", "group version apps/v1beta3 that has not been registered"),
        ("--runtime-config=flowcontrol.apiserver.k8s.io/v1=false", "--runtime-config=flowcontrol.apiserver.k8s.io/v1=false conflicts with --enable-priority-and-fairness=true"),
        // What this server's own hooks and controllers need stays on.
        ("--runtime-config=scheduling.k8s.io/v1=false", "it switches off scheduling.k8s.io/v1/priorityclasses, which this server's own post-start hooks and controllers write"),
        ("--runtime-config=api/all=false,v1=true,flowcontrol.apiserver.k8s.io/v1=true", "which this server's own post-start hooks and controllers write"),
        ("--emulation-forward-compatible", "ServerRunOptions.EmulationForwardCompatible cannot be set to true if the emulation version is the same as the binary version"),
    ] {
        let mut s = TestServer::new(&[flag]);
        s.launch();
        let log = s.wait_ready().await.expect_err(flag);
        assert!(log.contains(message), "{flag}: {log}");
    }
    let mut s = TestServer::new(&["--emulated-version=1.35", "--runtime-config=admissionregistration.k8s.io/v1/mutatingadmissionpolicies=true"]);
    s.launch();
    let log = s.wait_ready().await.expect_err("a resource newer than the emulated release");
    assert!(log.contains("cannot enable resource admissionregistration.k8s.io/v1, Resource=mutatingadmissionpolicies in runtime-config because it is introduced at 1.36 after the current version 1.35"), "{log}");
}

#[tokio::test(flavor = "multi_thread")]
async fn gates_set_but_not_known_or_not_implemented_are_warned_about() {
    let s = TestServer::start_with(&["--feature-gates=NoSuchGate=true,HPAScaleToZero=true,CBORServingAndStorage=true"]).await;
    let log = s.log();
    assert!(log.contains("unrecognized feature gate: NoSuchGate"), "{log}");
    assert!(log.contains("HPAScaleToZero is accepted but not implemented"), "{log}");
    assert_eq!(feature(&s, "HPAScaleToZero"), Some(("ALPHA".into(), "1".into())));
    assert_eq!(feature(&s, "CBORServingAndStorage"), Some(("ALPHA".into(), "1".into())));
}

#[tokio::test(flavor = "multi_thread")]
async fn deprecated_kinds_warn_as_kube_apiserver_does() {
    let s = TestServer::start().await;
    let out = s.kubectl(&["get", "componentstatuses"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("Warning: v1 ComponentStatus is deprecated in v1.19+"), "{out:?}");
    let out = s.kubectl(&["get", "endpoints", "-A"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("Warning: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"), "{out:?}");
    let metrics = s.kubectl_ok(&["get", "--raw", "/metrics"]);
    assert!(metrics.lines().any(|l| l.starts_with("apiserver_requested_deprecated_apis{") && l.contains("resource=\"componentstatuses\"") && l.ends_with(" 1")), "{metrics}");
}
