//! Authorization: a chain of authorizers asked in the configured order. The first that allows or
//! denies decides; when none has an opinion the request is refused (403). Members of
//! `system:masters` are allowed before any authorizer is asked. The chain comes from
//! `--authorization-mode` or an `AuthorizationConfiguration` file ([`config`]), which is
//! reloaded when it changes ([`reload`]).

mod abac;
mod always;
pub mod config;
pub mod metrics;
mod match_conditions;
mod node;
pub mod rbac;
mod reload;
mod webhook;

pub use always::{AlwaysAllow, AlwaysDeny};

use std::sync::{Arc, RwLock};

use super::attributes::Attributes;
use super::node::NodeGraph;
use super::rbac::policy;
use super::rbac::rules::Rule;
use super::rbac::RbacIndex;
use super::user::{UserInfo, PRIVILEGED_GROUP};
use crate::options::AuthorizationOptions;
use machinery::error::ApiError;
use metrics::AuthorizationMetrics;
use config::{Config, Mode};

/// What one authorizer (or the chain) says about a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Allow,
    Deny,
    NoOpinion,
}

/// A decision with the reason an authorizer gives for it (may be empty), and the error it met
/// deciding, if any (a webhook that could not be asked decides by its failure policy).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub decision: Decision,
    pub reason: String,
    pub error: Option<String>,
}

impl Verdict {
    pub fn allow(reason: impl Into<String>) -> Verdict {
        Verdict { decision: Decision::Allow, reason: reason.into(), error: None }
    }
    pub fn deny(reason: impl Into<String>) -> Verdict {
        Verdict { decision: Decision::Deny, reason: reason.into(), error: None }
    }
    pub fn no_opinion(reason: impl Into<String>) -> Verdict {
        Verdict { decision: Decision::NoOpinion, reason: reason.into(), error: None }
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

    /// Decides on a request.
    async fn authorize(&self, attrs: &Attributes) -> Verdict;

    /// The rules `user` holds in `namespace`; an authorizer that cannot list them says so.
    fn rules_for(&self, _user: &UserInfo, _namespace: &str) -> UserRules {
        UserRules { incomplete: true, ..Default::default() }
    }
}

/// An authorizer with the name the configuration gives it.
#[derive(Clone)]
pub struct Named {
    pub name: String,
    pub authorizer: Arc<dyn Authorizer>,
}

/// The configured authorizers, in order; replaced whole when the configuration is reloaded.
#[derive(Clone)]
pub struct Chain {
    authorizers: Arc<RwLock<Arc<Vec<Named>>>>,
    metrics: Arc<dyn AuthorizationMetrics>,
}

/// The chain's answer: a verdict, or an evaluation error when nobody allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Decided(Verdict),
    Failed(String),
}

impl Chain {
    pub fn new(authorizers: Vec<Named>, metrics: Arc<dyn AuthorizationMetrics>) -> Chain {
        Chain { authorizers: Arc::new(RwLock::new(Arc::new(authorizers))), metrics }
    }

    fn current(&self) -> Arc<Vec<Named>> {
        self.authorizers.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Puts `authorizers` in place of the current ones; requests under way finish with the old.
    pub fn replace(&self, authorizers: Vec<Named>) {
        *self.authorizers.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(authorizers);
    }

    /// Asks the authorizers in order, as Kubernetes' union authorizer does: an allow decides
    /// (whatever errors came before); a deny decides, or fails if it came with an error; reasons
    /// of those without an opinion are joined with newlines.
    pub async fn authorize(&self, attrs: &Attributes) -> Outcome {
        if attrs.user.in_group(PRIVILEGED_GROUP) {
            return Outcome::Decided(Verdict::allow(""));
        }
        let mut reasons = Vec::new();
        let mut errors = Vec::new();
        for a in self.current().iter() {
            let verdict = a.authorizer.authorize(attrs).await;
            if let Some(e) = &verdict.error {
                errors.push(e.clone());
            }
            match verdict.decision {
                Decision::Allow | Decision::Deny => {
                    self.metrics.authorization_decision(a.authorizer.mode(), &a.name, verdict.allowed());
                    return match verdict.error {
                        Some(e) if !verdict.allowed() => Outcome::Failed(e),
                        _ => Outcome::Decided(verdict),
                    };
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
        for a in self.current().iter() {
            let r = a.authorizer.rules_for(user, namespace);
            all.resource.extend(r.resource);
            all.non_resource.extend(r.non_resource);
            all.incomplete |= r.incomplete;
            all.errors.extend(r.errors);
        }
        all
    }
}

/// What builds authorizers for a configuration: the modes whose state is kept by the server
/// (RBAC and Node indexes, the ABAC policy read at start) and the metrics webhooks count in.
pub struct Factory {
    rbac: Arc<dyn Authorizer>,
    node: Arc<dyn Authorizer>,
    abac: Option<Arc<dyn Authorizer>>,
    metrics: Arc<dyn AuthorizationMetrics>,
}

impl Factory {
    /// The chain's authorizers for `config`.
    pub fn build(&self, config: &Config) -> Result<Vec<Named>, String> {
        config
            .authorizers
            .iter()
            .map(|entry| {
                let authorizer: Arc<dyn Authorizer> = match (entry.mode, &entry.webhook) {
                    (Mode::AlwaysAllow, _) => Arc::new(AlwaysAllow),
                    (Mode::AlwaysDeny, _) => Arc::new(AlwaysDeny),
                    (Mode::Rbac, _) => self.rbac.clone(),
                    (Mode::Node, _) => self.node.clone(),
                    (Mode::Abac, _) => self.abac.clone().ok_or("authorizer type ABAC is not allowed if it was not enabled at initial server startup")?,
                    (Mode::Webhook, Some(settings)) => Arc::new(webhook::Webhook::new(&entry.name, settings, &self.metrics)?),
                    (Mode::Webhook, None) => return Err(format!("authorizer {:?} has no webhook settings", entry.name)),
                };
                Ok(Named { name: entry.name.clone(), authorizer })
            })
            .collect()
    }
}

/// The chain the flags describe: `--authorization-config` (reloaded when it changes), or
/// `--authorization-mode` with each mode's own flags. Either refused is a startup error.
/// `node_id` names this replica in the reload metrics.
pub fn build(args: &AuthorizationOptions, node_id: u64, rbac: &Arc<RbacIndex>, nodes: &Arc<NodeGraph>, metrics: &Arc<dyn AuthorizationMetrics>) -> anyhow::Result<Chain> {
    let (config, file) = match &args.authorization_config {
        Some(path) => {
            if config::legacy_flags_set(args) {
                anyhow::bail!("--authorization-config can not be specified when --authorization-mode or --authorization-webhook-* flags are defined");
            }
            let data = std::fs::read(path).map_err(|e| anyhow::anyhow!("--authorization-config {}: {e}", path.display()))?;
            let config = config::parse(&data).map_err(|e| anyhow::anyhow!("--authorization-config {}: {e}", path.display()))?;
            (config, Some((path.clone(), data)))
        }
        None => (config::from_flags(args).map_err(anyhow::Error::msg)?, None),
    };
    let abac: Option<Arc<dyn Authorizer>> = match (&args.authorization_policy_file, config.has(Mode::Abac)) {
        (Some(path), true) => Some(Arc::new(abac::Abac::from_file(path).map_err(anyhow::Error::msg)?)),
        (Some(_), false) if file.is_some() => anyhow::bail!("cannot specify --authorization-policy-file without mode ABAC"),
        (None, true) => anyhow::bail!("authorization-mode ABAC's authorization policy file not passed"),
        _ => None,
    };
    let factory = Factory {
        rbac: Arc::new(rbac::Rbac::new(rbac.clone())),
        node: Arc::new(node::Node::new(nodes.clone(), policy::cluster_role_rules("system:node"))),
        abac,
        metrics: metrics.clone(),
    };
    let chain = Chain::new(factory.build(&config).map_err(anyhow::Error::msg)?, metrics.clone());
    if let Some((path, data)) = file {
        reload::spawn(reload::Reloader::new(path, data, config, factory, chain.clone(), node_id));
    }
    Ok(chain)
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
