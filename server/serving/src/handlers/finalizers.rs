//! The finalizers a delete puts on an object or waits for: the propagation policy's (`orphan`,
//! `foregroundDeletion`) and any other that holds an object until removed.

use serde_json::{json, Value};

use machinery::delete_options::{Propagation, FOREGROUND_FINALIZER, ORPHAN_FINALIZER};
use machinery::meta::meta_mut;
use machinery::registry::ResourceInfo;

/// Puts the finalizer `policy` needs on `obj` (and takes the other one off); returns whether
/// the finalizers changed.
fn apply_finalizers(policy: Propagation, obj: &mut Value) -> bool {
    let (want, drop) = match policy {
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

/// Whether no finalizer holds `obj` (a namespace's `spec.finalizers` included).
pub(super) fn finalizers_empty(obj: &Value) -> bool {
    obj["metadata"]["finalizers"].as_array().is_none_or(Vec::is_empty)
        && (obj["kind"] != "Namespace" || obj["spec"]["finalizers"].as_array().is_none_or(Vec::is_empty))
}

/// Puts on `obj` the finalizers a delete needs: those of an explicit propagation policy (the
/// default leaves them as they are, also on an object already being deleted). Returns whether
/// its finalizers changed.
pub(super) fn on_delete(info: &ResourceInfo, propagation: Option<Propagation>, obj: &mut Value) -> bool {
    // Kinds that orphan by default do so on their first delete without a policy.
    let first = obj["metadata"].get("deletionTimestamp").is_none();
    let propagation = propagation.or_else(|| (first && info.ops.strategy.orphans_by_default.is_some()).then_some(Propagation::Orphan));
    propagation.is_some_and(|p| apply_finalizers(p, obj))
}
