//! CSINodes: the drivers registered on a node, each fixed once registered, kubectl's columns,
//! and a DELETE answered with the node.

use serde_json::{json, Value};

use super::csidriver::driver_name;
use crate::error::Cause;
use crate::registry::kinds::fields::{age, at_least, col, duplicate, invalid_shown, items, items_mut, qualified_name, AGE, IMMUTABLE};
use crate::registry::kinds::{go_json, Strategy};
use crate::registry::Column;

/// How the kind is defaulted, validated, updated, printed and deleted.
pub const STRATEGY: Strategy = Strategy { default: defaults, validate, update, columns: COLUMNS, cells, returns_deleted: true, ..Strategy::NONE };

/// A driver's topology keys are listed even when it has none (as `null`).
pub fn defaults(obj: &mut Value) {
    for driver in obj.get_mut("spec").into_iter().flat_map(|spec| items_mut(spec, "drivers")) {
        if let Some(d) = driver.as_object_mut() {
            d.entry("topologyKeys").or_insert(Value::Null);
        }
    }
}

/// Each driver: a name found once, a node ID, a count not below zero, and topology keys that
/// are unique qualified names.
pub fn validate(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let mut names = Vec::new();
    for (i, driver) in obj["spec"]["drivers"].as_array().into_iter().flatten().enumerate() {
        let at = format!("spec.drivers[{i}]");
        driver_name(&driver["name"], &format!("{at}.name"), &mut out);
        node_id(&driver["nodeID"], &format!("{at}.nodeID"), &mut out);
        at_least(&driver["allocatable"]["count"], &format!("{at}.allocatable.count"), 0, &mut out);
        if names.contains(&&driver["name"]) {
            out.push(duplicate(format!("{at}.name"), &driver["name"]));
        }
        names.push(&driver["name"]);
        topology_keys(&driver["topologyKeys"], &at, &mut out);
    }
    out
}

fn node_id(v: &Value, field: &str, out: &mut Vec<Cause>) {
    let id = v.as_str().unwrap_or_default();
    if id.is_empty() {
        out.push(Cause::required(field));
    }
    if id.len() > 256 {
        out.push(Cause::invalid(field, id, "must be 256 characters or less"));
    }
}

/// Topology keys, each cause reported at the driver.
fn topology_keys(keys: &Value, at: &str, out: &mut Vec<Cause>) {
    let mut seen = Vec::new();
    for key in keys.as_array().into_iter().flatten() {
        if key.as_str().is_none_or(str::is_empty) {
            out.push(Cause::required(at));
        }
        if seen.contains(&key) {
            out.push(duplicate(at, key));
        }
        seen.push(key);
        qualified_name(key, at, out);
    }
}

/// A registered driver keeps its node ID and topology keys; its allocatable count may change.
pub fn update(old: &Value, new: &mut Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let without_count = |d: &Value| {
        let mut d = d.clone();
        d.as_object_mut().map(|o| o.remove("allocatable"));
        d
    };
    for was in old["spec"]["drivers"].as_array().into_iter().flatten() {
        for now in new["spec"]["drivers"].as_array().into_iter().flatten().filter(|d| d["name"] == was["name"]) {
            let now = without_count(now);
            if now != without_count(was) {
                out.push(invalid_shown("spec.drivers", &go_json::compact(&now, "storage.CSINodeDriver"), IMMUTABLE));
            }
        }
    }
    out
}

pub const COLUMNS: &[Column] = &[col("Drivers", "integer", 0), AGE];

pub fn cells(obj: &Value) -> Vec<Value> {
    vec![json!(items(&obj["spec"]["drivers"])), age(obj)]
}
