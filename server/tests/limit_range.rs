//! LimitRanger against the real binary with kubectl: a namespace's LimitRange defaults fill a
//! new pod's containers (recorded in the `kubernetes.io/limit-ranger` annotation, the QoS class
//! following them), and pods and claims outside its bounds are refused with Kubernetes'
//! messages.

use crate::common;

use common::TestServer;
use serde_json::{json, Value};

/// Creates `obj` in namespace `ns` from a file; returns kubectl's output.
fn create(s: &TestServer, ns: &str, obj: &Value) -> std::process::Output {
    let path = s.dir().join(format!("{}-{}.json", obj["kind"].as_str().unwrap(), obj["metadata"]["name"].as_str().unwrap()));
    std::fs::write(&path, obj.to_string()).unwrap();
    s.kubectl(&["-n", ns, "create", "-f", path.to_str().unwrap()])
}

fn pod(name: &str, resources: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": [{"name": "app", "image": "busybox", "resources": resources}], "automountServiceAccountToken": false}})
}

fn refusal(out: &std::process::Output) -> String {
    assert!(!out.status.success(), "expected a refusal: {}", String::from_utf8_lossy(&out.stdout));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn defaults_fill_new_pods_and_are_recorded() {
    let s = TestServer::start().await;
    s.kubectl_ok(&["create", "namespace", "lr"]);
    let range = json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "defaults"}, "spec": {"limits": [
        {"type": "Container", "default": {"cpu": "500m", "memory": "256Mi"}, "defaultRequest": {"cpu": "0.1", "memory": "128Mi"}},
    ]}});
    assert!(create(&s, "lr", &range).status.success());
    assert!(create(&s, "lr", &pod("bare", json!({}))).status.success());
    let got: Value = serde_json::from_str(&s.kubectl_ok(&["-n", "lr", "get", "pod", "bare", "-o", "json"])).unwrap();
    assert_eq!(got["spec"]["containers"][0]["resources"], json!({"limits": {"cpu": "500m", "memory": "256Mi"}, "requests": {"cpu": "100m", "memory": "128Mi"}}));
    assert_eq!(got["metadata"]["annotations"]["kubernetes.io/limit-ranger"], "LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app");
    // Classed by the resources the defaults gave it, not as the BestEffort pod it was sent as.
    assert_eq!(got["status"]["qosClass"], "Burstable");

    // What the pod names is kept; only the rest is filled.
    assert!(create(&s, "lr", &pod("partial", json!({"limits": {"memory": "64Mi"}}))).status.success());
    let got: Value = serde_json::from_str(&s.kubectl_ok(&["-n", "lr", "get", "pod", "partial", "-o", "json"])).unwrap();
    assert_eq!(got["spec"]["containers"][0]["resources"], json!({"limits": {"cpu": "500m", "memory": "64Mi"}, "requests": {"cpu": "100m", "memory": "64Mi"}}));
    assert_eq!(got["metadata"]["annotations"]["kubernetes.io/limit-ranger"], "LimitRanger plugin set: cpu request for container app; cpu limit for container app");

    // A namespace without ranges is left alone.
    s.kubectl_ok(&["create", "namespace", "free"]);
    assert!(create(&s, "free", &pod("bare", json!({}))).status.success());
    let got: Value = serde_json::from_str(&s.kubectl_ok(&["-n", "free", "get", "pod", "bare", "-o", "json"])).unwrap();
    assert!(got["metadata"]["annotations"].get("kubernetes.io/limit-ranger").is_none(), "{got}");
    assert_eq!(got["status"]["qosClass"], "BestEffort");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bounds_refuse_pods_and_claims_in_kubernetes_words() {
    let s = TestServer::start().await;
    s.kubectl_ok(&["create", "namespace", "lr"]);
    let range = json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "bounds"}, "spec": {"limits": [
        {"type": "Container", "min": {"cpu": "100m"}, "max": {"memory": "1Gi"}},
        {"type": "Pod", "maxLimitRequestRatio": {"cpu": "4"}},
        {"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "10Gi"}},
    ]}});
    assert!(create(&s, "lr", &range).status.success());

    let err = refusal(&create(&s, "lr", &pod("p", json!({"requests": {"cpu": "50m"}, "limits": {"cpu": "100m", "memory": "2Gi"}}))));
    assert!(
        err.contains(r#"pods "p" is forbidden: [minimum cpu usage per Container is 100m, but request is 50m, maximum memory usage per Container is 1Gi, but limit is 2Gi]"#),
        "{err}"
    );
    let err = refusal(&create(&s, "lr", &pod("ratio", json!({"requests": {"cpu": "100m", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}))));
    assert!(err.contains(r#"pods "ratio" is forbidden: cpu max limit to request ratio per Pod is 4, but provided ratio is 10.000000"#), "{err}");
    assert!(create(&s, "lr", &pod("fits", json!({"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"cpu": "500m", "memory": "1Gi"}}))).status.success());

    let claim = |name: &str, storage: &str| {
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": storage}}}})
    };
    let err = refusal(&create(&s, "lr", &claim("small", "500Mi")));
    assert!(err.contains(r#"persistentvolumeclaims "small" is forbidden: minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi"#), "{err}");
    let err = refusal(&create(&s, "lr", &claim("big", "20Gi")));
    assert!(err.contains(r#"persistentvolumeclaims "big" is forbidden: maximum storage usage per PersistentVolumeClaim is 10Gi, but request is 20Gi"#), "{err}");
    assert!(create(&s, "lr", &claim("right", "5Gi")).status.success());
}
