//! Graceful deletion of pods against the real binary: a pod never scheduled goes at once; a
//! scheduled pod is marked with its grace period (`terminationGracePeriodSeconds`, or the
//! delete's `gracePeriodSeconds`) and goes when it ends; a later delete may shorten it, and
//! `kubectl delete --grace-period=0 --force` ends it at once. The subresources that change one
//! part of a pod: `kubectl debug` adds an ephemeral container, `kubectl patch --subresource
//! resize` changes a container's resources, and neither changes anything else.

use crate::common;

use std::time::{Duration, Instant};

use common::TestServer;
use serde_json::{json, Value};

fn pod(name: &str, node: Option<&str>, grace: Option<i64>) -> Value {
    let mut spec = json!({"containers": [{"name": "c", "image": "busybox"}], "automountServiceAccountToken": false});
    if let Some(n) = node {
        spec["nodeName"] = json!(n);
    }
    if let Some(g) = grace {
        spec["terminationGracePeriodSeconds"] = json!(g);
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})
}

fn create(s: &TestServer, dir: &std::path::Path, obj: &Value) {
    let path = dir.join(format!("{}.json", obj["metadata"]["name"].as_str().unwrap()));
    std::fs::write(&path, obj.to_string()).unwrap();
    s.kubectl_ok(&["create", "-f", path.to_str().unwrap()]);
}

fn get(s: &TestServer, name: &str) -> Option<Value> {
    let out = s.kubectl(&["get", "pod", name, "-o", "json"]);
    out.status.success().then(|| serde_json::from_slice(&out.stdout).unwrap())
}

async fn gone_within(s: &TestServer, name: &str, limit: Duration) -> Duration {
    let started = Instant::now();
    while get(s, name).is_some() {
        assert!(started.elapsed() < limit, "{name} still there after {limit:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    started.elapsed()
}

#[tokio::test(flavor = "multi_thread")]
async fn pods_end_after_their_grace_period() {
    let s = TestServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    while !s.kubectl(&["get", "serviceaccount", "default"]).status.success() {
        assert!(started.elapsed() < Duration::from_secs(20), "no default service account");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // Never scheduled: gone at once.
    create(&s, dir.path(), &pod("pending", None, None));
    s.kubectl_ok(&["delete", "pod", "pending", "--wait=false"]);
    assert!(get(&s, "pending").is_none());

    // Scheduled, 2 s of grace: marked, then gone.
    create(&s, dir.path(), &pod("short", Some("node-1"), Some(2)));
    s.kubectl_ok(&["delete", "pod", "short", "--wait=false"]);
    let marked = get(&s, "short").expect("a scheduled pod stays while its grace lasts");
    assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 2);
    assert!(marked["metadata"]["deletionTimestamp"].is_string());
    gone_within(&s, "short", Duration::from_secs(8)).await;

    // A terminating pod's status updates (its kubelet reporting its containers stopped) keep it:
    // it goes when its kubelet deletes it, or when its grace ends.
    create(&s, dir.path(), &pod("stopping", Some("node-1"), Some(30)));
    s.kubectl_ok(&["delete", "pod", "stopping", "--wait=false"]);
    s.kubectl_ok(&["patch", "pod", "stopping", "--subresource=status", "--type=merge", "-p", r#"{"status":{"phase":"Succeeded"}}"#]);
    let stopped = get(&s, "stopping").expect("a terminating pod stays through a status update while its grace lasts");
    assert_eq!(stopped["status"]["phase"], "Succeeded");
    s.kubectl_ok(&["delete", "pod", "stopping", "--wait=false", "--grace-period=0"]);
    assert!(get(&s, "stopping").is_none());

    // The default 30 s, shortened by a second delete, then ended by force.
    create(&s, dir.path(), &pod("long", Some("node-1"), None));
    s.kubectl_ok(&["delete", "pod", "long", "--wait=false"]);
    assert_eq!(get(&s, "long").unwrap()["metadata"]["deletionGracePeriodSeconds"], 30);
    s.kubectl_ok(&["delete", "pod", "long", "--wait=false", "--grace-period=10"]);
    assert_eq!(get(&s, "long").unwrap()["metadata"]["deletionGracePeriodSeconds"], 10);
    s.kubectl_ok(&["delete", "pod", "long", "--wait=false", "--grace-period=20"]);
    assert_eq!(get(&s, "long").unwrap()["metadata"]["deletionGracePeriodSeconds"], 10, "a longer grace does not replace a shorter one");
    s.kubectl_ok(&["delete", "pod", "long", "--grace-period=0", "--force"]);
    assert!(get(&s, "long").is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn debug_adds_ephemeral_containers_and_resize_changes_resources_only() {
    let s = TestServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    create(&s, dir.path(), &pod("web", Some("node-1"), None));
    s.kubectl_ok(&["debug", "web", "--image=busybox", "--container=dbg", "--attach=false"]);
    let debugged = get(&s, "web").unwrap();
    assert_eq!(debugged["spec"]["ephemeralContainers"][0]["name"], "dbg", "{debugged}");
    assert_eq!(debugged["spec"]["containers"][0]["image"], "busybox");
    // An ephemeral container cannot be taken away again.
    let out = s.kubectl(&["patch", "pod", "web", "--subresource=ephemeralcontainers", "--type=json", "-p", r#"[{"op": "remove", "path": "/spec/ephemeralContainers/0"}]"#]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains(r#"existing ephemeral containers "dbg" may not be removed"#), "{stderr}");

    let mut sized = pod("sized", Some("node-1"), None);
    sized["spec"]["containers"][0]["resources"] = json!({"requests": {"cpu": "100m"}});
    create(&s, dir.path(), &sized);
    let resize = r#"{"spec": {"containers": [{"name": "c", "image": "other", "resources": {"requests": {"cpu": "200m"}}}]}}"#;
    s.kubectl_ok(&["patch", "pod", "sized", "--subresource=resize", "-p", resize]);
    let resized = get(&s, "sized").unwrap();
    assert_eq!(resized["spec"]["containers"][0]["resources"]["requests"]["cpu"], "200m", "{resized}");
    assert_eq!(resized["spec"]["containers"][0]["image"], "busybox", "resize changes resources only");
    // Not into another QoS class (BestEffort to Burstable here).
    let out = s.kubectl(&["patch", "pod", "web", "--subresource=resize", "-p", resize]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("Pod QOS Class may not change as a result of resizing"), "{stderr}");
    // Nothing but cpu and memory.
    let storage = r#"{"spec": {"containers": [{"name": "c", "resources": {"requests": {"ephemeral-storage": "1Gi"}}}]}}"#;
    let out = s.kubectl(&["patch", "pod", "sized", "--subresource=resize", "-p", storage]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("spec: Forbidden: only cpu and memory resources are mutable"), "{stderr}");
    // A plain update still may not.
    let out = s.kubectl(&["patch", "pod", "sized", "-p", r#"{"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "300m"}}}]}}"#]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("pod updates may not change fields other than"), "{stderr}");
}
