//! Per-kind behaviour: typed decoding through the `k8s-openapi` types with unknown-field
//! detection, and each built-in kind's [`Strategy`] (its defaults, validation, update rules and
//! table columns) in a file of its own, one module per API group.

pub mod admissionregistration;
pub mod apiregistration;
pub mod apps;
pub mod autoscaling;
pub mod batch;
pub mod certificates;
pub mod coordination;
pub mod core;
pub mod discovery;
pub mod enums;
pub mod fields;
pub(crate) mod go_diff;
pub(crate) mod go_json;
pub mod canonical;
pub mod flowcontrol;
pub mod networking;
pub mod node;
pub mod policy;
pub mod rbac;
pub mod resource;
pub mod scheduling;
pub mod storage;
pub mod warnings;

use serde::{de::DeserializeOwned, Serialize};
use serde_json::Value;

use super::{Column, Decoded};
use crate::error::Cause;

/// Decodes through the typed schema `T`; fields the input has and the typed round trip lost
/// are unknown. Null and empty values that the types drop are not reported.
pub fn decode<T: DeserializeOwned + Serialize>(input: Value) -> Result<Decoded, String> {
    let object = match T::deserialize(&input) {
        Ok(typed) => serde_json::to_value(&typed).map_err(|e| e.to_string())?,
        Err(e) => decode_zero_times::<T>(&input).ok_or_else(|| format!("json: {e}"))?,
    };
    let mut unknown_fields = Vec::new();
    diff("", &input, &object, &mut unknown_fields);
    Ok(Decoded { object, unknown_fields })
}

const TRANSITION_TIME: &str = "lastTransitionTime";
/// Go's zero time, which Kubernetes writes as `null`.
const ZERO_TIME: &str = "0001-01-01T00:00:00Z";

/// A condition whose `lastTransitionTime` is `null` or missing is Go's zero time to Kubernetes
/// (a client-go `metav1.Condition` left unset), kept and written back as `null`; the typed
/// schema requires a time: it is decoded with the zero time in its place, then `null` again.
fn decode_zero_times<T: DeserializeOwned + Serialize>(input: &Value) -> Option<Value> {
    let mut filled = input.clone();
    let mut zeroed = false;
    walk_conditions(&mut filled, &mut |c| {
        if c.get(TRANSITION_TIME).is_none_or(Value::is_null) {
            c.insert(TRANSITION_TIME.into(), Value::from(ZERO_TIME));
            zeroed = true;
        }
    });
    if !zeroed {
        return None;
    }
    let mut object = serde_json::to_value(T::deserialize(&filled).ok()?).ok()?;
    walk_conditions(&mut object, &mut |c| {
        if c.get(TRANSITION_TIME).and_then(Value::as_str).is_some_and(|t| t == ZERO_TIME) {
            c.insert(TRANSITION_TIME.into(), Value::Null);
        }
    });
    Some(object)
}

/// Every object in a `conditions` list, anywhere in `v`.
fn walk_conditions(v: &mut Value, f: &mut dyn FnMut(&mut serde_json::Map<String, Value>)) {
    match v {
        Value::Object(map) => {
            for (k, child) in map.iter_mut() {
                if k == "conditions" {
                    for c in child.as_array_mut().into_iter().flatten().filter_map(Value::as_object_mut) {
                        f(c);
                    }
                }
                walk_conditions(child, f);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| walk_conditions(i, f)),
        _ => {}
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Object(m) => m.values().all(is_empty),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

fn diff(path: &str, input: &Value, out: &Value, unknown: &mut Vec<String>) {
    match (input, out) {
        (Value::Object(i), Value::Object(o)) => {
            for (k, v) in i {
                let p = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                match o.get(k) {
                    Some(ov) => diff(&p, v, ov, unknown),
                    None if is_empty(v) => {}
                    None => unknown.push(p),
                }
            }
        }
        (Value::Array(i), Value::Array(o)) => {
            for (n, (iv, ov)) in i.iter().zip(o).enumerate() {
                diff(&format!("{path}[{n}]"), iv, ov, unknown);
            }
        }
        _ => {}
    }
}

/// What a built-in kind does beyond its type: how it is defaulted, validated, updated and
/// printed. Each kind's file holds its `STRATEGY`; a kind without one uses [`Strategy::NONE`].
pub struct Strategy {
    /// Fills the server-side defaults (pod restartPolicy, deployment strategy, ...).
    pub default: fn(&mut Value),
    /// Validation beyond types: required fields, formats, enumerations. Empty means valid.
    pub validate: fn(&Value) -> Vec<Cause>,
    /// Validation of an update (the stored object, the new one) where it is not `validate`'s:
    /// parts left unchanged are not refused for rules they were stored under (an
    /// EndpointSlice's endpoints).
    pub validate_update: Option<fn(&Value, &Value) -> Vec<Cause>>,
    /// The rules of an update, given the stored object and the new one: fields kept when the
    /// new object leaves them out, and fields that may not change. Empty means allowed.
    pub update: fn(&Value, &mut Value) -> Vec<Cause>,
    /// Table columns after `Name`, and the cells of one object (without the name's).
    pub columns: &'static [Column],
    pub cells: fn(&Value) -> Vec<Value>,
    /// A DELETE that removes the object answers with it, as the kind's registry in
    /// kube-apiserver does (`ReturnDeletedObject`), instead of a `Status`.
    pub returns_deleted: bool,
    /// The status a new object starts with (what a client sent is dropped): the zero value of
    /// the kind's status as Kubernetes writes it (`{"replicas": 0}`, `{"phase": "Pending"}`).
    pub initial_status: Option<fn() -> Value>,
    /// The warning every answer about the kind carries when its version is deprecated.
    pub deprecation: Option<&'static str>,
    /// A new object keeps the status its creator wrote (Nodes, which kubelets register with
    /// theirs), though the kind has a status subresource.
    pub keeps_status: bool,
    /// A delete that names no propagation policy orphans the object's dependents (Kubernetes'
    /// default for ReplicationControllers and Jobs), with this warning when there is one.
    pub orphans_by_default: Option<Option<&'static str>>,
    /// The group Kubernetes names the kind by when refusing an object, when not the one it is
    /// served in (`events.k8s.io` Events are refused as core `Event`s).
    pub refused_as_group: Option<&'static str>,
    /// What a new object derives from itself once mutating admission has changed it, before it
    /// is validated (a pod's QoS class from its resources), as Kubernetes' `PrepareForCreate`.
    pub prepare_create: Option<fn(&mut Value)>,
    /// The object is created at generation 1 and stays there whatever changes (PriorityClasses,
    /// whose Kubernetes strategy never moves it).
    pub generation_fixed: bool,
    /// The kind's registry marks an object for deletion itself on its first delete, instead of
    /// the generic grace period and new generation (definitions: their finalizer and the
    /// `Terminating` condition).
    pub marks_deletion: Option<fn(&mut Value)>,
    /// The warnings a valid new object (and, on update, the stored one) earns, as Kubernetes'
    /// `WarningsOnCreate` and `WarningsOnUpdate`: deprecated fields, labels and forms.
    pub warnings: Option<fn(&Value, Option<&Value>) -> Vec<String>>,
    /// The field the kind's watchers are indexed by (Kubernetes' trigger: a pod's
    /// `spec.nodeName`): a watch selecting one value of it is offered only the events of objects
    /// holding that value, before or after the change.
    pub watch_index: Option<&'static str>,
}

impl Strategy {
    /// No defaults, no checks beyond types and metadata, every field mutable, the default table
    /// (Name, Created At).
    pub const NONE: Strategy = Strategy { default: |_| {}, validate: |_| Vec::new(), validate_update: None, update: no_update_rules, columns: &[], cells: no_cells, returns_deleted: false, initial_status: None, deprecation: None, keeps_status: false, orphans_by_default: None, refused_as_group: None, prepare_create: None, generation_fixed: false, marks_deletion: None, warnings: None, watch_index: None };
}

/// A kind whose fields may all change on update.
pub fn no_update_rules(_: &Value, _: &mut Value) -> Vec<Cause> {
    Vec::new()
}

/// A kind shown with the default table (Name, Created At).
pub fn no_cells(_: &Value) -> Vec<Value> {
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use serde_json::json;

    #[test]
    fn a_condition_without_a_transition_time_keeps_it_null() {
        use k8s_openapi::api::core::v1::Service;
        let d = decode::<Service>(json!({"metadata": {"name": "s"}, "status": {"conditions": [
            {"type": "A", "status": "True", "reason": "R", "message": "m", "lastTransitionTime": null},
            {"type": "B", "status": "True", "reason": "R", "message": "m"},
            {"type": "C", "status": "True", "reason": "R", "message": "m", "lastTransitionTime": "2026-11-28T00:00:00Z"}]}}))
        .unwrap();
        let times: Vec<&Value> = d.object["status"]["conditions"].as_array().unwrap().iter().map(|c| &c["lastTransitionTime"]).collect();
        assert_eq!(times, [&Value::Null, &Value::Null, &json!("2026-11-28T00:00:00Z")]);
        assert!(d.unknown_fields.is_empty());
        assert!(decode::<Service>(json!({"metadata": {"name": "s"}, "status": {"conditions": [{"type": "A", "lastTransitionTime": 5}]}})).is_err());
    }

    #[test]
    fn unknown_fields_are_found_but_empty_ones_are_not() {
        let d = decode::<ConfigMap>(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "x", "bogus": 1, "labels": {}},
            "data": {"a": "b"}, "extra": {"y": 2}, "nothing": null
        }))
        .unwrap();
        assert_eq!(d.unknown_fields, vec!["extra".to_string(), "metadata.bogus".to_string()]);
        assert_eq!(d.object["data"]["a"], "b");
        assert_eq!(d.object["kind"], "ConfigMap");
        assert!(decode::<ConfigMap>(json!({"data": "notamap"})).is_err());
    }
}
