//! What the expressions of admission policies and webhook match conditions may name, typed for
//! the static check ([`super::check`]): `object` and `oldObject`, `request` and
//! `namespaceObject` with the fields Kubernetes declares, `authorizer`, `params` when the policy
//! has a `paramKind`, and `variables`, each of the type its expression has.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Value};

use super::check::check;
use super::types::{of_schema, Definitions, Obj, Ty};

/// The definitions of Kubernetes' published schema.
pub fn definitions() -> Definitions {
    Arc::new(|name: &str| crate::openapi::facts::schemas().definition(name).cloned())
}

/// The fields of `request` that Kubernetes declares for admission expressions.
fn request_schema() -> Value {
    let s = json!({"type": "string"});
    let gvk = json!({"type": "object", "properties": {"group": s, "version": s, "kind": s}});
    let gvr = json!({"type": "object", "properties": {"group": s, "version": s, "resource": s}});
    json!({"type": "object", "properties": {
        "kind": gvk, "resource": gvr, "subResource": s,
        "requestKind": gvk, "requestResource": gvr, "requestSubResource": s,
        "name": s, "namespace": s, "operation": s,
        "userInfo": {"type": "object", "properties": {
            "username": s, "uid": s,
            "groups": {"type": "array", "items": s},
            "extra": {"type": "object", "additionalProperties": {"type": "array", "items": s}},
        }},
        "dryRun": {"type": "boolean"},
        "options": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
    }})
}

/// What the expressions of `spec` (a policy's spec, or a webhook) may name, with `object` and
/// `oldObject` of type `object` and `params` of type `params` (when `spec` has a `paramKind`).
pub fn declarations(spec: &Value, object: &Ty, params: Ty, defs: &Definitions) -> Vec<(&'static str, Ty)> {
    let mut vars = vec![
        ("object", object.clone()),
        ("oldObject", object.clone()),
        ("request", of_schema("Request", &request_schema(), defs, false)),
        ("namespaceObject", defs("io.k8s.api.core.v1.Namespace").map_or(Ty::Dyn, |n| of_schema("Namespace", &n, defs, true))),
        ("authorizer", Ty::Dyn),
    ];
    if spec["paramKind"].is_object() {
        vars.push(("params", params));
    }
    // Each variable has the type its expression has, seeing the variables before it.
    let mut fields = BTreeMap::new();
    for variable in spec["variables"].as_array().into_iter().flatten() {
        let mut seen = vars.clone();
        seen.push(("variables", Ty::Object(Obj::Fields { name: "variables".into(), fields: Arc::new(fields.clone()) })));
        let ty = check(variable["expression"].as_str().unwrap_or_default(), &seen).unwrap_or(Ty::Dyn);
        fields.insert(variable["name"].as_str().unwrap_or_default().to_string(), ty);
    }
    vars.push(("variables", Ty::Object(Obj::Fields { name: "variables".into(), fields: Arc::new(fields) })));
    vars
}
