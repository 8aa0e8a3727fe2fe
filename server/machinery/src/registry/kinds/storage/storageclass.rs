//! StorageClasses: defaults, validation, the fields fixed at creation, kubectl's columns, and a
//! DELETE answered with the class. The provisioner and parameters rules are shared with
//! VolumeAttributesClasses.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::registry::kinds::fields::{age, col, duplicate, invalid, items, qualified_name, required, set, unchanged, unique, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated, printed and deleted.
pub const STRATEGY: Strategy = Strategy { default: defaults, validate, update, columns: COLUMNS, cells, returns_deleted: true, warnings: Some(warnings), ..Strategy::NONE };

/// Volumes are deleted with their claims and bound at once, unless said otherwise.
pub fn defaults(obj: &mut Value) {
    set(obj, "reclaimPolicy", json!("Delete"));
    set(obj, "volumeBindingMode", json!("Immediate"));
}

/// A provisioner, parameters that may be empty, and allowed topologies whose expressions each
/// name a key and values.
pub fn validate(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    provisioner(&obj["provisioner"], "provisioner", &mut out);
    parameters(&obj["parameters"], true, &mut out);
    allowed_topologies(&obj["allowedTopologies"], &mut out);
    out
}

/// A CSI driver's name, required, that must be a qualified name once lowercased.
pub(crate) fn provisioner(v: &Value, field: &str, out: &mut Vec<Cause>) {
    match v.as_str().filter(|s| !s.is_empty()) {
        None => out.push(Cause::required(field)),
        Some(s) => qualified_name(&json!(s.to_lowercase()), field, out),
    }
}

/// A driver's parameters: no empty key, and at least one unless `may_be_empty`.
pub(crate) fn parameters(v: &Value, may_be_empty: bool, out: &mut Vec<Cause>) {
    let params = v.as_object();
    if params.is_some_and(|p| p.contains_key("")) {
        out.push(invalid("parameters", &json!(""), "field can not be empty."));
    }
    if !may_be_empty && params.is_none_or(|p| p.is_empty()) {
        out.push(required("parameters", "must contain at least one key/value pair"));
    }
}

/// Each term's expressions: values required and unique, keys qualified names found once.
fn allowed_topologies(terms: &Value, out: &mut Vec<Cause>) {
    for (i, term) in terms.as_array().into_iter().flatten().enumerate() {
        let mut keys = Vec::new();
        for (j, e) in term["matchLabelExpressions"].as_array().into_iter().flatten().enumerate() {
            let at = format!("allowedTopologies[{i}].matchLabelExpressions[{j}]");
            if items(&e["values"]) == 0 {
                out.push(Cause::required(format!("{at}.values")));
            }
            unique(&e["values"], &format!("{at}.values"), |v| v, out);
            qualified_name(&e["key"], &format!("{at}.key"), out);
            if keys.contains(&&e["key"]) {
                out.push(duplicate(format!("{at}.key"), &e["key"]));
            }
            keys.push(&e["key"]);
        }
    }
}

/// A class keeps its provisioner, parameters, reclaim policy and binding mode.
pub fn update(old: &Value, new: &mut Value) -> Vec<Cause> {
    let mut out = Vec::new();
    for pointer in ["/parameters", "/provisioner", "/reclaimPolicy", "/volumeBindingMode"] {
        unchanged(old, new, pointer, &mut out);
    }
    out
}

pub const COLUMNS: &[Column] = &[
    col("Provisioner", "string", 0),
    col("ReclaimPolicy", "string", 0),
    col("VolumeBindingMode", "string", 0),
    col("AllowVolumeExpansion", "string", 0),
    AGE,
];

pub fn cells(obj: &Value) -> Vec<Value> {
    vec![obj["provisioner"].clone(), obj["reclaimPolicy"].clone(), obj["volumeBindingMode"].clone(), json!(obj["allowVolumeExpansion"] == true), age(obj)]
}

/// Kubernetes' warnings: deprecated node labels in the allowed topologies.
fn warnings(obj: &Value, _: Option<&Value>) -> Vec<String> {
    let mut out = Vec::new();
    for (i, topology) in obj["allowedTopologies"].as_array().into_iter().flatten().enumerate() {
        for (j, e) in topology["matchLabelExpressions"].as_array().into_iter().flatten().enumerate() {
            if let Some(m) = crate::registry::kinds::warnings::deprecated_node_label(e["key"].as_str().unwrap_or_default()) {
                out.push(format!("allowedTopologies[{i}].matchLabelExpressions[{j}].key: {m}"));
            }
        }
    }
    out
}
