//! Delete options and the finalizers a delete puts on an object or waits for: the propagation
//! policy's (`orphan`, `foregroundDeletion`) and any other that holds an object until removed.

use serde_json::{json, Value};

use machinery::meta::meta_mut;
use machinery::registry::ResourceInfo;

/// Delete preconditions and the propagation policy from `DeleteOptions`.
#[derive(Debug, Default, Clone)]
pub struct DeleteOptions {
    pub uid: Option<String>,
    pub resource_version: Option<u64>,
    pub dry_run: bool,
    /// `None`: the resource's default (Background: the garbage collector deletes dependents
    /// after the owner is gone).
    pub propagation: Option<Propagation>,
    /// `gracePeriodSeconds` (pods only; `None`: the pod's own).
    pub grace_period: Option<i64>,
    /// The body carries `preconditions`.
    pub preconditions: bool,
    /// `ignoreStoreReadErrorWithClusterBreakingPotential` (with its feature gate): remove an
    /// object that cannot be decoded.
    pub unsafe_delete: bool,
}

/// What happens to an object's dependents when it is deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    /// They lose their owner reference and stay (the `orphan` finalizer holds the owner until done).
    Orphan,
    /// The owner goes at once; the garbage collector deletes them afterwards.
    Background,
    /// They are deleted first (the `foregroundDeletion` finalizer holds the owner until the
    /// dependents that block it are gone).
    Foreground,
}

/// The finalizers the garbage collector acts on.
pub const ORPHAN_FINALIZER: &str = "orphan";
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";

impl Propagation {
    pub fn parse(s: &str) -> Option<Propagation> {
        match s {
            "Orphan" => Some(Propagation::Orphan),
            "Background" => Some(Propagation::Background),
            "Foreground" => Some(Propagation::Foreground),
            _ => None,
        }
    }

    /// Puts the finalizer this policy needs on `obj` (and takes the other one off); returns
    /// whether the finalizers changed.
    fn apply_finalizers(self, obj: &mut Value) -> bool {
        let (want, drop) = match self {
            Propagation::Orphan => (Some(ORPHAN_FINALIZER), [FOREGROUND_FINALIZER, ""]),
            Propagation::Foreground => (Some(FOREGROUND_FINALIZER), [ORPHAN_FINALIZER, ""]),
            Propagation::Background => (None, [ORPHAN_FINALIZER, FOREGROUND_FINALIZER]),
        };
        let before = obj["metadata"]["finalizers"].clone();
        let mut list: Vec<Value> = before.as_array().cloned().unwrap_or_default();
        list.retain(|f| !drop.contains(&f.as_str().unwrap_or_default()));
        if let Some(w) = want {
            if !list.iter().any(|f| f == w) {
                list.push(json!(w));
            }
        }
        let changed = list != before.as_array().cloned().unwrap_or_default();
        if changed {
            if list.is_empty() {
                meta_mut(obj).remove("finalizers");
            } else {
                meta_mut(obj).insert("finalizers".into(), Value::Array(list));
            }
        }
        changed
    }
}

/// Adds `finalizer` to `obj` unless there; returns whether it was added.
fn add_finalizer(obj: &mut Value, finalizer: &str) -> bool {
    let mut list: Vec<Value> = obj["metadata"]["finalizers"].as_array().cloned().unwrap_or_default();
    if list.iter().any(|f| f == finalizer) {
        return false;
    }
    list.push(json!(finalizer));
    meta_mut(obj).insert("finalizers".into(), Value::Array(list));
    true
}

/// Whether no finalizer holds `obj` (a namespace's `spec.finalizers` included).
pub(super) fn finalizers_empty(obj: &Value) -> bool {
    obj["metadata"]["finalizers"].as_array().is_none_or(Vec::is_empty)
        && (obj["kind"] != "Namespace" || obj["spec"]["finalizers"].as_array().is_none_or(Vec::is_empty))
}

/// Puts on `obj` the finalizers a delete needs: those of an explicit propagation policy (the
/// default leaves them as they are, also on an object already being deleted), and on a
/// definition's first delete the one that holds it until its custom resources are gone.
/// Returns whether its finalizers changed.
pub(super) fn on_delete(info: &ResourceInfo, propagation: Option<Propagation>, obj: &mut Value) -> bool {
    let mut changed = propagation.is_some_and(|p| p.apply_finalizers(obj));
    let definition = info.group == "apiextensions.k8s.io" && info.resource == "customresourcedefinitions";
    if definition && obj["metadata"].get("deletionTimestamp").is_none() {
        changed |= add_finalizer(obj, crate::controllers::crd::CLEANUP_FINALIZER);
    }
    changed
}
