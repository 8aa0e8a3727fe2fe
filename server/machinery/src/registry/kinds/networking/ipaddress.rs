//! IPAddresses: validation, the parent fixed at creation, and kubectl's columns.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::meta::is_dns_subdomain;
use crate::registry::kinds::fields::{col, unchanged};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    validate,
    update,
    columns: COLUMNS,
    cells,
    ..Strategy::NONE
};

/// IPAddresses: named by an IP in canonical form, held by a parent (a Service).
pub fn validate(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let name = obj["metadata"]["name"].as_str().unwrap_or_default();
    match name.parse::<std::net::IpAddr>() {
        Err(_) => out.push(Cause::invalid("metadata.name", name, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)")),
        Ok(ip) if ip.to_string() != name => out.push(Cause::invalid("metadata.name", name, &format!("must be in canonical form (\"{ip}\")"))),
        Ok(_) => {}
    }
    let parent = &obj["spec"]["parentRef"];
    if !parent.is_object() {
        out.push(Cause::new("FieldValueRequired", "spec.parentRef", "Required value"));
        return out;
    }
    for field in ["resource", "name"] {
        if parent[field].as_str().is_none_or(str::is_empty) {
            out.push(Cause::new("FieldValueRequired", format!("spec.parentRef.{field}"), "Required value"));
        }
    }
    if let Some(group) = parent["group"].as_str().filter(|g| !g.is_empty() && !is_dns_subdomain(g)) {
        out.push(Cause::invalid("spec.parentRef.group", group, "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"));
    }
    out
}

/// IPAddresses keep their parent.
pub fn update(old: &Value, new: &mut Value) -> Vec<Cause> {
    let mut out = Vec::new();
    unchanged(old, new, "/spec/parentRef", &mut out);
    out
}

pub const COLUMNS: &[Column] = &[col("ParentRef", "string", 0)];

/// An IPAddress's row: its parent as `resource[.group]/[namespace/]name`.
pub fn cells(obj: &Value) -> Vec<Value> {
    let parent = &obj["spec"]["parentRef"];
    if !parent.is_object() {
        return vec![json!("<none>")];
    }
    let s = |k: &str| parent[k].as_str().unwrap_or_default();
    let mut shown = if s("group").is_empty() { s("resource").to_lowercase() } else { format!("{}.{}", s("resource"), s("group")).to_lowercase() };
    if !s("namespace").is_empty() {
        shown = format!("{shown}/{}", s("namespace"));
    }
    vec![json!(format!("{shown}/{}", s("name")))]
}
