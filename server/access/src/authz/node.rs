//! The `Node` mode: what a kubelet (`system:node:<name>` in `system:nodes`) may do. Reads of
//! secrets, config maps, claims, volumes, attachments and service accounts only when the node
//! graph links them to a pod bound to that node; its own Node, lease and CSINode; pods listed
//! only with `spec.nodeName=<node>` (AuthorizeNodeWithSelectors); the rest by the rules of the
//! `system:node` role. Anyone else: no opinion.

use std::sync::Arc;

use super::{Authorizer, UserRules, Verdict};
use crate::attributes::Attributes;
use crate::node::{node_name, NodeGraph, Vertex};
use crate::rbac::rules::Rule;
use crate::user::UserInfo;

pub struct Node {
    graph: Arc<NodeGraph>,
    /// The rules of the default `system:node` role: what every node may do.
    rules: Vec<Rule>,
}

impl Node {
    pub fn new(graph: Arc<NodeGraph>, rules: Vec<Rule>) -> Node {
        Node { graph, rules }
    }

    fn related(&self, node: &str, vertex: Vertex, a: &Attributes) -> Verdict {
        if a.name.is_empty() {
            return Verdict::no_opinion("No Object name found");
        }
        let namespace = if vertex == Vertex::Pv || vertex == Vertex::VolumeAttachment { "" } else { &a.namespace };
        if self.graph.reaches(node, vertex, namespace, &a.name) {
            Verdict::allow("")
        } else {
            Verdict::no_opinion(format!("no relationship found between node '{node}' and this object"))
        }
    }

    fn get(&self, node: &str, vertex: Vertex, a: &Attributes) -> Verdict {
        if a.verb != "get" {
            return Verdict::no_opinion("can only get individual resources of this type");
        }
        if !a.subresource.is_empty() {
            return Verdict::no_opinion("cannot get subresource");
        }
        self.related(node, vertex, a)
    }

    fn read_namespaced(&self, node: &str, vertex: Vertex, a: &Attributes) -> Verdict {
        if !matches!(a.verb.as_str(), "get" | "list" | "watch") {
            return Verdict::no_opinion("can only read resources of this type");
        }
        if !a.subresource.is_empty() {
            return Verdict::no_opinion("cannot read subresource");
        }
        if a.namespace.is_empty() {
            return Verdict::no_opinion("can only read namespaced object of this type");
        }
        self.related(node, vertex, a)
    }

    fn claim(&self, node: &str, a: &Attributes) -> Verdict {
        if a.subresource != "status" {
            return self.get(node, Vertex::Pvc, a);
        }
        if !matches!(a.verb.as_str(), "update" | "patch") {
            return Verdict::no_opinion("can only get/update/patch this type");
        }
        self.related(node, Vertex::Pvc, a)
    }

    fn service_account(&self, node: &str, a: &Attributes) -> Verdict {
        if a.verb == "get" && a.subresource.is_empty() {
            return self.read_namespaced(node, Vertex::ServiceAccount, a);
        }
        if a.verb != "create" || a.name.is_empty() {
            return Verdict::no_opinion("can only create tokens for individual service accounts");
        }
        if a.subresource != "token" {
            return Verdict::no_opinion("can only create token subresource of serviceaccount");
        }
        self.related(node, Vertex::ServiceAccount, a)
    }

    /// Leases and CSINodes: a node's own, by name, in the place Kubernetes keeps them.
    fn own_named(&self, node: &str, a: &Attributes, what: &str) -> Verdict {
        if !matches!(a.verb.as_str(), "get" | "create" | "update" | "patch" | "delete") {
            return Verdict::no_opinion(format!("can only get, create, update, patch, or delete a {what}"));
        }
        if what == "node lease" && a.namespace != "kube-node-lease" {
            return Verdict::no_opinion("can only access leases in the \"kube-node-lease\" system namespace");
        }
        if what == "CSINode" && !a.subresource.is_empty() {
            return Verdict::no_opinion("cannot authorize CSINode subresources");
        }
        if a.verb != "create" && a.name != node {
            return Verdict::no_opinion(format!("can only access {what} with the same name as the requesting node"));
        }
        Verdict::allow("")
    }

    fn node_object(&self, node: &str, a: &Attributes) -> Verdict {
        match (a.subresource.as_str(), a.verb.as_str()) {
            ("", "create" | "update" | "patch") | ("status", "update" | "patch") => Verdict::allow(""),
            ("", "get" | "list" | "watch") if a.name == node => Verdict::allow(""),
            ("", "get" | "list" | "watch") if a.name.is_empty() => {
                Verdict::no_opinion(format!("node '{node}' cannot read all nodes, only its own Node object"))
            }
            ("", "get" | "list" | "watch") => Verdict::no_opinion(format!("node '{node}' cannot read '{}', only its own Node object", a.name)),
            _ => Verdict::no_opinion(""),
        }
    }

    fn pod(&self, node: &str, a: &Attributes) -> Verdict {
        match (a.subresource.as_str(), a.verb.as_str()) {
            ("", "get") => self.get(node, Vertex::Pod, a),
            ("", "list" | "watch") if a.field_requires("spec.nodeName", node) => Verdict::allow(""),
            ("", "list" | "watch") if !a.name.is_empty() => self.related(node, Vertex::Pod, a),
            ("", "list" | "watch") => Verdict::no_opinion("can only list/watch pods with spec.nodeName field selector"),
            ("", "create" | "delete") | ("status", "update" | "patch") | ("eviction", "create") => Verdict::allow(""),
            _ => Verdict::no_opinion(""),
        }
    }
}

#[async_trait::async_trait]
impl Authorizer for Node {
    fn mode(&self) -> &'static str {
        "Node"
    }

    async fn authorize(&self, a: &Attributes) -> Verdict {
        let Some(node) = node_name(&a.user) else { return Verdict::no_opinion("") };
        if node.is_empty() {
            return Verdict::no_opinion(format!("unknown node for user {:?}", a.user.name));
        }
        if a.resource_request {
            let decided = match (a.api_group.as_str(), a.resource.as_str()) {
                ("", "secrets") => Some(self.read_namespaced(node, Vertex::Secret, a)),
                ("", "configmaps") => Some(self.read_namespaced(node, Vertex::ConfigMap, a)),
                ("", "persistentvolumeclaims") => Some(self.claim(node, a)),
                ("", "persistentvolumes") => Some(self.get(node, Vertex::Pv, a)),
                ("storage.k8s.io", "volumeattachments") => Some(self.get(node, Vertex::VolumeAttachment, a)),
                ("", "serviceaccounts") => Some(self.service_account(node, a)),
                ("coordination.k8s.io", "leases") => Some(self.own_named(node, a, "node lease")),
                ("storage.k8s.io", "csinodes") => Some(self.own_named(node, a, "CSINode")),
                ("", "nodes") => Some(self.node_object(node, a)),
                ("", "pods") => Some(self.pod(node, a)),
                _ => None,
            };
            if let Some(v) = decided {
                return v;
            }
        }
        if self.rules.iter().any(|r| r.allows(a)) { Verdict::allow("") } else { Verdict::no_opinion("") }
    }

    fn rules_for(&self, user: &UserInfo, _namespace: &str) -> UserRules {
        match node_name(user) {
            Some(_) => UserRules { incomplete: true, errors: vec!["node authorizer does not support user rule resolution".into()], ..Default::default() },
            None => UserRules::default(),
        }
    }
}
