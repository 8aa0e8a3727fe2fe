//! ValidatingAdmissionPolicies: defaults, the checks of the spec (constraints, something to
//! check, expressions that parse and give a bool), and kubectl's columns.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::expr::admission::{declarations, definitions};
use crate::expr::result_type::result_type;
use crate::expr::types::Ty;
use crate::registry::kinds::fields::{age, cel, col, invalid, items, required, set, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    columns: COLUMNS,
    cells,
    default: defaults,
    validate,
    initial_status: Some(|| json!({})),
    warnings: Some(crate::registry::kinds::warnings::static_suffix),
    ..Strategy::NONE
};

pub const COLUMNS: &[Column] = &[col("Validations", "integer", 0), col("ParamKind", "string", 0), AGE];

pub fn cells(obj: &Value) -> Vec<Value> {
    let kind = &obj["spec"]["paramKind"];
    let param = match kind["kind"].as_str() {
        Some(k) => format!("{}/{k}", kind["apiVersion"].as_str().unwrap_or_default()),
        None => "<unset>".into(),
    };
    vec![json!(items(&obj["spec"]["validations"])), json!(param), age(obj)]
}

/// A policy fails closed, and matches as Kubernetes' defaults say.
pub fn defaults(obj: &mut Value) {
    let spec = &mut obj["spec"];
    if !spec.is_object() {
        return;
    }
    set(spec, "failurePolicy", json!("Fail"));
    if spec["matchConstraints"].is_object() {
        match_resources(&mut spec["matchConstraints"]);
    }
}

/// The defaults of a `matchConstraints` or `matchResources`: equivalent versions match, empty
/// selectors, rules for any scope.
pub(super) fn match_resources(m: &mut Value) {
    set(m, "matchPolicy", json!("Equivalent"));
    set(m, "namespaceSelector", json!({}));
    set(m, "objectSelector", json!({}));
    for rule in m.get_mut("resourceRules").and_then(Value::as_array_mut).into_iter().flatten() {
        set(rule, "scope", json!("*"));
    }
}

pub fn validate(obj: &Value) -> Vec<Cause> {
    let spec = &obj["spec"];
    let mut out = Vec::new();
    let constraints = &spec["matchConstraints"];
    if !constraints.is_object() {
        out.push(Cause::required("spec.matchConstraints"));
    } else if items(&constraints["resourceRules"]) == 0 {
        out.push(Cause::required("spec.matchConstraints.resourceRules"));
    }
    // What a policy may name: `object`, `oldObject` and `params` are `dyn` until it is bound.
    let vars = declarations(spec, &Ty::Dyn, Ty::Dyn, &definitions());
    expressions(&spec["matchConditions"], "spec.matchConditions", &vars, &mut out);
    if items(&spec["validations"]) == 0 && items(&spec["auditAnnotations"]) == 0 {
        for field in ["spec.validations", "spec.auditAnnotations"] {
            out.push(required(field, "validations or auditAnnotations must contain at least one item"));
        }
    }
    expressions(&spec["validations"], "spec.validations", &vars, &mut out);
    out
}

/// Each item's `expression` parses and, where the type of its result with `vars` declared is
/// known before it is evaluated, gives a bool (what else it may name is not checked here).
pub(super) fn expressions(list: &Value, at: &str, vars: &[(&str, Ty)], out: &mut Vec<Cause>) {
    for (i, item) in list.as_array().into_iter().flatten().enumerate() {
        let (field, expression) = (format!("{at}[{i}].expression"), &item["expression"]);
        let before = out.len();
        cel(expression, &field, out);
        let Some(ty) = expression.as_str().filter(|_| out.len() == before).and_then(|s| result_type(s, vars)) else { continue };
        if ty != Ty::Bool {
            out.push(invalid(field, expression, &format!("must evaluate to bool but got {ty}")));
        }
    }
}
