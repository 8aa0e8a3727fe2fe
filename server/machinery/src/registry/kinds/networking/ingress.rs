//! Ingresses: validation, the status a new one starts with, and kubectl's columns.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::meta::{is_dns_subdomain, DNS1123_SUBDOMAIN};
use crate::registry::kinds::fields::{age, col, dns_label, dns_subdomain, invalid, parse_ip, path_segment, port, port_name, required, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is validated, created and printed.
pub const STRATEGY: Strategy = Strategy { validate, columns: COLUMNS, cells, initial_status: Some(|| json!({"loadBalancer": {}})), warnings: Some(warnings), ..Strategy::NONE };

/// Rules or a default backend; hosts that are DNS names (a wildcard as the first label); paths
/// that are absolute and clean for their type; backends that name one service port or one
/// resource; TLS hosts and secrets; and the class's name.
pub fn validate(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = &obj["spec"];
    let rules = spec["rules"].as_array().filter(|r| !r.is_empty());
    if rules.is_none() && spec["defaultBackend"].is_null() {
        out.push(invalid("spec", &spec["rules"], "either `defaultBackend` or `rules` must be specified"));
    }
    if !spec["defaultBackend"].is_null() {
        backend(&spec["defaultBackend"], "spec.defaultBackend", &mut out);
    }
    for (i, rule) in rules.into_iter().flatten().enumerate() {
        let at = format!("spec.rules[{i}]");
        host(&rule["host"], &format!("{at}.host"), &mut out);
        if rule["http"].is_object() {
            http(&rule["http"], &format!("{at}.http"), &mut out);
        }
    }
    for (i, tls) in spec["tls"].as_array().into_iter().flatten().enumerate() {
        for (j, h) in tls["hosts"].as_array().into_iter().flatten().enumerate() {
            dns_name(h.as_str().unwrap_or_default(), &format!("spec.tls[{i}].hosts[{j}]"), &mut out);
        }
        dns_subdomain(&tls["secretName"], &format!("spec.tls[{i}].secretName"), &mut out);
    }
    dns_subdomain(&spec["ingressClassName"], "spec.ingressClassName", &mut out);
    out
}

/// Kubernetes' words for a host that is not a wildcard DNS name.
const WILDCARD: &str = "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character (e.g. '*.example.com', regex used for validation is '\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

/// A rule's host, when set: a DNS name, not an IP address.
fn host(v: &Value, field: &str, out: &mut Vec<Cause>) {
    let Some(h) = v.as_str().filter(|h| !h.is_empty()) else { return };
    if parse_ip(h).is_some() {
        out.push(Cause::invalid(field, h, "must be a DNS name, not an IP address"));
    }
    dns_name(h, field, out);
}

/// A DNS subdomain, or one under a wildcard (`*.example.com`).
fn dns_name(h: &str, field: &str, out: &mut Vec<Cause>) {
    match h.contains('*') {
        true if !h.strip_prefix("*.").is_some_and(|rest| is_dns_subdomain(rest) && h.len() <= 253) => out.push(Cause::invalid(field, h, WILDCARD)),
        false if !is_dns_subdomain(h) => out.push(Cause::invalid(field, h, DNS1123_SUBDOMAIN)),
        _ => {}
    }
}

/// An HTTP rule: at least one path, each with a type and a backend.
fn http(http: &Value, at: &str, out: &mut Vec<Cause>) {
    let paths = http["paths"].as_array().filter(|p| !p.is_empty());
    if paths.is_none() {
        out.push(Cause::required(format!("{at}.paths")));
    }
    for (i, p) in paths.into_iter().flatten().enumerate() {
        let at = format!("{at}.paths[{i}]");
        let path = p["path"].as_str().unwrap_or_default();
        let field = format!("{at}.path");
        match p["pathType"].as_str() {
            None => {
                out.push(required(format!("{at}.pathType"), "pathType must be specified"));
                continue;
            }
            Some("Exact" | "Prefix") => clean_path(path, &field, out),
            Some("ImplementationSpecific") if !path.is_empty() && !path.starts_with('/') => out.push(Cause::invalid(field, path, "must be an absolute path")),
            // Other types are refused as the kind's enumerations.
            Some(_) => {}
        }
        backend(&p["backend"], &format!("{at}.backend"), out);
    }
}

/// An `Exact` or `Prefix` path: absolute, without `//`, `/./`, `/../` or an encoded slash, and
/// not ending in `/..` or `/.`.
fn clean_path(path: &str, field: &str, out: &mut Vec<Cause>) {
    if !path.starts_with('/') {
        out.push(Cause::invalid(field, path, "must be an absolute path"));
    }
    for sequence in ["//", "/./", "/../", "%2f", "%2F"].into_iter().filter(|s| path.contains(s)) {
        out.push(Cause::invalid(field, path, &format!("must not contain '{sequence}'")));
    }
    for suffix in ["/..", "/."].into_iter().filter(|s| path.ends_with(s)) {
        out.push(Cause::invalid(field, path, &format!("cannot end with '{suffix}'")));
    }
}

/// A backend: a service (named as a DNS label, with a port's name or number) or a resource.
fn backend(b: &Value, at: &str, out: &mut Vec<Cause>) {
    let (service, resource) = (&b["service"], &b["resource"]);
    match (service.is_null(), resource.is_null()) {
        (false, false) => out.push(invalid(at, &json!(""), "cannot set both resource and service backends")),
        (true, true) => out.push(invalid(at, &json!(""), "resource or service backend is required")),
        (true, false) => {
            dns_subdomain(&resource["apiGroup"], &format!("{at}.resource.apiGroup"), out);
            for key in ["kind", "name"] {
                match resource[key].as_str().filter(|s| !s.is_empty()) {
                    None => out.push(Cause::required(format!("{at}.resource.{key}"))),
                    Some(s) => path_segment(&json!(s), &format!("{at}.resource.{key}"), out),
                }
            }
        }
        (false, true) => {
            let name = &service["name"];
            match name.as_str().filter(|n| !n.is_empty()) {
                None => out.push(Cause::required(format!("{at}.service.name"))),
                Some(_) => dns_label(name, &format!("{at}.service.name"), out),
            }
            let (by_name, number) = (&service["port"]["name"], &service["port"]["number"]);
            let named = by_name.as_str().is_some_and(|n| !n.is_empty());
            let numbered = number.as_i64().is_some_and(|n| n != 0);
            match (named, numbered) {
                (true, true) => out.push(invalid(at, &json!(""), "cannot set both port name & port number")),
                (true, false) => port_name(by_name, &format!("{at}.service.port.name"), out),
                (false, true) => port(number, &format!("{at}.service.port.number"), out),
                (false, false) => out.push(required(at, "port name or number is required")),
            }
        }
    }
}

pub const COLUMNS: &[Column] = &[col("Class", "string", 0), col("Hosts", "string", 0), col("Address", "string", 0), col("Ports", "string", 0), AGE];

/// Hosts of the rules (`*` when none names one), the load balancer's addresses, and the ports
/// served: 80, and 443 when there is TLS.
pub fn cells(obj: &Value) -> Vec<Value> {
    let spec = &obj["spec"];
    let hosts: Vec<&str> = spec["rules"].as_array().into_iter().flatten().filter_map(|r| r["host"].as_str()).collect();
    let addresses: Vec<&str> = obj["status"]["loadBalancer"]["ingress"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["ip"].as_str().or(i["hostname"].as_str()))
        .collect();
    let ports = if spec["tls"].as_array().is_some_and(|t| !t.is_empty()) { "80, 443" } else { "80" };
    vec![
        json!(spec["ingressClassName"].as_str().unwrap_or("<none>")),
        json!(if hosts.is_empty() { "*".to_string() } else { hosts.join(",") }),
        json!(addresses.join(",")),
        json!(ports),
        age(obj),
    ]
}

/// The class annotation on a new Ingress without `spec.ingressClassName`, deprecated.
fn warnings(obj: &Value, old: Option<&Value>) -> Vec<String> {
    let annotated = obj["metadata"]["annotations"].get("kubernetes.io/ingress.class").is_some();
    match old.is_none() && annotated && obj["spec"]["ingressClassName"].is_null() {
        true => vec!["annotation \"kubernetes.io/ingress.class\" is deprecated, please use 'spec.ingressClassName' instead".into()],
        false => Vec::new(),
    }
}
