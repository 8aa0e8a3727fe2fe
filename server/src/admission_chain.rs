//! The admission chain a node runs: the plugins `--enable-admission-plugins` and the defaults
//! name, less `--disable-admission-plugins`, each built from what it needs, in kube-apiserver's
//! order. The RBAC escalation checks are not a plugin (they belong to the RBAC kinds' storage)
//! and always run first.

use std::sync::Arc;

use admission::certificates::CertificateSigners;
use admission::limit_ranger::LimitRanger;
use admission::node_restriction::NodeRestriction;
use admission::plugins::{self, Configurations, Plugin};
use admission::policy::{MutatingPolicies, ValidatingPolicies};
use admission::rbac_escalation::Escalation;
use admission::resource_quota::ResourceQuota;
use admission::service_account::ServiceAccounts;
use admission::webhooks::{MutatingWebhooks, ValidatingWebhooks};
use admission::{Admission, Replicated};
use access::Auth;

use crate::cli::Args;

/// What the plugins are built from.
pub struct Parts {
    pub replicated: Replicated,
    pub auth: Auth,
    pub configurations: Configurations,
}

/// The plugins that run; an unknown, contradictory or unavailable name is an error at start.
pub fn build(args: &Args, parts: &Parts) -> anyhow::Result<Admission> {
    let names = plugins::resolve(&args.enable_admission_plugins, &args.disable_admission_plugins).map_err(anyhow::Error::msg)?;
    let mut mutating = Vec::new();
    let mut validating: Vec<Arc<dyn admission::Validating>> = vec![Arc::new(Escalation { auth: parts.auth.clone() })];
    for name in names {
        let plugin = match plugin(name, parts) {
            Some(plugin) => plugin,
            // A default this server does not have (or one whose feature gate is off) is left out
            // quietly; one asked for by name is not.
            None if args.enable_admission_plugins.iter().any(|n| n == name) => anyhow::bail!("--enable-admission-plugins: {name} is not available in this server"),
            None => continue,
        };
        mutating.extend(plugin.mutating);
        validating.extend(plugin.validating);
    }
    Ok(Admission::new(mutating, validating))
}

/// The plugin `name`, when this server has it.
fn plugin(name: &str, parts: &Parts) -> Option<Plugin> {
    let Parts { replicated, auth, .. } = parts;
    let store = replicated.store.clone();
    Some(match name {
        // NamespaceLifecycle is the namespace check every namespaced write makes.
        "NamespaceLifecycle" => Plugin::default(),
        "LimitRanger" => Plugin::both(Arc::new(LimitRanger { ranges: replicated.limit_ranges.clone() })),
        "ServiceAccount" => Plugin::mutating(Arc::new(ServiceAccounts { store })),
        "NodeRestriction" => Plugin::validating(Arc::new(NodeRestriction { store })),
        "CertificateApproval" => Plugin::validating(Arc::new(CertificateSigners::approval(auth.clone()))),
        "CertificateSigning" => Plugin::validating(Arc::new(CertificateSigners::signing(auth.clone()))),
        "MutatingAdmissionPolicy" if machinery::registry::gate_enabled("MutatingAdmissionPolicy") => {
            Plugin::mutating(Arc::new(MutatingPolicies::new(replicated.clone(), auth.clone())))
        }
        "MutatingAdmissionWebhook" => Plugin::mutating(Arc::new(MutatingWebhooks(replicated.clone()))),
        "ValidatingAdmissionPolicy" => Plugin::validating(Arc::new(ValidatingPolicies::new(replicated.clone(), auth.clone()))),
        "ValidatingAdmissionWebhook" => Plugin::validating(Arc::new(ValidatingWebhooks(replicated.clone()))),
        "ResourceQuota" => Plugin::validating(Arc::new(ResourceQuota::new(replicated.store.clone(), replicated.quotas.clone()))),
        _ => return None,
    })
}
