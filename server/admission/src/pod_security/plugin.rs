//! The plugin: which writes it looks at (pods, pod-template kinds, namespaces; creates and
//! updates), the exemptions, and the three modes applied to a pod as kube-apiserver applies them,
//! with its audit annotations (`pod-security.kubernetes.io/enforce-policy`, `audit-violations`,
//! `exempt`, `error`).

use std::sync::Arc;

use serde_json::{Map, Value};

use access::authz::rbac;
use machinery::error::{ApiError, ApiResult, Cause};
use machinery::expr::quote;
use machinery::registry::{self, ResourceInfo};

use super::checks::Pod;
use super::configuration::Configuration;
use super::evaluation::{evaluate, Verdict};
use super::labels;
use super::levels::{Level, LevelVersion, Policy};
use super::pods::{self, IGNORED_SUBRESOURCES};
use crate::audit_annotations::annotate;
use crate::namespaces::Namespaces;
use crate::{Operation, Replicated, Request, Validating};

pub struct PodSecurity {
    pub(super) namespaces: Arc<Namespaces>,
    pub(super) store: raft_store::Store,
    pub(super) pods: &'static ResourceInfo,
    pub(super) config: Configuration,
}

/// An audit annotation of the plugin.
fn annotate_as(key: &str, value: impl Into<String>) {
    annotate(format!("pod-security.kubernetes.io/{key}"), value);
}

/// Field problems as Go's aggregate error prints them.
fn aggregate(problems: &[Cause]) -> String {
    rbac::aggregate(&problems.iter().map(|c| format!("{}: {}", c.field, c.message)).collect::<Vec<_>>())
}

impl PodSecurity {
    /// The plugin with its configuration (`None`: the defaults); an invalid one is an error.
    pub fn new(replicated: &Replicated, configuration: Option<&Value>) -> Result<PodSecurity, String> {
        let config = Configuration::load(configuration).map_err(|e| format!("PodSecurity invalid: {e}"))?;
        let pods = registry::lookup("", "v1", "pods").ok_or("PodSecurity: pods are not served")?;
        Ok(PodSecurity { namespaces: replicated.namespaces.clone(), store: replicated.store.clone(), pods, config })
    }

    pub(super) fn exempt_namespace(&self, namespace: &str) -> bool {
        self.config.namespaces.contains(namespace)
    }

    pub(super) fn exempt_runtime_class(&self, spec: &Value) -> bool {
        spec["runtimeClassName"].as_str().is_some_and(|rc| self.config.runtime_classes.contains(rc))
    }

    /// A namespace's policy from its labels, and the labels' problems.
    pub(super) fn policy(&self, labels: Option<&Map<String, Value>>) -> (Policy, Vec<Cause>) {
        labels::policy(labels, &self.config.defaults)
    }

    /// Exemptions that apply to any pod-bearing write, by namespace then user; their annotation
    /// added when one applies.
    fn exempt(&self, r: &Request<'_>, namespace: &str) -> bool {
        let reason = match () {
            _ if self.exempt_namespace(namespace) => "namespace",
            _ if self.config.usernames.contains(&r.req.user.name) => "user",
            _ => return false,
        };
        annotate_as("exempt", reason);
        true
    }

    fn pod(&self, r: &Request<'_>) -> ApiResult<()> {
        if r.req.subresource.as_deref().is_some_and(|s| IGNORED_SUBRESOURCES.contains(&s)) {
            return Ok(());
        }
        let namespace = r.req.namespace.as_deref().unwrap_or_default();
        if self.exempt(r, namespace) {
            return Ok(());
        }
        let Some(ns) = self.namespaces.get(namespace) else {
            let message = format!("Internal error occurred: failed to lookup namespace {}", quote(namespace));
            annotate_as("error", format!("{message}: namespaces {} not found", quote(namespace)));
            return Err(ApiError::internal(message));
        };
        let (policy, problems) = self.policy(ns["metadata"]["labels"].as_object());
        if problems.is_empty() && policy.fully_privileged() {
            annotate_as("enforce-policy", LevelVersion::PRIVILEGED.to_string());
            return Ok(());
        }
        let Some(pod) = r.object else { return Ok(()) };
        if let (Operation::Update, Some(old)) = (r.operation, r.old) {
            if !pods::significant_update(pod, old) {
                return Ok(());
            }
        }
        self.evaluate(r, policy, &problems, Pod { metadata: &pod["metadata"], spec: &pod["spec"] }, true)
    }

    /// A pod-template kind: audited and warned about, never refused.
    fn template(&self, r: &Request<'_>, path: &[&str]) -> ApiResult<()> {
        if r.req.subresource.is_some() {
            return Ok(());
        }
        let namespace = r.req.namespace.as_deref().unwrap_or_default();
        if self.exempt(r, namespace) {
            return Ok(());
        }
        let Some(ns) = self.namespaces.get(namespace) else {
            annotate_as("error", format!("failed to lookup namespace {}: namespaces {} not found", quote(namespace), quote(namespace)));
            return Ok(());
        };
        let (policy, problems) = self.policy(ns["metadata"]["labels"].as_object());
        if problems.is_empty() && policy.warn.level == Level::Privileged && policy.audit.level == Level::Privileged {
            return Ok(());
        }
        let Some(template) = r.object.map(|o| path.iter().fold(o, |v, k| &v[*k])).filter(|t| !t.is_null()) else { return Ok(()) };
        self.evaluate(r, policy, &problems, Pod { metadata: &template["metadata"], spec: &template["spec"] }, false)
    }

    /// The modes applied to one pod: enforce (when `enforce`) refuses it, audit annotates the
    /// event, warn answers with a warning unless the write is refused; each level and version
    /// evaluated once.
    fn evaluate(&self, r: &Request<'_>, policy: Policy, problems: &[Cause], pod: Pod, enforce: bool) -> ApiResult<()> {
        if self.exempt_runtime_class(pod.spec) {
            annotate_as("exempt", "runtimeClass");
            return Ok(());
        }
        if !problems.is_empty() {
            annotate_as("error", format!("Failed to parse policy: {}", aggregate(problems)));
        }
        let mut evaluated: Vec<(LevelVersion, Verdict)> = Vec::new();
        let mut verdict = |lv: LevelVersion| -> Verdict {
            if let Some((_, v)) = evaluated.iter().find(|(seen, _)| *seen == lv) {
                return v.clone();
            }
            let v = evaluate(lv, &pod);
            evaluated.push((lv, v.clone()));
            v
        };
        let mut refusal = None;
        if enforce {
            annotate_as("enforce-policy", policy.enforce.to_string());
            let v = verdict(policy.enforce);
            if !v.allowed() {
                let info = r.req.info;
                refusal = Some(ApiError::forbidden(info.group, info.resource, r.req.name(), format!("violates PodSecurity \"{}\": {}", policy.enforce, v.details())));
            }
        }
        let audit = verdict(policy.audit);
        if !audit.allowed() {
            annotate_as("audit-violations", format!("would violate PodSecurity \"{}\": {}", policy.audit, audit.details()));
        }
        match refusal {
            Some(refusal) => Err(refusal),
            None => {
                let warn = verdict(policy.warn);
                if !warn.allowed() {
                    r.warn(format!("would violate PodSecurity \"{}\": {}", policy.warn, warn.details()));
                }
                Ok(())
            }
        }
    }
}

#[async_trait::async_trait]
impl Validating for PodSecurity {
    fn name(&self) -> &'static str {
        "PodSecurity"
    }

    async fn validate(&self, r: &Request<'_>) -> ApiResult<()> {
        if r.operation == Operation::Delete {
            return Ok(());
        }
        let info = r.req.info;
        match (info.group, info.resource) {
            ("", "namespaces") => self.namespace(r),
            ("", "pods") => self.pod(r),
            (group, resource) => match pods::template_path(group, resource) {
                Some(path) => self.template(r, path),
                None => Ok(()),
            },
        }
    }
}
