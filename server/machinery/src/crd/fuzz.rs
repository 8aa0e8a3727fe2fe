//! Property tests of custom resource validation over arbitrary objects and schemas: a random
//! schema's definition is checked and compiled without panicking, and pruning, defaulting and validating (with rules, on create and
//! as an update of another random object) never panic, finish in bounded time, and leave an
//! object that prunes to itself.

use std::time::{Duration, Instant};

use proptest::prelude::*;
use serde_json::{json, Value};

use super::definition;
use super::schema::Structural;
use crate::test_values::json_value as value;

/// Schemas of a few levels: typed nodes with constraints, maps, preserved fields and rules.
fn schema() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(json!({"type": "string", "maxLength": 2, "pattern": "^[a-c]*$"})),
        Just(json!({"type": "integer", "minimum": 0, "maximum": 3, "default": 1})),
        Just(json!({"type": "boolean"})),
        Just(json!({"type": "number", "multipleOf": 0.5})),
        Just(json!({"x-kubernetes-int-or-string": true})),
        Just(json!({"type": "string", "enum": ["a", "b"], "x-kubernetes-validations": [{"rule": "self != 'b'"}]})),
        Just(json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::btree_map("[a-c]|spec|name", inner.clone(), 0..4).prop_map(|props| {
                json!({"type": "object", "properties": props, "x-kubernetes-validations": [{"rule": "size(self) >= 0"}], "nullable": true})
            }),
            inner.clone().prop_map(|items| json!({"type": "array", "maxItems": 3, "items": items, "x-kubernetes-list-type": "atomic"})),
            inner.clone().prop_map(|values| json!({"type": "object", "additionalProperties": values})),
            (inner.clone(), inner).prop_map(|(a, b)| json!({"type": "object", "anyOf": [a, b]})),
        ]
    })
}

proptest! {
    #[test]
    fn validation_never_panics_and_is_bounded(s in schema(), obj in value(), old in value()) {
        let root = json!({"type": "object", "properties": {"spec": s.clone()}});
        let mut crd = json!({"metadata": {"name": "xs.example.com"}, "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "xs", "kind": "X"}, "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": root.clone()}}]}});
        definition::defaults(&mut crd);
        let _ = definition::validate(&crd);
        // Every generated schema is a valid one.
        let compiled = Structural::compile(&root).map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
        let started = Instant::now();
        let body = json!({"apiVersion": "example.com/v1", "kind": "X", "metadata": {"name": "x"}, "spec": obj});
        let decoded = compiled.decode(body).expect("an object decodes");
        let mut object = decoded.object;
        compiled.default(&mut object);
        let again = compiled.decode(object.clone()).expect("decodes again");
        prop_assert!(again.unknown_fields.is_empty(), "pruned twice: {:?}", again.unknown_fields);
        let _ = compiled.validate(&object, None);
        let _ = compiled.validate(&object, Some(&json!({"spec": old})));
        prop_assert!(started.elapsed() < Duration::from_secs(2), "validation took {:?}", started.elapsed());
    }
}
