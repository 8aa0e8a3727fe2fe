//! Property tests of field management over arbitrary objects: the field-set codec round-trips,
//! applies and updates never panic, an apply's result holds every applied field, an apply
//! repeated changes nothing, and an update's changed fields are exactly those whose value differs.

use proptest::prelude::*;
use serde_json::{json, Value};

use super::fieldset::FieldSet;
use super::*;
use crate::test_values::json_value as value;

const DEPLOYMENT: &str = "io.k8s.api.apps.v1.Deployment";

/// Deployments whose containers, finalizers and labels vary.
fn deployment() -> impl Strategy<Value = Value> {
    (proptest::collection::btree_map("[a-c]", "[0-2]", 0..3), proptest::collection::vec("[a-c]", 0..3), proptest::collection::btree_map("[a-c]", "[0-2]", 0..3), value())
        .prop_map(|(containers, finalizers, labels, extra)| {
            let containers: Vec<Value> = containers.into_iter().map(|(n, i)| json!({"name": n, "image": i})).collect();
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                   "metadata": {"name": "d", "labels": labels, "finalizers": finalizers},
                   "spec": {"replicas": 1, "template": {"spec": {"containers": containers}}, "paused": extra}})
        })
}

fn mgr(name: &str) -> Manager {
    Manager { name: name.into(), api_version: "apps/v1".into(), subresource: None }
}

proptest! {
    #[test]
    fn the_codec_round_trips_and_refuses_junk(v in value(), d in deployment()) {
        let _ = FieldSet::from_json(&v);
        let set = walk::fields(&d, Some(DEPLOYMENT));
        prop_assert_eq!(FieldSet::from_json(&set.to_json()), Some(set.clone()));
        for p in set.paths() {
            prop_assert!(walk::get(&d, &p).is_some(), "{:?} not found", p);
        }
    }

    #[test]
    fn applies_hold_what_they_sent_and_repeat_as_no_ops(first in deployment(), second in deployment(), force in any::<bool>()) {
        let live = apply(None, &first, &mgr("one"), false, DEPLOYMENT, "t1").unwrap();
        match apply(Some(&live), &second, &mgr("two"), force, DEPLOYMENT, "t2") {
            Ok(merged) => {
                for p in walk::fields(&second, Some(DEPLOYMENT)).paths() {
                    let leaf = walk::get(&second, &p).is_some_and(|v| !v.is_object() && !v.is_array());
                    if leaf {
                        prop_assert_eq!(walk::get(&merged, &p), walk::get(&second, &p));
                    }
                }
                let again = apply(Some(&merged), &second, &mgr("two"), force, DEPLOYMENT, "t3").unwrap();
                prop_assert_eq!(again, merged);
            }
            Err(e) => prop_assert_eq!(e.code().as_u16(), 409),
        }
        let mut updated = second.clone();
        update(Some(&live), &mut updated, &mgr("three"), DEPLOYMENT, "t4");
    }

    #[test]
    fn an_update_changes_exactly_the_fields_whose_value_differs(old in deployment(), new in deployment()) {
        let set = walk::fields(&new, Some(DEPLOYMENT));
        let mut want = FieldSet::default();
        for p in set.paths() {
            if walk::get(&old, &p) != walk::get(&new, &p) {
                want.insert(&p);
            }
        }
        want.prune();
        let mut got = changed(&old, &new, &set);
        got.prune();
        prop_assert_eq!(got, want);
    }
}
