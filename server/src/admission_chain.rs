//! The admission chain a node runs: the plugins `--enable-admission-plugins` and the defaults
//! name, less `--disable-admission-plugins`, each built from what it needs, in kube-apiserver's
//! order. The RBAC escalation checks are not a plugin (they belong to the RBAC kinds' storage)
//! and always run first.

use std::sync::Arc;

use admission::always::AlwaysDeny;
use admission::always_pull_images::AlwaysPullImages;
use admission::anti_affinity_topology::LimitPodHardAntiAffinityTopology;
use admission::certificate_subject_restriction::CertificateSubjectRestriction;
use admission::certificates::CertificateSigners;
use admission::classes::Classes;
use admission::default_ingress_class::DefaultIngressClass;
use admission::default_storage_class::DefaultStorageClass;
use admission::default_toleration_seconds::DefaultTolerationSeconds;
use admission::deny_service_external_ips::DenyServiceExternalIPs;
use admission::event_rate_limit::EventRateLimit;
use admission::extended_resource_toleration::ExtendedResourceToleration;
use admission::image_policy_webhook::ImagePolicyWebhook;
use admission::limit_ranger::LimitRanger;
use admission::namespace_autoprovision::{self, NamespaceAutoProvision};
use admission::namespace_exists::NamespaceExists;
use admission::namespace_lifecycle::NamespaceLifecycle;
use admission::node_restriction::NodeRestriction;
use admission::owner_references::OwnerReferencesPermissionEnforcement;
use admission::plugins::{self, Configurations, Plugin};
use admission::pod_node_selector::PodNodeSelector;
use admission::pod_security::PodSecurity;
use admission::pod_toleration_restriction::PodTolerationRestriction;
use admission::pod_topology_labels::PodTopologyLabels;
use admission::policy::{MutatingPolicies, ValidatingPolicies};
use admission::priority::Priority;
use admission::pvc_resize::PersistentVolumeClaimResize;
use admission::rbac_escalation::Escalation;
use admission::runtime_class::RuntimeClass;
use admission::resource_quota::ResourceQuota;
use admission::service_account::ServiceAccounts;
use admission::storage_protection::StorageObjectInUseProtection;
use admission::taint_nodes_by_condition::TaintNodesByCondition;
use admission::webhooks::{MutatingWebhooks, ValidatingWebhooks};
use admission::{Admission, Replicated};
use access::Auth;

use crate::cli::Args;

/// What the plugins are built from.
pub struct Parts {
    pub replicated: Replicated,
    pub auth: Auth,
    pub configurations: Configurations,
    pub classes: Arc<Classes>,
    /// `--default-not-ready-toleration-seconds`, `--default-unreachable-toleration-seconds`.
    pub toleration_seconds: (i64, i64),
    /// How NamespaceAutoProvision creates namespaces, once the server has its loopback client.
    pub namespace_creator: namespace_autoprovision::Creator,
}

/// NamespaceAutoProvision's namespaces are created by the server's own client.
#[async_trait::async_trait]
impl namespace_autoprovision::CreateNamespace for crate::loopback::Client {
    async fn create_namespace(&self, name: &str) -> machinery::error::ApiResult<()> {
        let namespaces = machinery::registry::lookup("", "v1", "namespaces").expect("namespaces are served");
        let namespace = serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
        self.create(&crate::loopback::request(namespaces, None, "", access::request::Verb::Create), namespace).await
    }
}

/// The plugins that run; an unknown, contradictory or unavailable name is an error at start.
pub fn build(args: &Args, parts: &Parts) -> anyhow::Result<Admission> {
    let names = plugins::resolve(&args.enable_admission_plugins, &args.disable_admission_plugins).map_err(anyhow::Error::msg)?;
    let mut mutating = Vec::new();
    let mut validating: Vec<Arc<dyn admission::Validating>> = vec![Arc::new(Escalation { auth: parts.auth.clone() })];
    for name in names {
        let plugin = match plugin(name, parts)? {
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

/// The plugin `name`, when this server has it; an error when its configuration is invalid.
fn plugin(name: &str, parts: &Parts) -> anyhow::Result<Option<Plugin>> {
    let Parts { replicated, auth, classes, configurations, .. } = parts;
    let store = replicated.store.clone();
    Ok(Some(match name {
        // AlwaysAdmit admits what the others do.
        "AlwaysAdmit" => Plugin::default(),
        "NamespaceAutoProvision" => {
            Plugin::mutating(Arc::new(NamespaceAutoProvision { namespaces: replicated.namespaces.clone(), creator: parts.namespace_creator.clone() }))
        }
        "NamespaceLifecycle" => Plugin::both(Arc::new(NamespaceLifecycle { namespaces: replicated.namespaces.clone(), store })),
        "NamespaceExists" => Plugin::validating(Arc::new(NamespaceExists { namespaces: replicated.namespaces.clone(), store })),
        "AlwaysDeny" => Plugin::validating(Arc::new(AlwaysDeny)),
        "LimitPodHardAntiAffinityTopology" => Plugin::validating(Arc::new(LimitPodHardAntiAffinityTopology)),
        "AlwaysPullImages" => Plugin::both(Arc::new(AlwaysPullImages)),
        "ImagePolicyWebhook" => Plugin::validating(Arc::new(ImagePolicyWebhook::new(configurations.get(name)).map_err(anyhow::Error::msg)?)),
        "EventRateLimit" => Plugin::validating(Arc::new(EventRateLimit::new(configurations.get(name)).map_err(anyhow::Error::msg)?)),
        "ExtendedResourceToleration" => Plugin::mutating(Arc::new(ExtendedResourceToleration)),
        "DenyServiceExternalIPs" => Plugin::validating(Arc::new(DenyServiceExternalIPs)),
        "LimitRanger" => Plugin::both(Arc::new(LimitRanger { ranges: replicated.limit_ranges.clone() })),
        "ServiceAccount" => Plugin::mutating(Arc::new(ServiceAccounts { store })),
        "NodeRestriction" => Plugin::validating(Arc::new(NodeRestriction { store })),
        "TaintNodesByCondition" => Plugin::mutating(Arc::new(TaintNodesByCondition)),
        "Priority" => Plugin::both(Arc::new(Priority { classes: classes.priority.clone() })),
        "DefaultTolerationSeconds" => {
            let (not_ready, unreachable) = parts.toleration_seconds;
            Plugin::mutating(Arc::new(DefaultTolerationSeconds { not_ready, unreachable }))
        }
        "DefaultStorageClass" => Plugin::mutating(Arc::new(DefaultStorageClass { classes: classes.storage.clone() })),
        "StorageObjectInUseProtection" => Plugin::mutating(Arc::new(StorageObjectInUseProtection)),
        "OwnerReferencesPermissionEnforcement" => Plugin::validating(Arc::new(OwnerReferencesPermissionEnforcement { auth: auth.clone() })),
        "PersistentVolumeClaimResize" => Plugin::validating(Arc::new(PersistentVolumeClaimResize { classes: classes.storage.clone() })),
        "RuntimeClass" => Plugin::both(Arc::new(RuntimeClass { classes: classes.runtime.clone() })),
        "PodSecurity" => Plugin::validating(Arc::new(PodSecurity::new(replicated, configurations.get(name)).map_err(anyhow::Error::msg)?)),
        "PodNodeSelector" => Plugin::both(Arc::new(PodNodeSelector::new(replicated, configurations.get(name)))),
        "PodTolerationRestriction" => Plugin::both(Arc::new(PodTolerationRestriction::new(replicated, configurations.get(name)).map_err(anyhow::Error::msg)?)),
        "CertificateApproval" => Plugin::validating(Arc::new(CertificateSigners::approval(auth.clone()))),
        "CertificateSigning" => Plugin::validating(Arc::new(CertificateSigners::signing(auth.clone()))),
        "CertificateSubjectRestriction" => Plugin::validating(Arc::new(CertificateSubjectRestriction)),
        "PodTopologyLabels" if machinery::features::enabled("PodTopologyLabelsAdmission") => Plugin::mutating(Arc::new(PodTopologyLabels { store })),
        "DefaultIngressClass" => Plugin::mutating(Arc::new(DefaultIngressClass { classes: classes.ingress.clone() })),
        "MutatingAdmissionPolicy" if machinery::features::enabled("MutatingAdmissionPolicy") => {
            Plugin::mutating(Arc::new(MutatingPolicies::new(replicated.clone(), auth.clone())))
        }
        "MutatingAdmissionWebhook" => Plugin::mutating(Arc::new(MutatingWebhooks(replicated.clone()))),
        "ValidatingAdmissionPolicy" => Plugin::validating(Arc::new(ValidatingPolicies::new(replicated.clone(), auth.clone()))),
        "ValidatingAdmissionWebhook" => Plugin::validating(Arc::new(ValidatingWebhooks(replicated.clone()))),
        "ResourceQuota" => {
            let quota = ResourceQuota::new(replicated.store.clone(), replicated.quotas.clone(), configurations.get(name)).map_err(anyhow::Error::msg)?;
            Plugin::validating(Arc::new(quota))
        }
        _ => return Ok(None),
    }))
}
