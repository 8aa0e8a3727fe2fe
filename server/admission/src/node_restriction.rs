//! NodeRestriction, a validating admission step: a kubelet (`system:node:<name>`) may create only
//! mirror pods bound to itself and owned by its Node, delete and update the status of only pods
//! bound to itself, change only its own Node (not its taints, owners or the labels Kubernetes
//! reserves), and touch only its own lease and CSINode. Other users pass untouched.

use std::collections::BTreeSet;

use raft_store::Store;
use serde_json::Value;

use super::{Operation, Request, Validating};
use access::node::graph::pod_uses;
use access::node::{node_name, Vertex};
use machinery::error::{ApiError, ApiResult};

const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";

/// Labels a kubelet may set on its Node although they are in a Kubernetes namespace.
const KUBELET_LABELS: &[&str] = &[
    "kubernetes.io/hostname",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "beta.kubernetes.io/instance-type",
    "node.kubernetes.io/instance-type",
    "kubernetes.io/os",
    "kubernetes.io/arch",
    "beta.kubernetes.io/os",
    "beta.kubernetes.io/arch",
];
/// Label namespaces (and their subdomains) a kubelet may use.
const KUBELET_LABEL_NAMESPACES: &[&str] = &["kubelet.kubernetes.io", "node.kubernetes.io"];
/// The namespace (and subdomains) no kubelet may set, reserved for labels nodes are selected by.
const RESTRICTED_NAMESPACE: &str = "node-restriction.kubernetes.io";

pub struct NodeRestriction {
    pub store: Store,
}

fn in_namespace(namespace: &str, domain: &str) -> bool {
    namespace == domain || namespace.strip_suffix(domain).is_some_and(|rest| rest.ends_with('.'))
}

/// The labels of a change a kubelet may not make.
fn forbidden_labels(new: &Value, old: &Value) -> BTreeSet<String> {
    let labels = |v: &Value| v["metadata"]["labels"].as_object().cloned().unwrap_or_default();
    let (new, old) = (labels(new), labels(old));
    let changed = new.iter().filter(|(k, v)| old.get(*k) != Some(*v)).chain(old.iter().filter(|(k, _)| !new.contains_key(*k))).map(|(k, _)| k);
    changed
        .filter(|key| {
            let namespace = key.split_once('/').map(|(ns, _)| ns).unwrap_or_default();
            let kubernetes = in_namespace(namespace, "kubernetes.io") || in_namespace(namespace, "k8s.io");
            let kubelet = KUBELET_LABELS.contains(&key.as_str()) || KUBELET_LABEL_NAMESPACES.iter().any(|d| in_namespace(namespace, d));
            in_namespace(namespace, RESTRICTED_NAMESPACE) || (kubernetes && !kubelet)
        })
        .cloned()
        .collect()
}

/// The first kind of API object a pod refers to, as Kubernetes names it, if any.
fn api_reference(pod: &Value) -> Option<&'static str> {
    let spec = &pod["spec"];
    if spec["serviceAccountName"].as_str().is_some_and(|s| !s.is_empty()) {
        return Some("serviceaccounts");
    }
    let uses = pod_uses(pod["metadata"]["name"].as_str().unwrap_or_default(), spec);
    let has = |v: Vertex| uses.iter().any(|(u, _)| *u == v);
    if has(Vertex::Secret) {
        return Some("secrets");
    }
    if has(Vertex::ConfigMap) {
        return Some("configmaps");
    }
    if has(Vertex::Pvc) {
        return Some("persistentvolumeclaims");
    }
    let volumes = spec["volumes"].as_array().map(Vec::as_slice).unwrap_or_default();
    if volumes.iter().any(|v| v["projected"]["sources"].as_array().is_some_and(|s| s.iter().any(|s| s.get("clusterTrustBundle").is_some()))) {
        return Some("clustertrustbundles");
    }
    if spec["resourceClaims"].as_array().is_some_and(|c| !c.is_empty()) {
        return Some("resourceclaims");
    }
    None
}

impl NodeRestriction {
    fn node_uid(&self, node: &str) -> ApiResult<Option<String>> {
        let Some(obj) = self.store.cache().get(&format!("/registry/nodes/{node}"), None)? else { return Ok(None) };
        let v: Value = serde_json::from_slice(&obj.data).map_err(ApiError::internal)?;
        Ok(v["metadata"]["uid"].as_str().map(str::to_string))
    }

    fn mirror_pod(&self, node: &str, pod: &Value) -> Result<(), String> {
        if pod["metadata"]["annotations"].get(MIRROR_ANNOTATION).is_none() {
            return Err(format!("pod does not have \"{MIRROR_ANNOTATION}\" annotation, node \"{node}\" can only create mirror pods"));
        }
        if pod["spec"]["nodeName"] != node {
            return Err(format!("node \"{node}\" can only create pods with spec.nodeName set to itself"));
        }
        let owners = pod["metadata"]["ownerReferences"].as_array().cloned().unwrap_or_default();
        let [owner] = owners.as_slice() else {
            return Err(if owners.is_empty() {
                format!("node \"{node}\" can only create pods with an owner reference set to itself")
            } else {
                format!("node \"{node}\" can only create pods with a single owner reference set to itself")
            });
        };
        if owner["apiVersion"] != "v1" || owner["kind"] != "Node" || owner["name"] != node {
            return Err(format!("node \"{node}\" can only create pods with an owner reference set to itself"));
        }
        if owner["controller"] != true {
            return Err(format!("node \"{node}\" can only create pods with a controller owner reference set to itself"));
        }
        if owner["blockOwnerDeletion"] == true {
            return Err(format!("node \"{node}\" must not set blockOwnerDeletion on an owner reference"));
        }
        match self.node_uid(node) {
            Ok(Some(uid)) if owner["uid"] == uid.as_str() => {}
            Ok(Some(uid)) => return Err(format!("node {node} UID mismatch: expected {uid} got {}", owner["uid"].as_str().unwrap_or_default())),
            Ok(None) => return Err(format!("error looking up node {node} to verify uid: nodes \"{node}\" not found")),
            Err(e) => return Err(format!("error looking up node {node} to verify uid: {e}")),
        }
        if let Some(resource) = api_reference(pod) {
            return Err(format!("node \"{node}\" can not create pods that reference {resource}"));
        }
        Ok(())
    }

    fn pod(&self, node: &str, r: &Request<'_>) -> Result<(), String> {
        let bound = |v: Option<&Value>| v.is_some_and(|p| p["spec"]["nodeName"] == node);
        match (r.req.subresource.as_deref().unwrap_or_default(), r.operation) {
            ("", Operation::Create) => self.mirror_pod(node, r.object.unwrap_or(&Value::Null)),
            ("", Operation::Delete) if bound(r.old) => Ok(()),
            ("", Operation::Delete) => Err(format!("node \"{node}\" can only delete pods with spec.nodeName set to itself")),
            ("", op) => Err(format!("unexpected operation {:?}, node \"{node}\" can only create and delete mirror pods", op.as_str())),
            ("status", Operation::Update) if !bound(r.old) => Err(format!("node \"{node}\" can only update pod status for pods with spec.nodeName set to itself")),
            ("status", Operation::Update) => {
                let labels = |v: Option<&Value>| v.map(|p| p["metadata"]["labels"].clone());
                if labels(r.old) != labels(r.object) {
                    return Err(format!("node \"{node}\" cannot update labels through pod status"));
                }
                Ok(())
            }
            ("status", op) => Err(format!("unexpected operation {:?}", op.as_str())),
            (sub, _) => Err(format!("unexpected pod subresource {sub:?}, only 'status' and 'eviction' are allowed")),
        }
    }

    fn node_object(&self, node: &str, r: &Request<'_>) -> Result<(), String> {
        let requested = r.req.name();
        if requested != node {
            return Err(format!("node \"{node}\" is not allowed to modify node \"{requested}\""));
        }
        let (new, old) = (r.object.unwrap_or(&Value::Null), r.old.unwrap_or(&Value::Null));
        match r.operation {
            Operation::Create => {
                if new["spec"].get("configSource").is_some_and(|c| !c.is_null()) {
                    return Err(format!("node \"{node}\" is not allowed to create pods with a non-nil configSource"));
                }
                let forbidden = forbidden_labels(new, &Value::Null);
                if !forbidden.is_empty() {
                    return Err(format!("node \"{node}\" is not allowed to set the following labels: {}", forbidden.into_iter().collect::<Vec<_>>().join(", ")));
                }
            }
            Operation::Update => {
                let config = &new["spec"]["configSource"];
                if !config.is_null() && *config != old["spec"]["configSource"] {
                    return Err(format!("node \"{node}\" is not allowed to update configSource to a new non-nil configSource"));
                }
                if new["spec"]["taints"] != old["spec"]["taints"] {
                    return Err(format!("node \"{node}\" is not allowed to modify taints"));
                }
                if new["metadata"]["ownerReferences"] != old["metadata"]["ownerReferences"] {
                    return Err(format!("node \"{node}\" is not allowed to modify ownerReferences"));
                }
                let forbidden = forbidden_labels(new, old);
                if !forbidden.is_empty() {
                    return Err(format!("is not allowed to modify labels: {}", forbidden.into_iter().collect::<Vec<_>>().join(", ")));
                }
            }
            Operation::Delete => {}
        }
        Ok(())
    }

    fn own_named(&self, node: &str, r: &Request<'_>, what: &str) -> Result<(), String> {
        if what == "node lease" && r.req.namespace.as_deref() != Some("kube-node-lease") {
            return Err("can only access leases in the \"kube-node-lease\" system namespace".into());
        }
        if r.req.name() != node {
            return Err(format!("can only access {what} with the same name as the requesting node"));
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl Validating for NodeRestriction {
    fn name(&self) -> &'static str {
        "NodeRestriction"
    }

    async fn validate(&self, r: &Request<'_>) -> ApiResult<()> {
        let Some(node) = node_name(&r.req.user) else { return Ok(()) };
        let info = r.req.info;
        let refused = |message: String| ApiError::forbidden(info.group, info.resource, r.req.name(), message);
        if node.is_empty() {
            return Err(refused(format!("could not determine node from user {:?}", r.req.user.name)));
        }
        let outcome = match (info.group, info.resource) {
            ("", "pods") => self.pod(node, r),
            ("", "nodes") => self.node_object(node, r),
            ("", "persistentvolumeclaims") if r.req.subresource.as_deref() != Some("status") => Err("may only update PVC status".into()),
            ("coordination.k8s.io", "leases") => self.own_named(node, r, "node lease"),
            ("storage.k8s.io", "csinodes") => self.own_named(node, r, "CSINode"),
            _ => Ok(()),
        };
        outcome.map_err(refused)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kubelets_may_set_only_their_own_labels() {
        let node = |labels: Value| json!({"metadata": {"labels": labels}});
        let old = node(json!({"kubernetes.io/hostname": "n1", "team": "a"}));
        let new = node(json!({"kubernetes.io/hostname": "n1", "team": "b", "node.kubernetes.io/exclude-from-external-load-balancers": "",
            "kubernetes.io/role": "x", "foo.node-restriction.kubernetes.io/pool": "p", "example.k8s.io/x": "y", "topology.kubernetes.io/zone": "z"}));
        let forbidden: Vec<String> = forbidden_labels(&new, &old).into_iter().collect();
        assert_eq!(forbidden, ["example.k8s.io/x", "foo.node-restriction.kubernetes.io/pool", "kubernetes.io/role"]);
        // Removing a reserved label is a change too.
        assert_eq!(forbidden_labels(&node(json!({})), &node(json!({"kubernetes.io/role": "x"}))).len(), 1);
    }

    #[test]
    fn mirror_pods_may_not_reference_api_objects() {
        assert_eq!(api_reference(&json!({"spec": {"containers": [{"name": "c"}]}})), None);
        assert_eq!(api_reference(&json!({"spec": {"serviceAccountName": "default"}})), Some("serviceaccounts"));
        assert_eq!(api_reference(&json!({"spec": {"volumes": [{"name": "v", "configMap": {"name": "c"}}]}})), Some("configmaps"));
    }
}
