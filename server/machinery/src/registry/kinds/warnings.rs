//! Warnings several kinds share, in kube-apiserver's words: node labels Kubernetes has
//! replaced, names that are no DNS label where pods take them, IP addresses and CIDRs in forms
//! Kubernetes discourages, and fractional byte quantities.

use serde_json::Value;

use crate::expr::amount::Amount;
use crate::expr::quantity::parse as parse_quantity;
use crate::expr::quote;
use crate::registry::kinds::fields::{parse_cidr, parse_ip};

/// Node labels Kubernetes has replaced, with what it says about each.
const DEPRECATED_NODE_LABELS: &[(&str, &str)] = &[
    ("beta.kubernetes.io/arch", "deprecated since v1.14; use \"kubernetes.io/arch\" instead"),
    ("beta.kubernetes.io/os", "deprecated since v1.14; use \"kubernetes.io/os\" instead"),
    ("failure-domain.beta.kubernetes.io/region", "deprecated since v1.17; use \"topology.kubernetes.io/region\" instead"),
    ("failure-domain.beta.kubernetes.io/zone", "deprecated since v1.17; use \"topology.kubernetes.io/zone\" instead"),
    ("beta.kubernetes.io/instance-type", "deprecated since v1.17; use \"node.kubernetes.io/instance-type\" instead"),
    ("app.kubernetes.io/created-by", "deprecated since v1.9"),
    ("scheduler.alpha.kubernetes.io/preferAvoidPods", "deprecated since v1.22; use Taints and Tolerations instead"),
    ("node-role.kubernetes.io/master", "use \"node-role.kubernetes.io/control-plane\" instead"),
];

/// What Kubernetes says about a replaced node label, if `key` is one.
pub fn deprecated_node_label(key: &str) -> Option<&'static str> {
    DEPRECATED_NODE_LABELS.iter().find(|(k, _)| *k == key).map(|(_, m)| *m)
}

/// A node selector's deprecated labels (a RuntimeClass's, a StorageClass's topology).
pub fn node_selector_labels(labels: &Value, field: &str) -> Vec<String> {
    let keys = labels.as_object().into_iter().flat_map(|m| m.keys());
    keys.filter_map(|k| deprecated_node_label(k).map(|m| format!("{field}: {m}"))).collect()
}

/// The warning of a workload whose name is no DNS label (its pods' names and hostnames come
/// from it); `what` says where the name goes.
pub fn name_warning(obj: &Value, what: &str) -> Option<String> {
    let name = obj["metadata"]["name"].as_str().unwrap_or_default();
    let mut problems = Vec::new();
    if name.len() > 63 {
        problems.push("must be no more than 63 characters".to_string());
    }
    if !crate::meta::is_dns_label(name, usize::MAX, false) {
        // A valid subdomain that is no label can only have dots.
        problems.push(match crate::meta::is_dns_subdomain(name) {
            true => "must not contain dots".to_string(),
            false => crate::meta::DNS1123_LABEL.to_string(),
        });
    }
    (!problems.is_empty()).then(|| format!("metadata.name: {what}, which can result in surprising behavior; a DNS label is recommended: [{}]", problems.join(" ")))
}

/// The name warning of the kinds that make pods (Deployments, ReplicaSets, Jobs, ...).
pub const POD_NAMES: &str = "this is used in Pod names and hostnames";

/// An IP address Kubernetes accepts but discourages: IPv4-mapped, or IPv6 not in RFC 5952 form.
pub fn ip_warnings(field: &str, value: &str) -> Vec<String> {
    match parse_ip(value) {
        Some(ip) if ip.to_canonical() != ip => vec![format!("{field}: non-standard IP address {} is invalid: use {}", quote(value), quote(ip.to_canonical().to_string()))],
        Some(ip) if ip.is_ipv6() && ip.to_string() != value => {
            vec![format!("{field}: IPv6 address {} should be in RFC 5952 canonical format ({})", quote(value), quote(ip.to_string()))]
        }
        _ => Vec::new(),
    }
}

/// A quantity of bytes with a fraction.
pub(crate) fn fractional_bytes(v: &Value, field: &str) -> Option<String> {
    let text = v.as_str()?;
    let q = parse_quantity(text).ok()?;
    let shown = Amount::parse(text).map(|a| a.to_string()).unwrap_or_else(|_| text.to_string());
    (!q.is_integer()).then(|| format!("{field}: fractional byte value {} is invalid, must be an integer", quote(shown)))
}

/// A claim spec's fractional storage sizes (PVCs, ephemeral volumes, StatefulSets' templates).
pub fn claim_spec(spec: &Value, path: &str) -> Vec<String> {
    ["requests", "limits"]
        .iter()
        .filter_map(|kind| fractional_bytes(&spec["resources"][*kind]["storage"], &format!("{path}.resources.{kind}[storage]")))
        .collect()
}

/// The suffix Kubernetes reserves for admission configurations read from manifests at start.
const STATIC_SUFFIX: &str = ".static.k8s.io";

/// An admission webhook configuration, policy or binding named with the reserved suffix (the
/// manifest-based configuration gate, alpha, is off: the name is allowed, with a warning).
pub fn static_suffix(obj: &Value, _: Option<&Value>) -> Vec<String> {
    match obj["metadata"]["name"].as_str().is_some_and(|n| n.ends_with(STATIC_SUFFIX)) {
        true => vec![format!("metadata.name: names ending with \"{STATIC_SUFFIX}\" are reserved for static manifest-based configurations and cannot be managed via the API")],
        false => Vec::new(),
    }
}

/// A CIDR Kubernetes accepts but discourages: bits set past the prefix, IPv4-mapped, or IPv6 not
/// in RFC 5952 form.
pub fn cidr_warnings(field: &str, value: &str) -> Vec<String> {
    let Some((ip, bits)) = parse_cidr(value) else { return Vec::new() };
    let mut out = Vec::new();
    let network = network_of(ip, bits);
    let width = if ip.is_ipv4() { 32 } else { 128 };
    if network != ip {
        out.push(format!("{field}: CIDR value {} is ambiguous in this context (should be {} or {})", quote(value), quote(format!("{network}/{bits}")), quote(format!("{ip}/{width}"))));
    }
    if ip.to_canonical() != ip {
        out.push(format!("{field}: non-standard CIDR value {} is invalid: use {}", quote(value), quote(format!("{}/{}", network_of(ip.to_canonical(), bits.saturating_sub(96)), bits.saturating_sub(96)))));
    }
    let canonical = format!("{ip}/{bits}");
    if out.is_empty() && ip.is_ipv6() && canonical != value {
        out.push(format!("{field}: IPv6 CIDR value {} should be in RFC 5952 canonical format ({})", quote(value), quote(canonical)));
    }
    out
}

/// The first address of `ip`'s network of `bits` prefix bits.
fn network_of(ip: std::net::IpAddr, bits: u8) -> std::net::IpAddr {
    match ip {
        std::net::IpAddr::V4(v4) => {
            let mask = if bits == 0 { 0 } else { u32::MAX << (32 - u32::from(bits.min(32))) };
            std::net::IpAddr::V4((u32::from(v4) & mask).into())
        }
        std::net::IpAddr::V6(v6) => {
            let mask = if bits == 0 { 0 } else { u128::MAX << (128 - u32::from(bits.min(128))) };
            std::net::IpAddr::V6((u128::from(v6) & mask).into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_that_are_no_dns_label_and_discouraged_ips() {
        assert!(name_warning(&json!({"metadata": {"name": "web.v2"}}), POD_NAMES).unwrap().starts_with("metadata.name: this is used in Pod names and hostnames"));
        assert_eq!(name_warning(&json!({"metadata": {"name": "web"}}), POD_NAMES), None);
        assert_eq!(ip_warnings("x", "2001:DB8::1"), ["x: IPv6 address \"2001:DB8::1\" should be in RFC 5952 canonical format (\"2001:db8::1\")"]);
        assert!(ip_warnings("x", "10.0.0.1").is_empty());
    }

    #[test]
    fn cidrs_with_host_bits_or_not_canonical() {
        assert_eq!(cidr_warnings("x", "10.0.0.1/8"), ["x: CIDR value \"10.0.0.1/8\" is ambiguous in this context (should be \"10.0.0.0/8\" or \"10.0.0.1/32\")"]);
        assert_eq!(cidr_warnings("x", "2001:DB8::/32"), ["x: IPv6 CIDR value \"2001:DB8::/32\" should be in RFC 5952 canonical format (\"2001:db8::/32\")"]);
        assert!(cidr_warnings("x", "10.0.0.0/8").is_empty());
    }
}
