//! IngressClasses: parameters are cluster-scoped unless said otherwise; validation, a
//! controller fixed at creation, and kubectl's columns.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::meta::{is_dns_subdomain, DNS1123_SUBDOMAIN};
use crate::registry::kinds::fields::{age, col, dns_label, dns_subdomain, forbidden, path_segment, required, set, unchanged, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy { default: defaults, validate, update, columns: COLUMNS, cells, ..Strategy::NONE };

pub fn defaults(obj: &mut Value) {
    if let Some(parameters) = obj.pointer_mut("/spec/parameters").filter(|p| p.is_object()) {
        set(parameters, "scope", json!("Cluster"));
    }
}

/// A controller named by a domain-prefixed path, and parameters naming a resource in the
/// scope they say.
pub fn validate(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = &obj["spec"];
    let controller = spec["controller"].as_str().unwrap_or_default();
    if controller.len() > 250 {
        out.push(Cause::new("FieldValueTooLong", "spec.controller", "Too long: may not be more than 250 bytes"));
    }
    domain_prefixed_path(controller, "spec.controller", &mut out);
    if spec["parameters"].is_object() {
        parameters(&spec["parameters"], &mut out);
    }
    out
}

/// Kubernetes' words for a path with characters a URL's path may not hold.
const INVALID_PATH: &str = "Invalid path (regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')";

/// `domain/path`: a DNS subdomain, then a path of URL characters.
fn domain_prefixed_path(s: &str, field: &str, out: &mut Vec<Cause>) {
    if s.is_empty() {
        out.push(Cause::required(field));
        return;
    }
    let Some((host, path)) = s.split_once('/').filter(|(h, p)| !h.is_empty() && !p.is_empty()) else {
        out.push(Cause::invalid(field, s, "must be a domain-prefixed path (such as \"acme.io/foo\")"));
        return;
    };
    if !is_dns_subdomain(host) {
        out.push(Cause::invalid(field, host, DNS1123_SUBDOMAIN));
    }
    if !path.bytes().all(|c| c.is_ascii_alphanumeric() || b"/-._~%!$&'()*+,;=:".contains(&c)) {
        out.push(Cause::invalid(field, path, INVALID_PATH));
    }
}

/// The parameters' group, kind and name, and a namespace exactly when namespace-scoped.
fn parameters(p: &Value, out: &mut Vec<Cause>) {
    dns_subdomain(&p["apiGroup"], "spec.parameters.apiGroup", out);
    for key in ["kind", "name"] {
        match p[key].as_str().filter(|s| !s.is_empty()) {
            None => out.push(Cause::required(format!("spec.parameters.{key}"))),
            Some(s) => path_segment(&json!(s), &format!("spec.parameters.{key}"), out),
        }
    }
    match (p["scope"].as_str(), p["namespace"].is_null()) {
        (Some("Namespace"), true) => out.push(required("spec.parameters.namespace", "`parameters.scope` is set to 'Namespace'")),
        (Some("Namespace"), false) => dns_label(&p["namespace"], "spec.parameters.namespace", out),
        (Some("Cluster"), false) => out.push(forbidden("spec.parameters.namespace", "`parameters.scope` is set to 'Cluster'")),
        _ => {}
    }
}

/// A class keeps its controller.
pub fn update(old: &Value, new: &mut Value) -> Vec<Cause> {
    let mut out = Vec::new();
    unchanged(old, new, "/spec/controller", &mut out);
    out
}

pub const COLUMNS: &[Column] = &[col("Controller", "string", 0), col("Parameters", "string", 0), AGE];

/// Parameters as `Kind.group/name`, `<none>` without any.
pub fn cells(obj: &Value) -> Vec<Value> {
    let p = &obj["spec"]["parameters"];
    let parameters = match p["name"].as_str() {
        Some(name) => {
            let kind = p["kind"].as_str().unwrap_or_default();
            match p["apiGroup"].as_str().filter(|g| !g.is_empty()) {
                Some(group) => format!("{kind}.{group}/{name}"),
                None => format!("{kind}/{name}"),
            }
        }
        None => "<none>".into(),
    };
    vec![obj["spec"]["controller"].clone(), json!(parameters), age(obj)]
}
