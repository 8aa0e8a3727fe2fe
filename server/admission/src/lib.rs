//! `admission`: the admission stage of the API server, in two phases as in Kubernetes: after a
//! handler has decoded and defaulted an object, mutating plugins may change it; once it is
//! validated, and before it is stored (dry-run included), validating plugins may refuse it. Deletions are admitted too, with the stored
//! object as `old`. Each plugin is a file of its own behind [`Mutating`] or [`Validating`];
//! admission policies ([`policy`]) and webhooks ([`webhooks`]) are plugins too.
//!
//! Below it are `access` (who asks, and what they may do: the policies' `authorizer` and the
//! escalation checks ask it) and `machinery`; above it, the API server.

pub mod always;
pub mod always_pull_images;
pub mod anti_affinity_topology;
pub mod audit_annotations;
pub mod by_namespace;
pub mod certificate_subject_restriction;
pub mod certificates;
pub mod classes;
pub mod configuration;
pub mod default_ingress_class;
pub mod default_storage_class;
pub mod default_toleration_seconds;
pub mod deny_service_external_ips;
pub mod event_rate_limit;
pub mod extended_resource_toleration;
pub mod image_policy_webhook;
pub mod kept;
pub mod limit_ranger;
pub mod matching;
pub mod namespace_autoprovision;
pub mod namespace_exists;
pub mod namespace_lifecycle;
pub mod namespaces;
pub mod node_restriction;
pub mod owner_references;
pub mod plugins;
pub mod pod_node_selector;
pub mod pod_resources;
pub mod pod_security;
pub mod pod_toleration_restriction;
pub mod pod_topology_labels;
pub mod policy;
pub mod priority;
pub mod pvc_resize;
pub mod rbac_escalation;
pub mod resource_list;
pub mod resource_quota;
pub mod runtime_class;
pub mod service_account;
pub mod storage_protection;
pub mod taint_nodes_by_condition;
pub mod tolerations;
pub mod webhook_time;
pub mod webhooks;

use std::sync::{Arc, Mutex};

use serde_json::Value;

use machinery::error::ApiResult;
use access::request::ResourceRequest;
use tracing::Instrument;

/// What plugins read of the replicated state: the store, and what the apply path keeps decoded
/// for them (namespaces, webhook configurations, policy bindings, LimitRanges and
/// ResourceQuotas). Cheap to clone.
#[derive(Clone)]
pub struct Replicated {
    pub store: raft_store::Store,
    pub namespaces: Arc<namespaces::Namespaces>,
    pub configuration: Arc<configuration::Configuration>,
    pub limit_ranges: Arc<by_namespace::ByNamespace>,
    pub quotas: Arc<by_namespace::ByNamespace>,
}

/// What a write does to the object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }
}

/// One write as admission sees it.
pub struct Request<'a> {
    pub req: &'a ResourceRequest,
    pub operation: Operation,
    /// The object to store (none for a deletion).
    pub object: Option<&'a Value>,
    /// The stored object (none for a creation).
    pub old: Option<&'a Value>,
    pub dry_run: bool,
    /// Warnings for the client (`Warning` headers), which plugins add with [`Request::warn`].
    warnings: &'a Mutex<Vec<String>>,
    /// Annotations a validating plugin records on the object stored ([`Request::annotate`]).
    annotations: &'a Mutex<Vec<(String, String)>>,
}

impl Request<'_> {
    /// Whether the write is to an object (not a subresource) of `group`/`resource`.
    pub fn concerns(&self, group: &str, resource: &str) -> bool {
        self.req.info.group == group && self.req.info.resource == resource && self.req.subresource.is_none()
    }

    /// The namespace of a write to a namespaced resource (none for a cluster-scoped one).
    pub fn namespace(&self) -> Option<&str> {
        self.req.namespace.as_deref().filter(|ns| self.req.info.namespaced && !ns.is_empty())
    }

    /// A 403 for the object written, in the words of Kubernetes' `admission.NewForbidden`.
    pub fn forbidden(&self, detail: impl std::fmt::Display) -> machinery::error::ApiError {
        machinery::error::ApiError::forbidden(self.req.info.group, self.req.info.resource, self.req.name(), detail)
    }

    /// Passes a warning on to the client.
    pub fn warn(&self, warning: String) {
        self.warnings.lock().unwrap_or_else(|e| e.into_inner()).push(warning);
    }

    /// Records an annotation on the object stored, as a validating plugin of Kubernetes may
    /// (ImagePolicyWebhook marks a pod admitted without its review).
    pub fn annotate(&self, key: &str, value: &str) {
        self.annotations.lock().unwrap_or_else(|e| e.into_inner()).push((key.to_string(), value.to_string()));
    }
}

/// Appends `item` to the list at `list` (an absent or null list becomes `[item]`).
pub fn push(list: &mut Value, item: Value) {
    match list.as_array_mut() {
        Some(items) => items.push(item),
        None => *list = Value::Array(vec![item]),
    }
}

/// Sets the annotations plugins recorded with [`Request::annotate`] on `object`.
fn set_annotations(object: &mut Value, annotations: Mutex<Vec<(String, String)>>) {
    for (key, value) in annotations.into_inner().unwrap_or_else(|e| e.into_inner()) {
        object["metadata"]["annotations"][key] = Value::String(value);
    }
}

/// A plugin that may change the object before validation.
#[async_trait::async_trait]
pub trait Mutating: Send + Sync {
    fn name(&self) -> &'static str;
    async fn admit(&self, request: &Request<'_>, object: &mut Value) -> ApiResult<()>;
}

/// A plugin that may refuse a write.
#[async_trait::async_trait]
pub trait Validating: Send + Sync {
    fn name(&self) -> &'static str;
    async fn validate(&self, request: &Request<'_>) -> ApiResult<()>;
}

/// The configured plugins, in order.
#[derive(Clone, Default)]
pub struct Admission {
    mutating: Arc<Vec<Arc<dyn Mutating>>>,
    validating: Arc<Vec<Arc<dyn Validating>>>,
}

impl Admission {
    pub fn new(mutating: Vec<Arc<dyn Mutating>>, validating: Vec<Arc<dyn Validating>>) -> Admission {
        Admission { mutating: Arc::new(mutating), validating: Arc::new(validating) }
    }

    /// Runs every mutating plugin on `object`, in order, as Kubernetes does after decoding and
    /// defaulting and before validation; returns the plugins' warnings.
    pub async fn mutate(&self, req: &ResourceRequest, operation: Operation, object: &mut Value, old: Option<&Value>, dry_run: bool) -> ApiResult<Vec<String>> {
        let warnings = Mutex::new(Vec::new());
        let annotations = Mutex::new(Vec::new());
        let span = raft_store::trace::child("admission.mutate");
        async {
            for m in self.mutating.iter() {
                let view = Request { req, operation, object: None, old, dry_run, warnings: &warnings, annotations: &annotations };
                m.admit(&view, object).await?;
            }
            ApiResult::Ok(())
        }
        .instrument(span)
        .await?;
        set_annotations(object, annotations);
        Ok(warnings.into_inner().unwrap_or_else(|e| e.into_inner()))
    }

    /// Runs every validating plugin on the validated object (absent for a deletion); the first
    /// refusal is the answer. Returns the plugins' warnings; the annotations they record are
    /// set on the object.
    pub async fn validate(&self, req: &ResourceRequest, operation: Operation, object: Option<&mut Value>, old: Option<&Value>, dry_run: bool) -> ApiResult<Vec<String>> {
        let warnings = Mutex::new(Vec::new());
        let annotations = Mutex::new(Vec::new());
        let request = Request { req, operation, object: object.as_deref(), old, dry_run, warnings: &warnings, annotations: &annotations };
        let span = raft_store::trace::child("admission.validate");
        async {
            for v in self.validating.iter() {
                v.validate(&request).await?;
            }
            ApiResult::Ok(())
        }
        .instrument(span)
        .await?;
        if let Some(object) = object {
            set_annotations(object, annotations);
        }
        Ok(warnings.into_inner().unwrap_or_else(|e| e.into_inner()))
    }
}
