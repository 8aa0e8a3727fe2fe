//! Arbitrary JSON values for the property tests of the parsers and mergers.

use proptest::prelude::*;
use serde_json::Value;

/// Small JSON values: scalars, and lists and objects of them a few levels deep.
pub fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![Just(Value::Null), any::<bool>().prop_map(Value::from), any::<i32>().prop_map(Value::from), "[a-c$/]{0,3}".prop_map(Value::from)];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map("[a-c$/]{1,2}|spec|containers|name|metadata|\\$patch|\\$retainKeys", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}
