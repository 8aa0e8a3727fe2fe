//! ResourceClaims: the device requests defaulted (an exact count of one) and checked, the spec
//! fixed at creation, an empty status until allocated, kubectl's columns, and a DELETE
//! answered with the claim. Templates share the spec's rules.

use serde_json::{json, Value};

use super::deviceclass;
use crate::error::Cause;
use crate::registry::kinds::fields::{age, col, dns_label, dns_subdomain, duplicate, invalid, required, set, unchanged_struct, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated, created, printed and deleted.
pub const STRATEGY: Strategy = Strategy {
    default: |c| defaults(&mut c["spec"]),
    validate: |c| validate_spec(&c["spec"], "spec"),
    update: fixed_spec,
    columns: COLUMNS,
    cells,
    returns_deleted: true,
    initial_status: Some(|| json!({})),
    ..Strategy::NONE
};

/// Each exact request (and each alternative of a first-available one) asks for an exact count,
/// of one device unless it says otherwise.
pub(super) fn defaults(spec: &mut Value) {
    let Some(requests) = spec.pointer_mut("/devices/requests").and_then(Value::as_array_mut) else { return };
    for r in requests {
        if let Some(exactly) = r.get_mut("exactly").filter(|e| e.is_object()) {
            exact_count(exactly);
        }
        for sub in r.get_mut("firstAvailable").and_then(Value::as_array_mut).into_iter().flatten() {
            exact_count(sub);
        }
    }
}

fn exact_count(request: &mut Value) {
    set(request, "allocationMode", json!("ExactCount"));
    if request["allocationMode"] == "ExactCount" {
        set(request, "count", json!(1));
    }
}

/// Requests named uniquely with DNS labels, each exactly one of `exactly` or `firstAvailable`;
/// configurations as a class's.
pub(super) fn validate_spec(spec: &Value, at: &str) -> Vec<Cause> {
    let devices = &spec["devices"];
    let mut out = Vec::new();
    let requests = devices["requests"].as_array().map_or(&[][..], Vec::as_slice);
    for (i, r) in requests.iter().enumerate() {
        let at = format!("{at}.devices.requests[{i}]");
        dns_label(&r["name"], &format!("{at}.name"), &mut out);
        let exactly = r["exactly"].is_object();
        let first = r["firstAvailable"].as_array().is_some_and(|l| !l.is_empty());
        match (exactly, first) {
            (false, false) => out.push(required(&at, "exactly one of `exactly` or `firstAvailable` is required")),
            (true, true) => out.push(invalid(&at, &Value::Null, "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set")),
            (true, false) => request(&r["exactly"], &format!("{at}.exactly"), &mut out),
            (false, true) => {
                for (j, sub) in r["firstAvailable"].as_array().into_iter().flatten().enumerate() {
                    let at = format!("{at}.firstAvailable[{j}]");
                    dns_label(&sub["name"], &format!("{at}.name"), &mut out);
                    request(sub, &at, &mut out);
                }
            }
        }
        if requests[..i].iter().any(|o| o["name"] == r["name"]) {
            out.push(duplicate(at, &r["name"]));
        }
    }
    deviceclass::configs(&devices["config"], &format!("{at}.devices.config"), &mut out);
    out
}

/// One request: a device class, selectors that compile, a count that fits the mode.
fn request(r: &Value, at: &str, out: &mut Vec<Cause>) {
    if r["deviceClassName"].as_str().is_none_or(str::is_empty) {
        out.push(Cause::required(format!("{at}.deviceClassName")));
    } else {
        dns_subdomain(&r["deviceClassName"], &format!("{at}.deviceClassName"), out);
    }
    deviceclass::selectors(&r["selectors"], &format!("{at}.selectors"), out);
    let count = &r["count"];
    match r["allocationMode"].as_str() {
        Some("All") if count.as_i64().is_some_and(|c| c != 0) => out.push(invalid(format!("{at}.count"), count, "must not be specified when allocationMode is 'All'")),
        Some("ExactCount") if count.as_i64().unwrap_or(0) <= 0 => out.push(invalid(format!("{at}.count"), count, "must be greater than zero")),
        _ => {}
    }
}

/// The spec is fixed at creation.
fn fixed_spec(old: &Value, new: &mut Value) -> Vec<Cause> {
    let mut out = Vec::new();
    unchanged_struct(old, new, "/spec", "resource.ResourceClaimSpec", &mut out);
    out
}

pub const COLUMNS: &[Column] = &[col("State", "string", 0), AGE];

/// The claim's state: deleted, pending until allocated, then allocated (and reserved once a
/// pod uses it).
pub fn cells(obj: &Value) -> Vec<Value> {
    let deleted = !obj["metadata"]["deletionTimestamp"].is_null();
    let status = &obj["status"];
    let mut states = Vec::new();
    if deleted {
        states.push("deleted");
    }
    if status["allocation"].is_null() {
        if !deleted {
            states.push("pending");
        }
    } else {
        states.push("allocated");
        if status["reservedFor"].as_array().is_some_and(|r| !r.is_empty()) {
            states.push("reserved");
        }
    }
    vec![json!(states.join(",")), age(obj)]
}
