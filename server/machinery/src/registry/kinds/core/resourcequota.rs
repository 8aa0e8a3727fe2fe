//! ResourceQuotas: what they may count and in what units, their scopes (fixed at creation), an
//! empty status until the quota controller fills it, kubectl's columns, and a DELETE answered
//! with the quota.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::resource_names;
use crate::error::Cause;
use crate::expr::quantity::parse;
use crate::registry::kinds::fields::{age, col, invalid, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is created, printed and deleted.
pub const STRATEGY: Strategy = Strategy { validate, update, columns: COLUMNS, cells, returns_deleted: true, initial_status: Some(|| json!({})), ..Strategy::NONE };

pub fn validate(obj: &Value) -> Vec<Cause> {
    let spec = &obj["spec"];
    let mut out = Vec::new();
    let hard = spec["hard"].as_object();
    let mut names: Vec<&String> = hard.into_iter().flat_map(|h| h.keys()).collect();
    names.sort();
    for name in &names {
        let at = format!("spec.hard[{name}]");
        resource_names::quota_resource_name(name, &at, &mut out);
        let value = &spec["hard"][name.as_str()];
        let Some(q) = value.as_str().and_then(|v| parse(v).ok()) else { continue };
        if q.sign() < 0 {
            out.push(invalid(&at, value, "must be greater than or equal to 0"));
        }
        if resource_names::is_integer(name) && !q.is_integer() {
            out.push(invalid(&at, value, "must be an integer"));
        }
    }
    let scopes = &spec["scopes"];
    let list: Vec<&str> = scopes.as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    for scope in &list {
        if !resource_names::SCOPES.contains(scope) {
            out.push(invalid("spec.scopes", scopes, "unsupported scope"));
        }
        for name in &names {
            if resource_names::is_quota_resource(name) && !resource_names::scope_applies(scope, name) {
                out.push(invalid("spec.scopes", scopes, "unsupported scope applied to resource"));
            }
        }
    }
    for (a, b) in [("BestEffort", "NotBestEffort"), ("Terminating", "NotTerminating")] {
        if list.contains(&a) && list.contains(&b) {
            out.push(invalid("spec.scopes", scopes, "conflicting scopes"));
        }
    }
    out
}

/// The scopes are fixed at creation.
pub fn update(old: &Value, new: &mut Value) -> Vec<Cause> {
    let set = |q: &Value| q["spec"]["scopes"].as_array().into_iter().flatten().filter_map(Value::as_str).map(String::from).collect::<BTreeSet<_>>();
    if set(old) != set(new) {
        return vec![invalid("spec.scopes", &new["spec"]["scopes"], "field is immutable")];
    }
    Vec::new()
}

pub const COLUMNS: &[Column] = &[col("Request", "string", 0), col("Limit", "string", 0), AGE];

/// `resource: used/hard` for each resource the status reports, requests and limits apart.
pub fn cells(obj: &Value) -> Vec<Value> {
    let (hard, used) = (&obj["status"]["hard"], &obj["status"]["used"]);
    let (mut requests, mut limits) = (Vec::new(), Vec::new());
    for (resource, quantity) in hard.as_object().into_iter().flatten() {
        let shown = format!("{resource}: {}/{}", used[resource].as_str().unwrap_or("0"), quantity.as_str().unwrap_or_default());
        if resource.starts_with("limits.") {
            limits.push(shown);
        } else {
            requests.push(shown);
        }
    }
    vec![json!(requests.join(", ")), json!(limits.join(", ")), age(obj)]
}
