//! The names of resources Kubernetes knows (what containers request, what quotas count, what
//! limit ranges bound), and the checks of a resource name shared by the kinds that use them.

use serde_json::Value;

use crate::error::Cause;
use crate::registry::kinds::fields::qualified_name;

/// Resources without a domain that Kubernetes defines.
const STANDARD: &[&str] = &[
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage", "limits.cpu", "limits.memory",
    "limits.ephemeral-storage", "pods", "resourcequotas", "services", "replicationcontrollers", "secrets", "configmaps", "persistentvolumeclaims", "storage",
    "requests.storage", "services.nodeports", "services.loadbalancers",
];

/// Resources a quota may count without a domain.
const QUOTA: &[&str] = &[
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.storage", "requests.ephemeral-storage", "limits.cpu", "limits.memory",
    "limits.ephemeral-storage", "pods", "resourcequotas", "services", "replicationcontrollers", "secrets", "persistentvolumeclaims", "configmaps",
    "services.nodeports", "services.loadbalancers",
];

/// Resources counted in whole units.
const INTEGER: &[&str] = &["pods", "resourcequotas", "services", "replicationcontrollers", "secrets", "configmaps", "persistentvolumeclaims", "services.nodeports", "services.loadbalancers"];

/// What a pod counts as, and what its containers request: the resources quota scopes of pods apply to.
const POD_COUNT: &[&str] = &["pods"];
const POD_COMPUTE: &[&str] = &["cpu", "memory", "limits.cpu", "limits.memory", "requests.cpu", "requests.memory"];

/// What a claim counts as and requests: the resources the volume attributes class scope applies to.
const CLAIM: &[&str] = &["persistentvolumeclaims", "requests.storage"];

/// The scopes a quota may have.
pub const SCOPES: &[&str] = &["Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "PriorityClass", "VolumeAttributesClass"];

fn huge_pages(name: &str) -> bool {
    name.starts_with("hugepages-") || name.starts_with("requests.hugepages-")
}

/// A standard resource name or a qualified one with a domain; false when a cause was added.
pub fn resource_name(name: &str, field: &str, out: &mut Vec<Cause>) -> bool {
    let before = out.len();
    qualified_name(&Value::from(name), field, out);
    if out.len() > before {
        return false;
    }
    if !name.contains('/') && !STANDARD.contains(&name) && !huge_pages(name) {
        out.push(Cause::invalid(field, name, "must be a standard resource type or fully qualified"));
        return false;
    }
    true
}

/// A resource a quota may count.
pub fn quota_resource_name(name: &str, field: &str, out: &mut Vec<Cause>) {
    resource_name(name, field, out);
    if !name.contains('/') && !is_quota_resource(name) {
        out.push(Cause::invalid(field, name, "must be a standard resource for quota"));
    }
}

pub fn is_quota_resource(name: &str) -> bool {
    QUOTA.contains(&name) || huge_pages(name)
}

/// Whether the resource is counted in whole units (object counts, extended resources).
pub fn is_integer(name: &str) -> bool {
    INTEGER.contains(&name) || is_extended(name)
}

/// A resource of a domain other than Kubernetes', as devices advertise them.
fn is_extended(name: &str) -> bool {
    let native = !name.contains('/') || name.contains("kubernetes.io/");
    !native && !name.starts_with("requests.") && crate::meta::qualified_name_problem(&format!("requests.{name}")).is_none()
}

/// Whether a quota scope applies to a resource.
pub fn scope_applies(scope: &str, resource: &str) -> bool {
    match scope {
        "Terminating" | "NotTerminating" | "NotBestEffort" | "PriorityClass" | "CrossNamespacePodAffinity" => POD_COUNT.contains(&resource) || POD_COMPUTE.contains(&resource),
        "BestEffort" => POD_COUNT.contains(&resource),
        "VolumeAttributesClass" => CLAIM.contains(&resource),
        _ => true,
    }
}
