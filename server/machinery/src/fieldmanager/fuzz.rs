//! Property tests of field management over arbitrary objects: the field-set codec round-trips,
//! applies and updates never panic, an apply's result holds every applied field, an apply
//! repeated changes nothing, an update's gained and lost fields are exactly those the definitions
//! name (new and removed paths whole, a list item gained only when new), and a set meets a stored set exactly when they share a member.

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

/// Deployments whose containers (their names may repeat), their ports and env (keys may
/// repeat), labels and one value of any shape vary.
fn deployment_with_lists() -> impl Strategy<Value = Value> {
    use proptest::collection::{btree_map, vec};
    let port = (0u16..3, prop_oneof![Just("TCP"), Just("UDP")]).prop_map(|(p, proto)| json!({"containerPort": 80 + p, "protocol": proto}));
    let env = ("[a-b]", "[0-1]").prop_map(|(n, v)| json!({"name": n, "value": v}));
    let container = ("[a-c]", "[0-1]", vec(port, 0..3), vec(env, 0..3)).prop_map(|(n, i, ports, env)| json!({"name": n, "image": i, "ports": ports, "env": env}));
    (vec(container, 0..3), btree_map("[a-c]", "[0-2]", 0..3), vec("[a-c]", 0..3), value()).prop_map(|(containers, labels, finalizers, extra)| {
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
    fn an_update_gains_the_fields_whose_value_differs_and_loses_those_gone(old in deployment_with_lists(), new in deployment_with_lists()) {
        // Every path of an object's field tree, maps and lists included.
        fn every(mut set: FieldSet) -> FieldSet {
            set.member = true;
            set.children = set.children.into_iter().map(|(e, c)| (e, every(c))).collect();
            set
        }
        let (old_set, new_set) = (walk::fields(&old, Some(DEPLOYMENT)), walk::fields(&new, Some(DEPLOYMENT)));
        let (mut every_old, mut every_new) = (every(old_set), every(new_set.clone()));
        every_old.member = false;
        every_new.member = false;
        let mut gained = FieldSet::default();
        // A path of a list item whose key repeats leads to the first such item, where it may
        // not be found: only paths found in `new` count. New paths are gained; members whose
        // value differs too, a list item only when new.
        for p in every_new.paths() {
            let (now, before) = (walk::get(&new, &p), walk::get(&old, &p));
            let item = p.last().is_some_and(|e| e.starts_with("k:"));
            if now.is_some() && (before.is_none() || (new_set.contains(&p) && !item && before != now)) {
                gained.insert(&p);
            }
        }
        gained.prune();
        let mut lost = every_old.difference(&every_new);
        lost.prune();
        let mut got = diff::diff(&old, &new, Some(DEPLOYMENT));
        got.gained.prune();
        got.lost.prune();
        prop_assert_eq!(got, diff::Diff { gained, lost });
    }

    #[test]
    fn a_set_meets_a_stored_set_when_they_share_a_member(a in deployment_with_lists(), b in deployment_with_lists(), keep in proptest::collection::vec(any::<bool>(), 64)) {
        // Some of each object's fields, so that members with children meet members without.
        let some = |d: &Value, offset: usize| {
            let mut set = FieldSet::default();
            for (i, p) in walk::fields(d, Some(DEPLOYMENT)).paths().iter().enumerate() {
                if keep[(i + offset) % keep.len()] {
                    set.insert(p);
                }
            }
            set
        };
        let (a, b) = (some(&a, 0), some(&b, 32));
        prop_assert_eq!(a.meets(&b.to_json()), !a.intersection(&b).is_empty());
    }
}
