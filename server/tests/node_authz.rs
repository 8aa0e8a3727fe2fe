//! The Node authorizer and NodeRestriction against the real binary, with kubectl as a kubelet
//! (`system:node:n1` in `system:nodes`) under the default `Node,RBAC` modes: what pods bound to
//! the node use is readable, nothing else; a node sees only its own Node and lists only its own
//! pods; it changes only its own Node, lease and pods.

use crate::common;

use std::path::Path;

use common::{expect_success, TestServer};
use serde_json::{json, Value};

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs kubectl as the node and expects a refusal containing `message`.
fn refused(server: &TestServer, node: &Path, args: &[&str], message: &str) {
    let out = server.kubectl_as(node, args);
    assert!(!out.status.success(), "{args:?} should be refused");
    assert!(stderr(&out).contains(message), "{args:?}: {}", stderr(&out));
}

fn apply(server: &TestServer, kubeconfig: Option<&Path>, object: Value) -> std::process::Output {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), serde_json::to_vec(&object).unwrap()).unwrap();
    let path = file.path().to_str().unwrap();
    match kubeconfig {
        Some(k) => server.kubectl_as(k, &["create", "-f", path]),
        None => server.kubectl(&["create", "-f", path]),
    }
}

fn pod(name: &str, node: &str, secret: &str, config_map: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "apps"},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox",
            "env": [{"name": "S", "valueFrom": {"secretKeyRef": {"name": secret, "key": "k"}}}]}],
            "volumes": [{"name": "cfg", "configMap": {"name": config_map}}]}})
}

#[tokio::test]
async fn a_node_reads_only_what_its_pods_use() {
    let server = TestServer::start().await;
    let n1 = server.kubeconfig_for("system:node:n1", &["system:nodes"]);
    server.kubectl_ok(&["create", "namespace", "apps"]);
    for s in ["s1", "s2"] {
        server.kubectl_ok(&["create", "secret", "generic", s, "-n", "apps", "--from-literal=k=v"]);
    }
    server.kubectl_ok(&["create", "configmap", "c1", "-n", "apps", "--from-literal=k=v"]);
    expect_success(&["pod p1"], apply(&server, None, pod("p1", "n1", "s1", "c1")));
    expect_success(&["pod p2"], apply(&server, None, pod("p2", "n2", "s2", "c1")));

    // What p1 (bound to n1) uses is readable; what only p2 (on n2) uses is not.
    expect_success(&["get s1"], server.kubectl_as(&n1, &["get", "secret", "s1", "-n", "apps"]));
    expect_success(&["get c1"], server.kubectl_as(&n1, &["get", "configmap", "c1", "-n", "apps"]));
    refused(&server, &n1, &["get", "secret", "s2", "-n", "apps"],
        "secrets \"s2\" is forbidden: User \"system:node:n1\" cannot get resource \"secrets\" in API group \"\" in the namespace \"apps\": no relationship found between node 'n1' and this object");
    refused(&server, &n1, &["get", "secrets", "-n", "apps"], "cannot list resource \"secrets\"");
    // Its own pods, by selector; not everyone's.
    expect_success(&["get p1"], server.kubectl_as(&n1, &["get", "pod", "p1", "-n", "apps"]));
    refused(&server, &n1, &["get", "pod", "p2", "-n", "apps"], "no relationship found between node 'n1' and this object");
    let out = expect_success(&["list own pods"], server.kubectl_as(&n1, &["get", "pods", "-A", "--field-selector", "spec.nodeName=n1", "-o", "name"]));
    assert_eq!(out.trim(), "pod/p1");
    refused(&server, &n1, &["get", "pods", "-A"], "can only list/watch pods with spec.nodeName field selector");
    // Services are readable by every node (the system:node rules).
    expect_success(&["get services"], server.kubectl_as(&n1, &["get", "services", "-A"]));

    // The graph follows the apply path: once p1 is gone, so is the link to s1 (a scheduled pod
    // is gone at once only with a zero grace period).
    server.kubectl_ok(&["delete", "pod", "p1", "-n", "apps", "--grace-period=0", "--force"]);
    refused(&server, &n1, &["get", "secret", "s1", "-n", "apps"], "no relationship found between node 'n1' and this object");
    // Rebinding p2's twin to n1 gives n1 s2.
    expect_success(&["pod p3"], apply(&server, None, pod("p3", "n1", "s2", "c1")));
    expect_success(&["get s2"], server.kubectl_as(&n1, &["get", "secret", "s2", "-n", "apps"]));
}

#[tokio::test]
async fn node_restriction_keeps_a_kubelet_to_its_own_objects() {
    let server = TestServer::start_with(&["--enable-admission-plugins=NodeRestriction"]).await;
    let n1 = server.kubeconfig_for("system:node:n1", &["system:nodes"]);
    let node = |name: &str, labels: Value| json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}});

    // Its own Node, with the labels a kubelet may set; not another's, nor reserved labels.
    expect_success(&["create n1"], apply(&server, Some(&n1), node("n1", json!({"kubernetes.io/hostname": "n1", "node.kubernetes.io/pool": "a"}))));
    let out = apply(&server, Some(&n1), node("n2", json!({})));
    assert!(stderr(&out).contains("nodes \"n2\" is forbidden: node \"n1\" is not allowed to modify node \"n2\""), "{}", stderr(&out));
    server.kubectl_ok(&["delete", "node", "n1"]);
    let out = apply(&server, Some(&n1), node("n1", json!({"node-role.kubernetes.io/control-plane": "", "x.node-restriction.kubernetes.io/y": "z"})));
    assert!(
        stderr(&out).contains("node \"n1\" is not allowed to set the following labels: node-role.kubernetes.io/control-plane, x.node-restriction.kubernetes.io/y"),
        "{}",
        stderr(&out)
    );
    expect_success(&["create n1 again"], apply(&server, Some(&n1), node("n1", json!({}))));
    expect_success(&["label own node"], server.kubectl_as(&n1, &["label", "node", "n1", "kubelet.kubernetes.io/ok=yes"]));
    refused(&server, &n1, &["label", "node", "n1", "kubernetes.io/role=master"], "is not allowed to modify labels: kubernetes.io/role");
    refused(&server, &n1, &["taint", "node", "n1", "k=v:NoSchedule"], "node \"n1\" is not allowed to modify taints");
    // It reads its own Node only.
    expect_success(&["get n1"], server.kubectl_as(&n1, &["get", "node", "n1"]));
    refused(&server, &n1, &["get", "nodes"], "node 'n1' cannot read all nodes, only its own Node object");

    // Pods: only mirror pods owned by its Node; deletions and status only of its own pods.
    server.kubectl_ok(&["create", "namespace", "apps"]);
    let plain = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "plain", "namespace": "apps"},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "busybox"}]}});
    let out = apply(&server, Some(&n1), plain.clone());
    assert!(stderr(&out).contains("pod does not have \"kubernetes.io/config.mirror\" annotation, node \"n1\" can only create mirror pods"), "{}", stderr(&out));
    let uid = server.kubectl_ok(&["get", "node", "n1", "-o", "jsonpath={.metadata.uid}"]);
    let mut mirror = plain.clone();
    mirror["metadata"]["name"] = json!("static-web");
    mirror["metadata"]["annotations"] = json!({"kubernetes.io/config.mirror": "hash"});
    mirror["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": uid, "controller": true}]);
    expect_success(&["mirror pod"], apply(&server, Some(&n1), mirror.clone()));
    let mut elsewhere = mirror.clone();
    elsewhere["metadata"]["name"] = json!("elsewhere");
    elsewhere["spec"]["nodeName"] = json!("n2");
    let out = apply(&server, Some(&n1), elsewhere);
    assert!(stderr(&out).contains("node \"n1\" can only create pods with spec.nodeName set to itself"), "{}", stderr(&out));
    let mut other = plain.clone();
    other["metadata"]["name"] = json!("other");
    other["spec"]["nodeName"] = json!("n2");
    expect_success(&["pod on n2"], apply(&server, None, other));
    refused(&server, &n1, &["delete", "pod", "other", "-n", "apps"], "node \"n1\" can only delete pods with spec.nodeName set to itself");
    expect_success(&["delete mirror"], server.kubectl_as(&n1, &["delete", "pod", "static-web", "-n", "apps", "--wait=false"]));

    // Its lease, by its own name, in kube-node-lease.
    let lease = |name: &str, ns: &str| json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": name, "namespace": ns}, "spec": {"holderIdentity": "n1"}});
    expect_success(&["own lease"], apply(&server, Some(&n1), lease("n1", "kube-node-lease")));
    let out = apply(&server, Some(&n1), lease("n2", "kube-node-lease"));
    assert!(stderr(&out).contains("can only access node lease with the same name as the requesting node"), "{}", stderr(&out));
    let out = apply(&server, Some(&n1), lease("n1", "default"));
    assert!(stderr(&out).contains("can only access leases in the \"kube-node-lease\" system namespace"), "{}", stderr(&out));
}
