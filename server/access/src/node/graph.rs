//! The node graph: which objects each node may read, kept by the apply path on every replica.
//! A pod bound to a node (`spec.nodeName`) links the node to the secrets, config maps and
//! claims it uses; a persistent volume is reachable through the claim it is bound to and links
//! its own secrets; a volume attachment names its node. Unscheduled pods link nothing.

use std::collections::{BTreeSet, HashMap};
use std::sync::RwLock;

use raft_store::{ApplyObserver, Object};
use serde::Deserialize;
use serde_json::Value;

const PODS: &str = "/registry/pods/";
const PVS: &str = "/registry/persistentvolumes/";
const ATTACHMENTS: &str = "/registry/storage.k8s.io/volumeattachments/";
const PREFIXES: &[&str] = &[PODS, PVS, ATTACHMENTS];

/// The kinds of object the graph answers for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Vertex {
    Pod,
    Secret,
    ConfigMap,
    Pvc,
    Pv,
    ServiceAccount,
    VolumeAttachment,
}

/// `(namespace, name)`; the namespace is empty for cluster-scoped objects.
type Id = (String, String);

/// What one scheduled pod links: its node, and the objects of its namespace it uses.
struct PodEdges {
    node: String,
    uses: Vec<(Vertex, String)>,
}

/// What one persistent volume links: the claim it is bound to and the secrets it names.
#[derive(Default)]
struct PvEdges {
    claim: Option<Id>,
    secrets: Vec<Id>,
}

#[derive(Default)]
struct Inner {
    pods: HashMap<Id, PodEdges>,
    /// For each object a pod uses: the nodes of the pods that use it, with how many pods.
    used_by: HashMap<(Vertex, Id), HashMap<String, usize>>,
    pvs: HashMap<String, PvEdges>,
    /// For each secret a persistent volume names: those volumes.
    pv_secrets: HashMap<Id, BTreeSet<String>>,
    attachments: HashMap<String, String>,
}

/// The graph; shared by the Node authorizer.
#[derive(Default)]
pub struct NodeGraph {
    inner: RwLock<Inner>,
}

impl NodeGraph {
    /// Whether `node` reaches the object: a pod bound to it, something such a pod uses, a
    /// volume claimed by such a claim (and its secrets), or an attachment to it.
    pub fn reaches(&self, node: &str, vertex: Vertex, namespace: &str, name: &str) -> bool {
        let inner = self.inner.read().unwrap_or_else(|e| e.into_inner());
        inner.reaches(node, vertex, &(namespace.to_string(), name.to_string()))
    }
}

impl Inner {
    fn reaches(&self, node: &str, vertex: Vertex, id: &Id) -> bool {
        let used = |v: Vertex, id: &Id| self.used_by.get(&(v, id.clone())).is_some_and(|nodes| nodes.contains_key(node));
        match vertex {
            Vertex::Pod => self.pods.get(id).is_some_and(|p| p.node == node),
            Vertex::ConfigMap | Vertex::Pvc | Vertex::ServiceAccount => used(vertex, id),
            Vertex::Secret => {
                used(vertex, id)
                    || self.pv_secrets.get(id).is_some_and(|pvs| pvs.iter().any(|pv| self.reaches(node, Vertex::Pv, &(String::new(), pv.clone()))))
            }
            Vertex::Pv => self.pvs.get(&id.1).and_then(|pv| pv.claim.as_ref()).is_some_and(|claim| used(Vertex::Pvc, claim)),
            Vertex::VolumeAttachment => self.attachments.get(&id.1).is_some_and(|n| n == node),
        }
    }

    fn remove_pod(&mut self, id: &Id) {
        let Some(pod) = self.pods.remove(id) else { return };
        for (vertex, name) in pod.uses {
            let key = (vertex, (id.0.clone(), name));
            if let Some(nodes) = self.used_by.get_mut(&key) {
                if let Some(n) = nodes.get_mut(&pod.node) {
                    *n -= 1;
                    if *n == 0 {
                        nodes.remove(&pod.node);
                    }
                }
                if nodes.is_empty() {
                    self.used_by.remove(&key);
                }
            }
        }
    }

    fn put_pod(&mut self, pod: PodLinks) {
        let id = (pod.metadata.namespace, pod.metadata.name);
        self.remove_pod(&id);
        let node = pod.spec["nodeName"].as_str().unwrap_or_default();
        if node.is_empty() {
            return;
        }
        let uses = pod_uses(&id.1, &pod.spec);
        for (vertex, name) in &uses {
            *self.used_by.entry((*vertex, (id.0.clone(), name.clone()))).or_default().entry(node.to_string()).or_default() += 1;
        }
        self.pods.insert(id, PodEdges { node: node.to_string(), uses });
    }

    fn remove_pv(&mut self, name: &str) {
        let Some(pv) = self.pvs.remove(name) else { return };
        for s in pv.secrets {
            if let Some(set) = self.pv_secrets.get_mut(&s) {
                set.remove(name);
                if set.is_empty() {
                    self.pv_secrets.remove(&s);
                }
            }
        }
    }

    fn put_pv(&mut self, pv: &Value) {
        let name = id_of(pv).1;
        self.remove_pv(&name);
        let claim = &pv["spec"]["claimRef"];
        let claim = claim["name"].as_str().map(|n| (claim["namespace"].as_str().unwrap_or_default().to_string(), n.to_string()));
        let mut secrets = Vec::new();
        pv_secrets(&pv["spec"], &mut secrets);
        for s in &secrets {
            self.pv_secrets.entry(s.clone()).or_default().insert(name.clone());
        }
        self.pvs.insert(name, PvEdges { claim, secrets });
    }

    fn put(&mut self, key: &str, object: Option<&Object>) {
        let rest = |prefix: &str| key[prefix.len()..].to_string();
        if key.starts_with(PODS) {
            // Every replica applies every pod write (status reports most of them): only the
            // pod's names and spec are read, its status and managed fields skipped unparsed.
            match object.and_then(|o| serde_json::from_slice::<PodLinks>(&o.data).ok()) {
                Some(pod) => self.put_pod(pod),
                None => {
                    let (ns, name) = rest(PODS).split_once('/').map(|(a, b)| (a.to_string(), b.to_string())).unwrap_or_default();
                    self.remove_pod(&(ns, name));
                }
            }
            return;
        }
        let value = object.and_then(|o| serde_json::from_slice::<Value>(&o.data).ok());
        if key.starts_with(PVS) {
            match value {
                Some(pv) => self.put_pv(&pv),
                None => self.remove_pv(&rest(PVS)),
            }
        } else if key.starts_with(ATTACHMENTS) {
            let node = value.as_ref().and_then(|va| va["spec"]["nodeName"].as_str()).filter(|n| !n.is_empty());
            match node {
                Some(n) => self.attachments.insert(rest(ATTACHMENTS), n.to_string()),
                None => self.attachments.remove(&rest(ATTACHMENTS)),
            };
        }
    }
}

/// The parts of a pod the graph reads.
#[derive(Deserialize)]
struct PodLinks {
    #[serde(default)]
    metadata: Names,
    #[serde(default)]
    spec: Value,
}

#[derive(Deserialize, Default)]
struct Names {
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    name: String,
}

fn id_of(obj: &Value) -> Id {
    let meta = &obj["metadata"];
    (meta["namespace"].as_str().unwrap_or_default().to_string(), meta["name"].as_str().unwrap_or_default().to_string())
}

fn name_at(v: &Value, pointer: &str) -> Option<String> {
    v.pointer(pointer).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string)
}

fn items(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or_default()
}

/// Volume sources that name a secret, and where: the same in pods and in persistent volumes.
const VOLUME_SECRETS: &[&str] = &[
    "/azureFile/secretName",
    "/cephfs/secretRef/name",
    "/cinder/secretRef/name",
    "/flexVolume/secretRef/name",
    "/rbd/secretRef/name",
    "/scaleIO/secretRef/name",
    "/iscsi/secretRef/name",
    "/storageos/secretRef/name",
    "/csi/nodePublishSecretRef/name",
];

/// Every secret, config map, claim and service account the pod `pod_name` uses by its `spec`, as
/// Kubernetes counts them: image pull secrets, environment references of every container,
/// volumes (projected ones included), the claims of generic ephemeral volumes
/// (`<pod>-<volume>`), and its service account.
pub fn pod_uses(pod_name: &str, spec: &Value) -> Vec<(Vertex, String)> {
    let mut out = Vec::new();
    let mut add = |v: Vertex, name: Option<String>| {
        if let Some(n) = name {
            if !out.contains(&(v, n.clone())) {
                out.push((v, n));
            }
        }
    };
    add(Vertex::ServiceAccount, name_at(spec, "/serviceAccountName"));
    for s in items(&spec["imagePullSecrets"]) {
        add(Vertex::Secret, name_at(s, "/name"));
    }
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        for c in items(&spec[list]) {
            for e in items(&c["envFrom"]) {
                add(Vertex::Secret, name_at(e, "/secretRef/name"));
                add(Vertex::ConfigMap, name_at(e, "/configMapRef/name"));
            }
            for e in items(&c["env"]) {
                add(Vertex::Secret, name_at(e, "/valueFrom/secretKeyRef/name"));
                add(Vertex::ConfigMap, name_at(e, "/valueFrom/configMapKeyRef/name"));
            }
        }
    }
    for vol in items(&spec["volumes"]) {
        add(Vertex::Secret, name_at(vol, "/secret/secretName"));
        for p in VOLUME_SECRETS {
            add(Vertex::Secret, name_at(vol, p));
        }
        add(Vertex::ConfigMap, name_at(vol, "/configMap/name"));
        for src in items(&vol["projected"]["sources"]) {
            add(Vertex::Secret, name_at(src, "/secret/name"));
            add(Vertex::ConfigMap, name_at(src, "/configMap/name"));
        }
        add(Vertex::Pvc, name_at(vol, "/persistentVolumeClaim/claimName"));
        if vol.get("ephemeral").is_some() {
            add(Vertex::Pvc, name_at(vol, "/name").map(|v| format!("{pod_name}-{v}")));
        }
    }
    out
}

/// The secrets a persistent volume's source names, with their namespaces.
fn pv_secrets(spec: &Value, out: &mut Vec<Id>) {
    let claim_ns = spec["claimRef"]["namespace"].as_str().unwrap_or_default();
    for p in VOLUME_SECRETS {
        let Some(ref_pointer) = p.strip_suffix("/name").or_else(|| p.strip_suffix("/secretName")) else { continue };
        let Some(name) = name_at(spec, p) else { continue };
        // A reference's own namespace wins; azureFile names one in `secretNamespace`, the others
        // default to the claim's.
        let ns = name_at(spec, &format!("{ref_pointer}/namespace"))
            .or_else(|| name_at(spec, &format!("{ref_pointer}/secretNamespace")))
            .unwrap_or_else(|| claim_ns.to_string());
        out.push((ns, name));
    }
    for p in ["/csi/controllerPublishSecretRef", "/csi/controllerExpandSecretRef", "/csi/nodeExpandSecretRef", "/csi/nodeStageSecretRef"] {
        if let Some(name) = name_at(spec, &format!("{p}/name")) {
            out.push((name_at(spec, &format!("{p}/namespace")).unwrap_or_default(), name));
        }
    }
}

impl ApplyObserver for NodeGraph {
    fn prefixes(&self) -> &[&'static str] {
        PREFIXES
    }

    fn applied(&self, key: &str, object: Option<&Object>) {
        self.inner.write().unwrap_or_else(|e| e.into_inner()).put(key, object);
    }

    fn reset(&self, objects: &mut dyn Iterator<Item = (&str, &Object)>) {
        let mut inner = self.inner.write().unwrap_or_else(|e| e.into_inner());
        *inner = Inner::default();
        for (key, object) in objects {
            inner.put(key, Some(object));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(v: Value) -> Object {
        Object { rev: 1, data: serde_json::to_vec(&v).unwrap().into() }
    }

    #[test]
    fn a_pod_links_its_node_to_what_it_uses_until_it_goes() {
        let g = NodeGraph::default();
        let pod = json!({"metadata": {"namespace": "ns", "name": "p"}, "spec": {"nodeName": "n1", "serviceAccountName": "robot",
            "imagePullSecrets": [{"name": "pull"}],
            "containers": [{"name": "c", "envFrom": [{"configMapRef": {"name": "env"}}],
                "env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "s1", "key": "k"}}}]}],
            "volumes": [{"name": "v", "projected": {"sources": [{"configMap": {"name": "proj"}}]}},
                {"name": "data", "persistentVolumeClaim": {"claimName": "claim"}},
                {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}]}});
        g.applied("/registry/pods/ns/p", Some(&object(pod)));
        for (v, name) in [(Vertex::Secret, "pull"), (Vertex::Secret, "s1"), (Vertex::ConfigMap, "env"), (Vertex::ConfigMap, "proj"), (Vertex::Pvc, "claim"), (Vertex::Pvc, "p-scratch"), (Vertex::ServiceAccount, "robot"), (Vertex::Pod, "p")] {
            assert!(g.reaches("n1", v, "ns", name), "{v:?} {name}");
            assert!(!g.reaches("n2", v, "ns", name), "{v:?} {name}");
            assert!(!g.reaches("n1", v, "other", name), "{v:?} {name}");
        }
        assert!(!g.reaches("n1", Vertex::Secret, "ns", "env"));
        g.applied("/registry/pods/ns/p", None);
        assert!(!g.reaches("n1", Vertex::Secret, "ns", "s1"));
        assert!(!g.reaches("n1", Vertex::Pod, "ns", "p"));
    }

    #[test]
    fn volumes_are_reached_through_their_claims_and_link_their_secrets() {
        let g = NodeGraph::default();
        let pv = json!({"metadata": {"name": "pv1"}, "spec": {"claimRef": {"namespace": "ns", "name": "claim"},
            "csi": {"driver": "d", "volumeHandle": "h", "nodePublishSecretRef": {"name": "csi-secret", "namespace": "storage"}}}});
        g.applied("/registry/persistentvolumes/pv1", Some(&object(pv)));
        assert!(!g.reaches("n1", Vertex::Pv, "", "pv1"));
        let pod = json!({"metadata": {"namespace": "ns", "name": "p"}, "spec": {"nodeName": "n1",
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "claim"}}]}});
        g.applied("/registry/pods/ns/p", Some(&object(pod.clone())));
        assert!(g.reaches("n1", Vertex::Pv, "", "pv1"));
        assert!(g.reaches("n1", Vertex::Secret, "storage", "csi-secret"));
        // The pod moving to another node takes the links with it.
        let mut moved = pod;
        moved["spec"]["nodeName"] = json!("n2");
        g.applied("/registry/pods/ns/p", Some(&object(moved)));
        assert!(!g.reaches("n1", Vertex::Pv, "", "pv1"));
        assert!(g.reaches("n2", Vertex::Secret, "storage", "csi-secret"));
    }

    #[test]
    fn unscheduled_pods_link_nothing_and_reset_replaces_everything() {
        let g = NodeGraph::default();
        let pending = object(json!({"metadata": {"namespace": "ns", "name": "p"}, "spec": {"imagePullSecrets": [{"name": "s"}]}}));
        g.applied("/registry/pods/ns/p", Some(&pending));
        assert!(!g.reaches("", Vertex::Secret, "ns", "s"));
        let va = object(json!({"metadata": {"name": "va"}, "spec": {"nodeName": "n1"}}));
        let mut all = vec![("/registry/storage.k8s.io/volumeattachments/va", &va)].into_iter();
        g.reset(&mut all);
        assert!(g.reaches("n1", Vertex::VolumeAttachment, "", "va"));
        assert!(!g.reaches("n2", Vertex::VolumeAttachment, "", "va"));
    }
}
