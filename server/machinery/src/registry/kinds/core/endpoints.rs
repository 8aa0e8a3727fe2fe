//! Endpoints: deprecated since Kubernetes 1.33 in favour of EndpointSlices, which every answer
//! says; ports are TCP unless given; validation of addresses and ports, and kubectl's columns.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::registry::kinds::fields::{age, col, dns_label, dns_subdomain, endpoint_ip, ip, items_mut, port, qualified_name, required, set, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated and served.
pub const STRATEGY: Strategy = Strategy {
    default: defaults,
    validate,
    deprecation: Some("v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"),
    columns: COLUMNS,
    cells,
    warnings: Some(warnings),
    ..Strategy::NONE
};

pub fn defaults(obj: &mut Value) {
    for subset in items_mut(obj, "subsets") {
        for p in items_mut(subset, "ports") {
            set(p, "protocol", json!("TCP"));
        }
    }
}

/// Each subset: some addresses, each an IP an endpoint may have, and ports (named when more
/// than one).
pub fn validate(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    for (i, subset) in obj["subsets"].as_array().into_iter().flatten().enumerate() {
        let at = format!("subsets[{i}]");
        let (ready, not_ready) = (&subset["addresses"], &subset["notReadyAddresses"]);
        if ready.as_array().is_none_or(Vec::is_empty) && not_ready.as_array().is_none_or(Vec::is_empty) {
            out.push(required(at.as_str(), "must specify `addresses` or `notReadyAddresses`"));
        }
        for (list, key) in [(ready, "addresses"), (not_ready, "notReadyAddresses")] {
            for (j, a) in list.as_array().into_iter().flatten().enumerate() {
                address(a, &format!("{at}.{key}[{j}]"), &mut out);
            }
        }
        let ports = subset["ports"].as_array().map_or(&[][..], Vec::as_slice);
        for (j, p) in ports.iter().enumerate() {
            let at = format!("{at}.ports[{j}]");
            match p["name"].as_str().filter(|n| !n.is_empty()) {
                None if ports.len() > 1 => out.push(Cause::required(format!("{at}.name"))),
                None => {}
                Some(_) => dns_label(&p["name"], &format!("{at}.name"), &mut out),
            }
            port(&json!(p["port"].as_i64().unwrap_or(0)), &format!("{at}.port"), &mut out);
            qualified_name(&p["appProtocol"], &format!("{at}.appProtocol"), &mut out);
        }
    }
    out
}

/// An endpoint's address: an IP (checked as one, then as an endpoint's), a hostname and the
/// node's name. Unlike Kubernetes, loopback and link-local addresses are taken: this server's
/// own address, where the `kubernetes` Service and aggregated API servers it runs beside are
/// reached, is one.
fn address(a: &Value, at: &str, out: &mut Vec<Cause>) {
    let field = format!("{at}.ip");
    ip(&json!(a["ip"].as_str().unwrap_or_default()), &field, out);
    if a["hostname"] != "" {
        dns_label(&a["hostname"], &format!("{at}.hostname"), out);
    }
    dns_subdomain(&a["nodeName"], &format!("{at}.nodeName"), out);
    endpoint_ip(a["ip"].as_str().unwrap_or_default(), &field, out);
}

pub const COLUMNS: &[Column] = &[col("Endpoints", "string", 0), AGE];

/// Up to three `ip:port` pairs, then how many more; `<none>` without any.
pub fn cells(obj: &Value) -> Vec<Value> {
    let mut all = Vec::new();
    for subset in obj["subsets"].as_array().into_iter().flatten() {
        let ports: Vec<i64> = subset["ports"].as_array().into_iter().flatten().filter_map(|p| p["port"].as_i64()).collect();
        for address in subset["addresses"].as_array().into_iter().flatten() {
            let ip = address["ip"].as_str().unwrap_or_default();
            if ports.is_empty() {
                all.push(ip.to_string());
            }
            all.extend(ports.iter().map(|p| format!("{ip}:{p}")));
        }
    }
    vec![json!(first_three(&all)), age(obj)]
}

/// A list as kubectl shortens it: the first three, then `+ N more...`.
pub(crate) fn first_three(all: &[String]) -> String {
    match all.len() {
        0 => "<none>".into(),
        n if n > 3 => format!("{} + {} more...", all[..3].join(","), n - 3),
        _ => all.join(","),
    }
}

/// Kubernetes' warnings: addresses in discouraged forms (not for the endpoints controller's own).
fn warnings(obj: &Value, _: Option<&Value>) -> Vec<String> {
    if obj["metadata"]["labels"]["endpoints.kubernetes.io/managed-by"] == "endpoint-controller" {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (i, subset) in obj["subsets"].as_array().into_iter().flatten().enumerate() {
        for list in ["addresses", "notReadyAddresses"] {
            for (j, a) in subset[list].as_array().into_iter().flatten().enumerate() {
                out.extend(crate::registry::kinds::warnings::ip_warnings(&format!("subsets[{i}].{list}[{j}].ip"), a["ip"].as_str().unwrap_or_default()));
            }
        }
    }
    out
}
