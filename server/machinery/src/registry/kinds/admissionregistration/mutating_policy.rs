//! MutatingAdmissionPolicies and their bindings, `admissionregistration.k8s.io/v1` (GA in
//! Kubernetes 1.36) and `v1beta1` (beta, served when `--runtime-config` asks for it): field for
//! field the same and both stored as `v1beta1`, so the two versions read and write the same
//! objects. Their CEL expressions must compile. (The `MutatingAdmissionPolicy` gate switches
//! the admission plugin, not these resources.)

use serde_json::{json, Value};

use super::validating_policy;
use crate::error::Cause;
use crate::expr::admission::{declarations, definitions};
use crate::expr::types::Ty;
use crate::registry::convert::StoredAs;
use crate::registry::kinds::fields::{cel, col, items, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

const V1: &str = "admissionregistration.k8s.io/v1";
const V1BETA1: &str = "admissionregistration.k8s.io/v1beta1";

/// MutatingAdmissionPolicies (v1beta1 and v1): expressions that compile, kubectl's columns.
pub const STRATEGY: Strategy = Strategy { validate, columns: COLUMNS, cells, warnings: Some(crate::registry::kinds::warnings::static_suffix), ..Strategy::NONE };

/// Both kinds' `v1` objects are stored as `v1beta1`.
pub static STORED_AS_V1BETA1: StoredAs = StoredAs { api_version: V1BETA1, from_storage: as_v1, to_storage: as_v1beta1 };

fn with_api_version(mut obj: Value, from: &str, to: &str) -> Value {
    if let Some(o) = obj.as_object_mut().filter(|o| o.get("apiVersion").and_then(Value::as_str) == Some(from)) {
        o.insert("apiVersion".into(), to.into());
    }
    obj
}

fn as_v1(obj: Value) -> Value {
    with_api_version(obj, V1BETA1, V1)
}

fn as_v1beta1(obj: Value) -> Value {
    with_api_version(obj, V1, V1BETA1)
}

/// Match conditions that compile and give a bool, mutations whose expressions parse.
pub fn validate(obj: &Value) -> Vec<Cause> {
    let spec = &obj["spec"];
    let mut out = Vec::new();
    let vars = declarations(spec, &Ty::Dyn, Ty::Dyn, &definitions());
    validating_policy::expressions(&spec["matchConditions"], "spec.matchConditions", &vars, &mut out);
    for (i, mutation) in spec["mutations"].as_array().into_iter().flatten().enumerate() {
        for patch in ["applyConfiguration", "jsonPatch"] {
            cel(&mutation[patch]["expression"], &format!("spec.mutations[{i}].{patch}.expression"), &mut out);
        }
    }
    out
}

pub const COLUMNS: &[Column] = &[col("Mutations", "integer", 0), col("ParamKind", "string", 0), AGE];

pub fn cells(obj: &Value) -> Vec<Value> {
    let mut cells = validating_policy::cells(obj);
    cells[0] = json!(items(&obj["spec"]["mutations"]));
    cells
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn expressions_must_compile() {
        let policy = json!({"spec": {
            "matchConditions": [{"name": "a", "expression": "object.metadata.name"}, {"name": "b", "expression": "has(object.spec)"}],
            "mutations": [
                {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": "Object{metadata: Object.metadata{labels: {'a': 'b'}}}"}},
                {"patchType": "JSONPatch", "jsonPatch": {"expression": "[JSONPatch{op: 'add',"}},
            ],
        }});
        let got: Vec<String> = validate(&policy).iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0], "spec.matchConditions[0].expression: Invalid value: \"object.metadata.name\": must evaluate to bool but got dyn");
        assert!(got[1].starts_with("spec.mutations[1].jsonPatch.expression: Invalid value: \"[JSONPatch{op: 'add',\": compilation failed: ERROR: <input>:1:"), "{}", got[1]);
    }

    #[test]
    fn storage_keeps_v1beta1_and_serves_v1() {
        let stored = (STORED_AS_V1BETA1.to_storage)(json!({"apiVersion": V1, "kind": "MutatingAdmissionPolicyBinding"}));
        assert_eq!(stored["apiVersion"], V1BETA1);
        assert_eq!((STORED_AS_V1BETA1.from_storage)(stored)["apiVersion"], V1);
        assert_eq!((STORED_AS_V1BETA1.from_storage)(json!("not an object")), json!("not an object"));
    }
}
