//! ResourceSlices: one way of naming the nodes, the pool counted and generated, devices named
//! uniquely with one value per attribute, the driver, pool and node fixed at creation,
//! kubectl's columns, and a DELETE answered with the slice.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::registry::kinds::fields::{age, col, dns_label, dns_subdomain, duplicate, go_struct, invalid, required, unchanged, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is validated, updated, printed and deleted.
pub const STRATEGY: Strategy = Strategy { validate, update, columns: COLUMNS, cells, returns_deleted: true, ..Strategy::NONE };

/// The ways a slice says which nodes have its devices.
const NODE_SELECTIONS: &[&str] = &["nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection"];

pub fn validate(obj: &Value) -> Vec<Cause> {
    let spec = &obj["spec"];
    let mut out = Vec::new();
    if spec["driver"].as_str().is_none_or(str::is_empty) {
        out.push(Cause::required("spec.driver"));
    } else {
        dns_subdomain(&spec["driver"], "spec.driver", &mut out);
    }
    pool(&spec["pool"], &mut out);
    let set: Vec<String> = NODE_SELECTIONS
        .iter()
        .filter(|f| match &spec[**f] {
            Value::String(s) => !s.is_empty(),
            Value::Bool(b) => *b,
            other => other.is_object(),
        })
        .map(|f| format!("`{f}`"))
        .collect();
    match set.len() {
        0 => out.push(required("spec", "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required")),
        1 => {}
        _ => out.push(invalid(
            "spec",
            &json!(format!("{{{}}}", set.join(", "))),
            "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set",
        )),
    }
    let devices = spec["devices"].as_array().map_or(&[][..], Vec::as_slice);
    for (i, d) in devices.iter().enumerate() {
        let at = format!("spec.devices[{i}]");
        dns_label(&d["name"], &format!("{at}.name"), &mut out);
        if devices[..i].iter().any(|o| o["name"] == d["name"]) {
            out.push(duplicate(&at, &d["name"]));
        }
        for (name, attribute) in d["attributes"].as_object().into_iter().flatten() {
            attribute_value(attribute, &format!("{at}.attributes[{name}]"), &mut out);
        }
    }
    out
}

fn pool(pool: &Value, out: &mut Vec<Cause>) {
    if pool["name"].as_str().is_none_or(str::is_empty) {
        out.push(Cause::required("spec.pool.name"));
    }
    let count = &pool["resourceSliceCount"];
    if count.as_i64().unwrap_or(0) <= 0 {
        out.push(invalid("spec.pool.resourceSliceCount", count, "must be greater than zero"));
    }
    let generation = &pool["generation"];
    if generation.as_i64().is_some_and(|g| g < 0) {
        out.push(invalid("spec.pool.generation", generation, "must be greater than or equal to zero"));
    }
}

/// An attribute holds exactly one value (shown, when not, as Kubernetes' structure shows it).
fn attribute_value(a: &Value, at: &str, out: &mut Vec<Cause>) {
    const VALUES: &[(&str, &str)] = &[
        ("int", "IntValue"),
        ("bool", "BoolValue"),
        ("string", "StringValue"),
        ("version", "VersionValue"),
        ("ints", "IntValues"),
        ("bools", "BoolValues"),
        ("strings", "StringValues"),
        ("versions", "VersionValues"),
    ];
    if VALUES.iter().filter(|(field, _)| !a[*field].is_null()).count() != 1 {
        let fields: Vec<(&str, String)> = VALUES.iter().map(|(field, go)| (*go, a[*field].to_string())).collect();
        out.push(Cause::new("FieldValueInvalid", at, format!("Invalid value: {}: exactly one value must be specified", go_struct(&fields))));
    }
}

/// The pool's name, the driver and the node are fixed at creation.
pub fn update(old: &Value, new: &mut Value) -> Vec<Cause> {
    let mut out = Vec::new();
    for pointer in ["/spec/pool/name", "/spec/driver", "/spec/nodeName"] {
        unchanged(old, new, pointer, &mut out);
    }
    out
}

pub const COLUMNS: &[Column] = &[col("Node", "string", 0), col("Driver", "string", 0), col("Pool", "string", 0), AGE];

pub fn cells(obj: &Value) -> Vec<Value> {
    let spec = &obj["spec"];
    vec![json!(spec["nodeName"].as_str().unwrap_or_default()), spec["driver"].clone(), spec["pool"]["name"].clone(), age(obj)]
}
