//! Admission policy bindings (validating and mutating): defaults, the policy, parameters and
//! actions checked, and kubectl's columns.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::registry::kinds::fields::{age, col, dns_subdomain, duplicate, forbidden, invalid, label_selector, one_of, path_segment, required, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    columns: COLUMNS,
    cells,
    default: defaults,
    validate,
    warnings: Some(crate::registry::kinds::warnings::static_suffix),
    ..Strategy::NONE
};

pub const COLUMNS: &[Column] = &[col("PolicyName", "string", 0), col("ParamRef", "string", 0), AGE];

pub fn cells(obj: &Value) -> Vec<Value> {
    let reference = &obj["spec"]["paramRef"];
    let param = match reference["name"].as_str() {
        Some(n) => match reference["namespace"].as_str() {
            Some(ns) => format!("{ns}/{n}"),
            None => format!("*/{n}"),
        },
        None => "<unset>".into(),
    };
    vec![json!(obj["spec"]["policyName"].as_str().unwrap_or_default()), json!(param), age(obj)]
}

/// A binding's `matchResources`, when given, defaults as a policy's constraints do.
pub fn defaults(obj: &mut Value) {
    if obj["spec"]["matchResources"].is_object() {
        super::validating_policy::match_resources(&mut obj["spec"]["matchResources"]);
    }
}

/// A binding names its policy, how parameters are found (by name or selector) and what to do
/// when there are none, and its validation actions (each once, never both Deny and Warn). A
/// mutating binding has no actions.
pub fn validate(obj: &Value) -> Vec<Cause> {
    let spec = &obj["spec"];
    let mut out = Vec::new();
    if spec["policyName"].as_str().is_none_or(str::is_empty) {
        out.push(Cause::required("spec.policyName"));
    } else {
        dns_subdomain(&spec["policyName"], "spec.policyName", &mut out);
    }
    let params = &spec["paramRef"];
    if params.is_object() {
        param_ref(params, &mut out);
    }
    if obj["kind"] == "ValidatingAdmissionPolicyBinding" {
        actions(&spec["validationActions"], &mut out);
    }
    out
}

fn param_ref(params: &Value, out: &mut Vec<Cause>) {
    let named = params["name"].as_str().is_some_and(|n| !n.is_empty());
    let selected = params["selector"].is_object();
    if named {
        path_segment(&params["name"], "spec.paramRef.name", out);
        if selected {
            out.push(forbidden("spec.paramRef.name", "name and selector are mutually exclusive"));
        }
    }
    if selected {
        label_selector(&params["selector"], "spec.paramRef.selector", out);
        if named {
            out.push(forbidden("spec.paramRef.selector", "name and selector are mutually exclusive"));
        }
    }
    if !named && !selected {
        out.push(required("spec.paramRef", "one of name or selector must be specified"));
    }
    let action = &params["parameterNotFoundAction"];
    if action.as_str().is_none_or(str::is_empty) {
        out.push(Cause::required("spec.paramRef.parameterNotFoundAction"));
    } else {
        one_of(action, "spec.paramRef.parameterNotFoundAction", &["Deny", "Allow"], out);
    }
}

fn actions(list: &Value, out: &mut Vec<Cause>) {
    let actions = list.as_array().map_or(&[][..], Vec::as_slice);
    for (i, a) in actions.iter().enumerate() {
        if actions[..i].contains(a) {
            out.push(duplicate(format!("spec.validationActions[{i}]"), a));
        }
    }
    let has = |a: &str| actions.iter().any(|v| v == a);
    if has("Deny") && has("Warn") {
        out.push(invalid("spec.validationActions", list, "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"));
    }
    if actions.is_empty() {
        out.push(required("spec.validationActions", "at least one validation action is required"));
    }
}
