//! The server's controllers write as clients of the server: each request is authenticated as the
//! controller's own identity, authorized by RBAC's default policy, and audited like any other.
//! Taking a permission away from a controller's role stops its work with 403s, which it logs.

use crate::common;

use std::time::{Duration, Instant};

use common::TestServer;
use serde_json::{json, Value};

const AGGREGATOR: &str = "system:serviceaccount:kube-system:clusterrole-aggregation-controller";

const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  resources: [{group: "rbac.authorization.k8s.io", resources: ["clusterroles"]}]
"#;

/// An aggregated ClusterRole `name` selecting roles labelled `aggregate-to-NAME`, and a role
/// with that label granting `verb` on pods.
fn create_aggregation(s: &TestServer, name: &str, verb: &str) {
    let manifest = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
         "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {format!("aggregate-to-{name}"): "true"}}]}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": format!("{name}-part"), "labels": {format!("aggregate-to-{name}"): "true"}},
         "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": [verb]}]},
    ]});
    let path = s.dir().join(format!("{name}.json"));
    std::fs::write(&path, manifest.to_string()).unwrap();
    s.kubectl_ok(&["apply", "-f", path.to_str().unwrap()]);
}

fn rules(s: &TestServer, name: &str) -> Value {
    let role: Value = serde_json::from_str(&s.kubectl_ok(&["get", "clusterrole", name, "-o", "json"])).unwrap();
    role["rules"].clone()
}

/// Audit events of `verb` on the ClusterRole `name`.
fn audited(log: &std::path::Path, verb: &str, name: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["verb"] == verb && e["objectRef"]["name"] == name)
        .collect()
}

#[tokio::test]
async fn a_controller_writes_as_its_own_identity_and_is_refused_without_its_permission() {
    let dir = tempfile::tempdir().unwrap();
    let (policy, log) = (dir.path().join("policy.yaml"), dir.path().join("audit.log"));
    std::fs::write(&policy, POLICY).unwrap();
    let s = TestServer::start_with(&["--audit-policy-file", policy.to_str().unwrap(), "--audit-log-path", log.to_str().unwrap()]).await;

    // With the default policy, the aggregation controller fills the role in, as itself.
    create_aggregation(&s, "granted", "get");
    let deadline = Instant::now() + Duration::from_secs(20);
    while rules(&s, "granted") != json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]) {
        assert!(Instant::now() < deadline, "the aggregated role was never filled in: {}", rules(&s, "granted"));
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    let updates = loop {
        let updates = audited(&log, "update", "granted");
        if !updates.is_empty() || Instant::now() > deadline {
            break updates;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(!updates.is_empty(), "the controller's update is audited");
    for update in &updates {
        assert_eq!(update["user"]["username"], AGGREGATOR, "{update}");
        assert_eq!(update["responseStatus"]["code"], 200, "{update}");
        assert_eq!(update["annotations"]["authorization.k8s.io/decision"], "allow", "{update}");
    }

    // Its role loses `update` (kept so across restarts by autoupdate=false): the next
    // aggregation is refused, logged, and the role stays empty.
    let role = "system:controller:clusterrole-aggregation-controller";
    s.kubectl_ok(&["annotate", "clusterrole", role, "rbac.authorization.kubernetes.io/autoupdate=false", "--overwrite"]);
    let narrowed = json!([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "verbs": ["get", "list", "watch"]}]);
    s.kubectl_ok(&["patch", "clusterrole", role, "--type=merge", "-p", &json!({"rules": narrowed}).to_string()]);
    create_aggregation(&s, "refused", "list");
    let deadline = Instant::now() + Duration::from_secs(20);
    let refusal = format!("User \\\"{AGGREGATOR}\\\" cannot update resource \\\"clusterroles\\\"");
    let plain = format!("User \"{AGGREGATOR}\" cannot update resource \"clusterroles\"");
    while !(s.log().contains(&refusal) || s.log().contains(&plain)) {
        assert!(Instant::now() < deadline, "no refusal of the controller's update in the log:\n{}", s.log());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(rules(&s, "refused").as_array().is_none_or(Vec::is_empty), "refused: {}", rules(&s, "refused"));
    let deadline = Instant::now() + Duration::from_secs(5);
    let refused = loop {
        let refused: Vec<Value> = audited(&log, "update", "refused").into_iter().filter(|e| e["responseStatus"]["code"] == 403).collect();
        if !refused.is_empty() || Instant::now() > deadline {
            break refused;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(!refused.is_empty(), "the refused update is audited with its 403");
    assert_eq!(refused[0]["user"]["username"], AGGREGATOR);
    assert_eq!(refused[0]["annotations"]["authorization.k8s.io/decision"], "forbid");
}
