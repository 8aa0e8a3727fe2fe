//! Authorization: a chain of authorizers asked in the configured order. The first that allows or
//! denies decides; when none has an opinion the request is refused (403). Members of
//! `system:masters` are allowed before any authorizer is asked.

mod always;
mod node;
pub mod rbac;

pub use always::{AlwaysAllow, AlwaysDeny};

use std::sync::Arc;

use super::attributes::Attributes;
use super::node::NodeGraph;
use super::rbac::policy;
use super::rbac::rules::Rule;
use super::rbac::RbacIndex;
use super::user::{UserInfo, PRIVILEGED_GROUP};
use crate::cli::Args;
use crate::error::ApiError;
use crate::metrics::Metrics;

/// What one authorizer (or the chain) says about a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Allow,
    Deny,
    NoOpinion,
}

/// A decision with the reason an authorizer gives for it (may be empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub decision: Decision,
    pub reason: String,
}

impl Verdict {
    pub fn allow(reason: impl Into<String>) -> Verdict {
        Verdict { decision: Decision::Allow, reason: reason.into() }
    }
    pub fn deny(reason: impl Into<String>) -> Verdict {
        Verdict { decision: Decision::Deny, reason: reason.into() }
    }
    pub fn no_opinion(reason: impl Into<String>) -> Verdict {
        Verdict { decision: Decision::NoOpinion, reason: reason.into() }
    }
    pub fn allowed(&self) -> bool {
        self.decision == Decision::Allow
    }
}

/// The rules a user holds in a namespace, for `SelfSubjectRulesReview`.
#[derive(Debug, Clone, Default)]
pub struct UserRules {
    pub resource: Vec<Rule>,
    pub non_resource: Vec<Rule>,
    /// Some authorizer could not list its rules (or failed to): the list may be short.
    pub incomplete: bool,
    pub errors: Vec<String>,
}

/// One authorization mode.
#[async_trait::async_trait]
pub trait Authorizer: Send + Sync {
    /// The mode's name as `--authorization-mode` spells it (`RBAC`, `Node`, ...).
    fn mode(&self) -> &'static str;

    /// This authorizer's name (webhooks are named in the configuration file).
    fn name(&self) -> String {
        self.mode().to_ascii_lowercase()
    }

    /// Decides on a request. `Err` is an evaluation failure (500 unless another authorizer
    /// allows).
    async fn authorize(&self, attrs: &Attributes) -> Result<Verdict, String>;

    /// The rules `user` holds in `namespace`; an authorizer that cannot list them says so.
    fn rules_for(&self, _user: &UserInfo, _namespace: &str) -> UserRules {
        UserRules { incomplete: true, ..Default::default() }
    }
}

/// The configured authorizers, in order.
#[derive(Clone)]
pub struct Chain {
    authorizers: Arc<Vec<Arc<dyn Authorizer>>>,
    metrics: Arc<Metrics>,
}

/// The chain's answer: a verdict, or an evaluation error when nobody allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Decided(Verdict),
    Failed(String),
}

impl Chain {
    pub fn new(authorizers: Vec<Arc<dyn Authorizer>>, metrics: Arc<Metrics>) -> Chain {
        Chain { authorizers: Arc::new(authorizers), metrics }
    }

    /// Asks the authorizers in order. Reasons of those without an opinion are joined with
    /// newlines, as Kubernetes' union authorizer does.
    pub async fn authorize(&self, attrs: &Attributes) -> Outcome {
        if attrs.user.in_group(PRIVILEGED_GROUP) {
            return Outcome::Decided(Verdict::allow(""));
        }
        let mut reasons = Vec::new();
        let mut errors = Vec::new();
        for a in self.authorizers.iter() {
            let verdict = match a.authorize(attrs).await {
                Ok(v) => v,
                Err(e) => {
                    errors.push(e);
                    continue;
                }
            };
            match verdict.decision {
                Decision::Allow | Decision::Deny => {
                    self.metrics.authorization_decision(a.mode(), &a.name(), verdict.allowed());
                    return Outcome::Decided(verdict);
                }
                Decision::NoOpinion if !verdict.reason.is_empty() => reasons.push(verdict.reason),
                Decision::NoOpinion => {}
            }
        }
        if errors.is_empty() {
            Outcome::Decided(Verdict::no_opinion(reasons.join("\n")))
        } else {
            Outcome::Failed(errors.join(", "))
        }
    }

    /// Whether the chain allows `attrs` (errors count as not allowed).
    pub async fn allows(&self, attrs: &Attributes) -> bool {
        matches!(self.authorize(attrs).await, Outcome::Decided(v) if v.allowed())
    }

    /// The rules every authorizer grants `user` in `namespace`, joined.
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> UserRules {
        let mut all = UserRules::default();
        for a in self.authorizers.iter() {
            let r = a.rules_for(user, namespace);
            all.resource.extend(r.resource);
            all.non_resource.extend(r.non_resource);
            all.incomplete |= r.incomplete;
            all.errors.extend(r.errors);
        }
        all
    }
}

/// The chain `--authorization-mode` names (a comma list, order significant), with each mode's
/// own flags.
pub fn build(args: &Args, rbac: &Arc<RbacIndex>, nodes: &Arc<NodeGraph>, metrics: &Arc<Metrics>) -> anyhow::Result<Chain> {
    let mut authorizers: Vec<Arc<dyn Authorizer>> = Vec::new();
    let mut seen = Vec::new();
    for mode in args.authorization_mode.split(',').map(str::trim).filter(|m| !m.is_empty()) {
        if seen.contains(&mode) {
            anyhow::bail!("--authorization-mode: {mode:?} is listed more than once");
        }
        seen.push(mode);
        authorizers.push(match mode {
            "AlwaysAllow" => Arc::new(AlwaysAllow),
            "AlwaysDeny" => Arc::new(AlwaysDeny),
            "RBAC" => Arc::new(rbac::Rbac::new(rbac.clone())),
            "Node" => Arc::new(node::Node::new(nodes.clone(), policy::cluster_role_rules("system:node"))),
            other => anyhow::bail!("--authorization-mode: unknown authorization mode {other:?} (supported: AlwaysAllow, AlwaysDeny, Node, RBAC)"),
        });
    }
    if authorizers.is_empty() {
        anyhow::bail!("--authorization-mode: at least one authorization mode must be given");
    }
    Ok(Chain::new(authorizers, metrics.clone()))
}

/// The 403 for a refused request, worded as Kubernetes words it, with the reason appended.
pub fn forbidden(attrs: &Attributes, reason: &str) -> ApiError {
    let mut message = if attrs.resource_request {
        let scope = if attrs.namespace.is_empty() {
            "at the cluster scope".to_string()
        } else {
            format!("in the namespace \"{}\"", attrs.namespace)
        };
        format!(
            "User \"{}\" cannot {} resource \"{}\" in API group \"{}\" {scope}",
            attrs.user.name,
            attrs.verb,
            attrs.combined_resource(),
            attrs.api_group
        )
    } else {
        format!("User \"{}\" cannot {} path \"{}\"", attrs.user.name, attrs.verb, attrs.path)
    };
    if !reason.is_empty() {
        message = format!("{message}: {reason}");
    }
    let resource = if attrs.resource_request { attrs.resource.as_str() } else { "" };
    ApiError::forbidden(&attrs.api_group, resource, &attrs.name, message)
}
