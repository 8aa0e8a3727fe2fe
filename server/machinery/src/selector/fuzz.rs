//! Property tests of the selector parsers, which read a request's query: any `labelSelector`
//! or `fieldSelector` (strings of the selector grammar's own characters, and arbitrary text)
//! parses or is a 400, never a panic, and a selector that parses matches any object without
//! panicking.

use proptest::prelude::*;
use serde_json::{json, Map, Value};

use super::{FieldSelector, LabelSelector};
use crate::error::ApiError;
use crate::test_values::json_value;

/// Text made mostly of the selector grammar: keys, operators, sets and escapes.
fn selector_text() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        Just("a".to_string()), Just("b".to_string()), Just("1".to_string()), Just("x/y".to_string()),
        Just("metadata.name".to_string()), Just("spec.nodeName".to_string()), Just("status.phase".to_string()),
        Just("=".to_string()), Just("==".to_string()), Just("!=".to_string()), Just("!".to_string()),
        Just(" in ".to_string()), Just(" notin ".to_string()), Just(">".to_string()), Just("<".to_string()),
        Just("(".to_string()), Just(")".to_string()), Just(",".to_string()), Just("\\".to_string()), Just(" ".to_string()),
        "\\PC{0,3}",
    ];
    proptest::collection::vec(token, 0..12).prop_map(|t| t.concat())
}

fn labels() -> impl Strategy<Value = Map<String, Value>> {
    proptest::collection::btree_map("a|b|x/y", "1|2|a|", 0..3).prop_map(|m| m.into_iter().map(|(k, v)| (k, Value::from(v))).collect())
}

proptest! {
    #[test]
    fn label_selectors_parse_or_are_refused(s in selector_text(), l in labels()) {
        match LabelSelector::parse(&s) {
            Ok(sel) => {
                let _ = sel.matches(Some(&l));
                let _ = sel.matches(None);
            }
            Err(e) => prop_assert!(matches!(e, ApiError::BadRequest(_)), "{s:?}: {e:?}"),
        }
    }

    #[test]
    fn field_selectors_parse_or_are_refused(s in selector_text(), obj in json_value(), custom in proptest::bool::ANY) {
        let custom = if custom { vec!["spec.color".to_string()] } else { Vec::new() };
        for (group, resource) in [("", "pods"), ("", "configmaps"), ("example.com", "widgets")] {
            match FieldSelector::parse(group, resource, &custom, &s) {
                Ok(sel) => {
                    let _ = sel.matches(&obj);
                    let _ = sel.matches(&json!({"metadata": {"name": "a"}, "spec": {"nodeName": obj.clone()}}));
                }
                Err(e) => prop_assert!(matches!(e, ApiError::BadRequest(_)), "{s:?}: {e:?}"),
            }
        }
    }
}
