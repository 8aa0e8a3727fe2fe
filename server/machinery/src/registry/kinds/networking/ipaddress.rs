//! IPAddresses: validation, the parent fixed at creation, and kubectl's columns.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::registry::kinds::fields::{col, dns_subdomain, path_segment, strict_ip, unchanged_struct};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is validated, updated and printed.
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
    strict_ip(name, "metadata.name", &mut out);
    // A parent without any field set is no parent: the typed decoding makes an absent one empty.
    let parent = &obj["spec"]["parentRef"];
    if parent.as_object().is_none_or(|p| p.values().all(|v| v.is_null() || v == "")) {
        out.push(Cause::required("spec.parentRef"));
        return out;
    }
    if parent["group"] != "" {
        dns_subdomain(&parent["group"], "spec.parentRef.group", &mut out);
    }
    for field in ["resource", "name"] {
        match parent[field].as_str().filter(|s| !s.is_empty()) {
            None => out.push(Cause::required(format!("spec.parentRef.{field}"))),
            Some(s) => path_segment(&json!(s), &format!("spec.parentRef.{field}"), &mut out),
        }
    }
    if let Some(namespace) = parent["namespace"].as_str().filter(|s| !s.is_empty()) {
        path_segment(&json!(namespace), "spec.parentRef.namespace", &mut out);
    }
    out
}

/// IPAddresses keep their parent.
pub fn update(old: &Value, new: &mut Value) -> Vec<Cause> {
    let mut out = Vec::new();
    unchanged_struct(old, new, "/spec/parentRef", "networking.ParentReference", &mut out);
    out
}

pub const COLUMNS: &[Column] = &[col("ParentRef", "string", 0)];

/// An IPAddress's row: its parent as `resource[.group]/[namespace/]name`.
pub fn cells(obj: &Value) -> Vec<Value> {
    // A parent without any field set is no parent: the typed decoding makes an absent one empty.
    let parent = &obj["spec"]["parentRef"];
    if parent.as_object().is_none_or(|p| p.values().all(|v| v.is_null() || v == "")) {
        return vec![json!("<none>")];
    }
    let s = |k: &str| parent[k].as_str().unwrap_or_default();
    let mut shown = if s("group").is_empty() { s("resource").to_lowercase() } else { format!("{}.{}", s("resource"), s("group")).to_lowercase() };
    if !s("namespace").is_empty() {
        shown = format!("{shown}/{}", s("namespace"));
    }
    vec![json!(format!("{shown}/{}", s("name")))]
}
