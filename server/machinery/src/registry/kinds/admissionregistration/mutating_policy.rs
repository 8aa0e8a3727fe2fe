//! `admissionregistration.k8s.io/v1` MutatingAdmissionPolicies and their bindings, the version
//! Kubernetes 1.36 serves by default. Field for field (and on the Protobuf wire) they are the
//! `v1beta1` kinds that the 1.34 types have, so each is that type under the `v1` name: served
//! behind the same `MutatingAdmissionPolicy` gate as `v1beta1` and stored as `v1beta1`, so the
//! two versions read and write the same objects. Their CEL expressions must compile.

use std::borrow::Cow;

use k8s_openapi::api::admissionregistration::v1beta1;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{de::Error as _, ser::Error as _, Deserialize, Deserializer, Serialize, Serializer};
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

/// The `v1` form of a `v1beta1` kind: `apiVersion` is the only difference.
macro_rules! in_v1 {
    ($name:ident, $plural:literal) => {
        #[doc = concat!("`admissionregistration.k8s.io/v1` ", stringify!($name), ".")]
        pub struct $name(v1beta1::$name);

        impl k8s_openapi::Resource for $name {
            const API_VERSION: &'static str = V1;
            const GROUP: &'static str = "admissionregistration.k8s.io";
            const KIND: &'static str = stringify!($name);
            const VERSION: &'static str = "v1";
            const URL_PATH_SEGMENT: &'static str = $plural;
            type Scope = k8s_openapi::ClusterResourceScope;
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                as_v1(serde_json::to_value(&self.0).map_err(S::Error::custom)?).serialize(s)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let obj = as_v1beta1(Value::deserialize(d)?);
                serde_json::from_value(obj).map($name).map_err(D::Error::custom)
            }
        }

        impl JsonSchema for $name {
            fn schema_name() -> Cow<'static, str> {
                concat!("io.k8s.api.admissionregistration.v1.", stringify!($name)).into()
            }

            fn json_schema(generator: &mut SchemaGenerator) -> Schema {
                v1beta1::$name::json_schema(generator)
            }
        }
    };
}

in_v1!(MutatingAdmissionPolicy, "mutatingadmissionpolicies");
in_v1!(MutatingAdmissionPolicyBinding, "mutatingadmissionpolicybindings");

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
    use crate::registry::kinds::decode;

    #[test]
    fn v1_objects_decode_through_the_v1beta1_type_and_keep_their_version() {
        let obj = json!({"apiVersion": V1, "kind": "MutatingAdmissionPolicy", "metadata": {"name": "p"},
            "spec": {"reinvocationPolicy": "IfNeeded", "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": "[]"}}], "unknown": 1}});
        let decoded = decode::<MutatingAdmissionPolicy>(obj).unwrap();
        assert_eq!(decoded.object["apiVersion"], V1);
        assert_eq!(decoded.object["spec"]["reinvocationPolicy"], "IfNeeded");
        assert_eq!(decoded.unknown_fields.len(), 1, "{:?}", decoded.unknown_fields);
        assert!(decode::<MutatingAdmissionPolicy>(json!({"apiVersion": "v9", "kind": "MutatingAdmissionPolicy"})).is_err());
        assert!(decode::<MutatingAdmissionPolicyBinding>(json!([1])).is_err());
    }

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
