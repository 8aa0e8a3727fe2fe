//! EndpointSlices: ports are unnamed TCP ports unless given, and every endpoint has conditions;
//! validation of ports and addresses, an address type fixed at creation, and kubectl's columns.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::registry::kinds::core::endpoints::first_three;
use crate::registry::kinds::fields::{age, col, dns_label, dns_subdomain, duplicate, endpoint_ip, ip, items_mut, parse_ip, qualified_name, required, routable_ip, set, strict_ip, unchanged, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy { default: defaults, validate, validate_update: Some(validate_update), update, columns: COLUMNS, cells, warnings: Some(warnings), ..Strategy::NONE };

pub fn defaults(obj: &mut Value) {
    for port in items_mut(obj, "ports") {
        set(port, "name", json!(""));
        set(port, "protocol", json!("TCP"));
    }
    for endpoint in items_mut(obj, "endpoints") {
        set(endpoint, "conditions", json!({}));
    }
}

/// Ports named once each, and endpoints with addresses of the slice's type.
pub fn validate(obj: &Value) -> Vec<Cause> {
    let mut out = ports(obj);
    out.extend(endpoints(obj));
    out
}

/// An update's endpoints are refused only when they changed: older versions may have stored
/// what is refused now.
fn validate_update(old: &Value, new: &Value) -> Vec<Cause> {
    let mut out = ports(new);
    let problems = endpoints(new);
    if !problems.is_empty() && old["endpoints"] != new["endpoints"] {
        out.extend(problems);
    }
    out
}

fn ports(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let mut names = Vec::new();
    for (i, port) in obj["ports"].as_array().into_iter().flatten().enumerate() {
        let name = &port["name"];
        if name != "" {
            dns_label(name, &format!("ports[{i}].name"), &mut out);
        }
        if names.contains(&name) {
            out.push(duplicate(format!("ports[{i}].name"), name));
        } else {
            names.push(name);
        }
        qualified_name(&port["appProtocol"], &format!("ports[{i}].appProtocol"), &mut out);
    }
    out
}

fn endpoints(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let kind = obj["addressType"].as_str().unwrap_or_default();
    for (i, endpoint) in obj["endpoints"].as_array().into_iter().flatten().enumerate() {
        let at = format!("endpoints[{i}]");
        let addresses = endpoint["addresses"].as_array().filter(|a| !a.is_empty());
        if addresses.is_none() {
            out.push(required(format!("{at}.addresses"), "must contain at least 1 address"));
        }
        for (j, address) in addresses.into_iter().flatten().enumerate() {
            address_of(kind, address.as_str().unwrap_or_default(), &format!("{at}.addresses"), j, &mut out);
        }
        dns_subdomain(&endpoint["nodeName"], &format!("{at}.nodeName"), &mut out);
        dns_label(&endpoint["hostname"], &format!("{at}.hostname"), &mut out);
    }
    out
}

/// An address of an `IPv4` or `IPv6` slice: of that family, and one an endpoint may have. (The
/// family's mismatch is reported at the list, other causes at the address.)
fn address_of(kind: &str, address: &str, list: &str, index: usize, out: &mut Vec<Cause>) {
    let field = format!("{list}[{index}]");
    let before = out.len();
    match kind {
        "IPv4" => ip(&json!(address), &field, out),
        "IPv6" => strict_ip(address, &field, out),
        _ => return,
    }
    if out.len() > before {
        return;
    }
    let family_ok = parse_ip(address).is_some_and(|ip| ip.is_ipv4() == (kind == "IPv4"));
    if !family_ok {
        out.push(Cause::invalid(list, address, &format!("must be an {kind} address")));
    }
    if let Some(ip) = endpoint_ip(address, &field, out) {
        routable_ip(ip, address, &field, out);
    }
}

/// A slice keeps its address type.
pub fn update(old: &Value, new: &mut Value) -> Vec<Cause> {
    let mut out = Vec::new();
    unchanged(old, new, "/addressType", &mut out);
    out
}

pub const COLUMNS: &[Column] = &[col("AddressType", "string", 0), col("Ports", "string", 0), col("Endpoints", "string", 0), AGE];

pub fn cells(obj: &Value) -> Vec<Value> {
    let ports: Vec<String> = obj["ports"].as_array().into_iter().flatten().filter_map(|p| p["port"].as_i64()).map(|p| p.to_string()).collect();
    let addresses: Vec<String> =
        obj["endpoints"].as_array().into_iter().flatten().flat_map(|e| e["addresses"].as_array().into_iter().flatten()).filter_map(|a| a.as_str().map(str::to_string)).collect();
    let ports = if ports.is_empty() { "<unset>".to_string() } else { ports.join(",") };
    let endpoints = if addresses.is_empty() { "<unset>".to_string() } else { first_three(&addresses) };
    vec![obj["addressType"].clone(), json!(ports), json!(endpoints), age(obj)]
}

/// Kubernetes' warnings: the deprecated FQDN address type (on create) and addresses in
/// discouraged forms (not for the endpoint controllers' own slices).
fn warnings(obj: &Value, old: Option<&Value>) -> Vec<String> {
    let mut out = Vec::new();
    if old.is_none() && obj["addressType"] == "FQDN" {
        out.push("spec.addressType: FQDN endpoints are deprecated".into());
    }
    let managed = obj["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"].as_str();
    if matches!(managed, Some("endpointslice-controller.k8s.io" | "endpointslicemirroring-controller.k8s.io")) {
        return out;
    }
    for (i, endpoint) in obj["endpoints"].as_array().into_iter().flatten().enumerate() {
        for (j, a) in endpoint["addresses"].as_array().into_iter().flatten().filter_map(Value::as_str).enumerate() {
            out.extend(crate::registry::kinds::warnings::ip_warnings(&format!("endpoints[{i}].addresses[{j}]"), a));
        }
    }
    out
}
