//! Field management, as Kubernetes records it in `metadata.managedFields`: which manager set
//! which fields. Every write that is not an apply gives its manager (`Update`) the fields it
//! changed and takes them from the others ([`update`]); server-side apply ([`apply`]) merges
//! the applied configuration by the kind's schema, refuses to change fields other managers own
//! with other values (409, one cause per field) unless forced, shares fields set to the same
//! value, and removes fields the applier stopped sending that nobody else owns.

pub mod diff;
pub mod fieldset;
pub mod merge;
pub mod walk;

use serde_json::{json, Value};

use crate::error::{ApiError, Cause};
use fieldset::{render, FieldSet, Path};

/// The longest manager name.
pub const MAX_MANAGER_LEN: usize = 128;

/// Who writes: the `fieldManager` (or the client's User-Agent), the version it wrote in and
/// the subresource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manager {
    pub name: String,
    pub api_version: String,
    pub subresource: Option<String>,
}

impl Manager {
    /// The manager of a request: `fieldManager`, else the User-Agent up to its first `/`, as
    /// Kubernetes derives it (cut to 128 characters).
    pub fn of(field_manager: Option<&str>, user_agent: Option<&str>, api_version: &str, subresource: Option<&str>) -> Manager {
        let name = match field_manager {
            Some(m) => m.to_string(),
            None => user_agent.unwrap_or_default().split('/').next().unwrap_or_default().chars().take(MAX_MANAGER_LEN).collect(),
        };
        Manager { name, api_version: api_version.to_string(), subresource: subresource.map(str::to_string) }
    }
}

/// One `managedFields` entry.
#[derive(Debug, Clone)]
struct Entry {
    manager: String,
    operation: String,
    api_version: String,
    time: String,
    subresource: String,
    set: FieldSet,
}

const APPLY: &str = "Apply";
const UPDATE: &str = "Update";
/// The manager `kubectl apply --server-side` uses, and the annotation of client-side apply.
const KUBECTL: &str = "kubectl";
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The fields of `live`'s last-applied annotation whose values are still those of `live`.
fn last_applied_fields(live: &Value, def: &str) -> Option<FieldSet> {
    let text = live["metadata"]["annotations"].get(LAST_APPLIED)?.as_str()?;
    let last: Value = serde_json::from_str(text).ok()?;
    if last["apiVersion"] != live["apiVersion"] {
        return None;
    }
    let mut set = FieldSet::default();
    for p in walk::fields(&last, Some(def)).paths() {
        if walk::get(&last, &p) == walk::get(live, &p) {
            set.insert(&p);
        }
    }
    Some(set)
}

impl Entry {
    /// Whether this is `m`'s entry for `operation` (an apply's identity leaves out the version).
    fn is(&self, m: &Manager, operation: &str) -> bool {
        identifies(&self.manager, &self.operation, &self.api_version, &self.subresource, m, operation)
    }

    /// How conflicts name it: `"kubectl"`, or `"kubectl" using v1` for updates.
    fn display(&self) -> String {
        let mut s = format!("{:?}", self.manager);
        if !self.subresource.is_empty() {
            s.push_str(&format!(" with subresource {:?}", self.subresource));
        }
        if self.operation == UPDATE {
            s.push_str(&format!(" using {}", self.api_version));
        }
        s
    }

    fn to_json(&self) -> Value {
        let mut v = json!({
            "manager": self.manager, "operation": self.operation, "apiVersion": self.api_version,
            "time": self.time, "fieldsType": "FieldsV1", "fieldsV1": self.set.to_json(),
        });
        if !self.subresource.is_empty() {
            v["subresource"] = json!(self.subresource);
        }
        v
    }

    fn from_json(v: &Value) -> Option<Entry> {
        let s = |f: &str| v[f].as_str().unwrap_or_default().to_string();
        Some(Entry {
            manager: s("manager"),
            operation: s("operation"),
            api_version: s("apiVersion"),
            time: s("time"),
            subresource: s("subresource"),
            set: FieldSet::from_json(v.get("fieldsV1")?)?,
        })
    }
}

/// Whether an entry of these names is `m`'s entry for `operation`.
fn identifies(manager: &str, operation: &str, api_version: &str, subresource: &str, m: &Manager, op: &str) -> bool {
    manager == m.name && operation == op && subresource == m.subresource.as_deref().unwrap_or_default() && (op == APPLY || api_version == m.api_version)
}

/// Whether the stored entry `v` is `m`'s entry for `operation`.
fn stored_is(v: &Value, m: &Manager, operation: &str) -> bool {
    let s = |f: &str| v[f].as_str().unwrap_or_default();
    identifies(s("manager"), s("operation"), s("apiVersion"), s("subresource"), m, operation)
}

fn entries(obj: &Value) -> Vec<Entry> {
    obj["metadata"]["managedFields"].as_array().map(|l| l.iter().filter_map(Entry::from_json).collect()).unwrap_or_default()
}

/// Writes `list` (without empty entries) into `obj`.
fn store(obj: &mut Value, list: Vec<Entry>) {
    store_json(obj, list.iter().filter(|e| !e.set.is_empty()).map(Entry::to_json).collect());
}

/// Writes the entries `list` into `obj`, applies first, then by time and manager.
fn store_json(obj: &mut Value, mut list: Vec<Value>) {
    fn order(v: &Value) -> (bool, &str, &str) {
        (v["operation"] != APPLY, v["time"].as_str().unwrap_or_default(), v["manager"].as_str().unwrap_or_default())
    }
    list.sort_by(|a, b| order(a).cmp(&order(b)));
    if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        if list.is_empty() {
            m.remove("managedFields");
        } else {
            m.insert("managedFields".into(), Value::Array(list));
        }
    }
}

/// The fields of `obj` a manager of `subresource` can own.
fn managed_fields(obj: &Value, def: &str, subresource: Option<&str>) -> FieldSet {
    ownable(walk::fields(obj, Some(def)), subresource)
}

/// The fields of `set` a manager of `subresource` can own: never the type and identity
/// metadata; the main resource does not own status, the status subresource only status.
fn ownable(mut set: FieldSet, subresource: Option<&str>) -> FieldSet {
    for p in ["f:apiVersion", "f:kind"] {
        set.children.remove(p);
    }
    if let Some(meta) = set.children.get_mut("f:metadata") {
        meta.member = false;
        for f in ["f:name", "f:namespace", "f:creationTimestamp", "f:selfLink", "f:uid", "f:generation", "f:managedFields", "f:resourceVersion", "f:deletionTimestamp", "f:deletionGracePeriodSeconds"] {
            meta.children.remove(f);
        }
    }
    match subresource {
        Some("status") => set.children.retain(|k, _| k == "f:status"),
        _ => {
            set.children.remove("f:status");
        }
    }
    set.prune();
    set
}

/// Records a write that is not an apply: `new` (with `old`, absent on create) gets its
/// `managedFields`, `m` owning the fields it changed. A body that sets `managedFields: [{}]`
/// clears them; one that sets them otherwise has them as the base.
pub fn update(old: Option<&Value>, new: &mut Value, m: &Manager, def: &str, now: &str) {
    let sent = new["metadata"].get("managedFields");
    if sent.and_then(Value::as_array).is_some_and(|l| l.len() == 1 && l[0].as_object().is_some_and(|o| o.is_empty())) {
        store(new, Vec::new());
        return;
    }
    let kept = old.and_then(|o| o["metadata"].get("managedFields"));
    let sub = m.subresource.as_deref();
    // A create gains every field it has and loses none.
    let (gained, lost) = match old {
        None => (managed_fields(new, def, sub), FieldSet::default()),
        Some(o) => {
            let d = diff::diff(o, new, Some(def));
            (ownable(d.gained, sub), ownable(d.lost, sub))
        }
    };
    let mut taken = gained.clone();
    taken.union(&lost);
    // Entries as this server stored them that the write does not touch are kept as they are;
    // the rest (and all of a body's own entries) are read, changed and written again. The
    // body's list is taken from it (the stored one when the client sent that back).
    let stored = !matches!(sent, Some(s) if Some(s) != kept);
    let sent = new.get_mut("metadata").and_then(|m| m.get_mut("managedFields")).map(Value::take);
    let raw = match sent {
        Some(Value::Array(list)) => list,
        Some(_) => Vec::new(),
        None => kept.and_then(Value::as_array).cloned().unwrap_or_default(),
    };
    let mut list = Vec::with_capacity(raw.len() + 1);
    let mut own: Option<Entry> = None;
    for v in raw {
        let mine = stored_is(&v, m, UPDATE);
        if stored && !mine && !v.get("fieldsV1").is_some_and(|f| taken.meets(f)) {
            list.push(v);
            continue;
        }
        let Some(mut e) = Entry::from_json(&v) else { continue };
        e.set = e.set.difference(&taken);
        if mine && own.is_none() {
            own = Some(e);
        } else if !e.set.is_empty() {
            list.push(e.to_json());
        }
    }
    let own = match own {
        Some(mut e) => {
            e.set.union(&gained);
            e.time = now.to_string();
            e
        }
        None => Entry {
            manager: m.name.clone(),
            operation: UPDATE.into(),
            api_version: m.api_version.clone(),
            time: now.to_string(),
            subresource: m.subresource.clone().unwrap_or_default(),
            set: gained,
        },
    };
    if !own.set.is_empty() {
        list.push(own.to_json());
    }
    store_json(new, list);
}

/// The 409 of an apply that would change fields other managers own.
fn conflict_error(conflicts: &[(String, Path)]) -> ApiError {
    let message = if let [(manager, p)] = conflicts {
        format!("Apply failed with 1 conflict: conflict with {manager}: {}", render(p))
    } else {
        let mut managers: Vec<&String> = conflicts.iter().map(|(m, _)| m).collect();
        managers.sort();
        managers.dedup();
        let mut lines = Vec::new();
        for manager in managers {
            lines.push(format!("conflicts with {manager}:"));
            lines.extend(conflicts.iter().filter(|(m, _)| m == manager).map(|(_, p)| format!("- {}", render(p))));
        }
        format!("Apply failed with {} conflicts: {}", conflicts.len(), lines.join("\n"))
    };
    let causes = conflicts.iter().map(|(m, p)| Cause::new("FieldManagerConflict", render(p), format!("conflict with {m}"))).collect();
    ApiError::ApplyConflict { message, causes }
}

/// Server-side apply of `applied` by `m` onto `live` (absent: the object is created from it):
/// the merged object with its `managedFields`, or the conflicts (unless `force`, which takes
/// the fields over).
pub fn apply(live: Option<&Value>, applied: &Value, m: &Manager, force: bool, def: &str, now: &str) -> Result<Value, ApiError> {
    let mut applied = applied.clone();
    walk::default_keys(&mut applied, Some(def));
    let applied = &applied;
    let mut list = live.map(entries).unwrap_or_default();
    let sub = m.subresource.as_deref();
    let wanted = managed_fields(applied, def, sub);
    let empty = json!({});
    let base = live.unwrap_or(&empty);
    let mut conflicts = Vec::new();
    for e in list.iter_mut().filter(|e| !e.is(m, APPLY)) {
        let mut taken = FieldSet::default();
        for p in wanted.intersection(&e.set).paths() {
            let leaf = walk::get(applied, &p).is_some_and(|v| !v.is_object() && !v.is_array()) || !has_children(&wanted, &p);
            if leaf && walk::get(base, &p) != walk::get(applied, &p) {
                conflicts.push((e.display(), p.clone()));
                taken.insert(&p);
            }
        }
        if force {
            e.set = e.set.difference(&taken);
        }
    }
    if !conflicts.is_empty() && !force {
        // kubectl moving from client-side apply: fields its last-applied annotation set, still
        // at those values, are taken over (the rest still conflict).
        let allowed = if m.name == KUBECTL { last_applied_fields(base, def) } else { None };
        let remaining: Vec<(String, Path)> = conflicts.iter().filter(|(_, p)| !allowed.as_ref().is_some_and(|a| a.contains(p))).cloned().collect();
        if !remaining.is_empty() || allowed.is_none() {
            return Err(conflict_error(if remaining.is_empty() { &conflicts } else { &remaining }));
        }
        return apply(live, applied, m, true, def, now);
    }
    let mut merged = merge::merge(base, applied, Some(def));
    // kubectl's server-side applies keep a last-applied annotation current, for a later
    // client-side apply.
    if m.name == KUBECTL && base["metadata"]["annotations"].get(LAST_APPLIED).is_some() {
        let mut last = applied.clone();
        if let Some(a) = last["metadata"].get_mut("annotations").and_then(Value::as_object_mut) {
            a.remove(LAST_APPLIED);
        }
        merged["metadata"]["annotations"][LAST_APPLIED] = Value::String(last.to_string());
    }
    let previous = list.iter().find(|e| e.is(m, APPLY)).map(|e| e.set.clone()).unwrap_or_default();
    let released = previous.difference(&wanted);
    // Parents first: a released list item goes whole (its key fields with it). A field the
    // applier owned whole and now owns parts of (its schema became granular) stays. A list item
    // in which another manager still has a field stays whole, the fields released in it too:
    // Kubernetes adds such items back as they were, so that they keep their keys.
    let elsewhere = |p: &[String]| list.iter().any(|e| !e.is(m, APPLY) && e.set.touches(p));
    for p in released.paths() {
        let in_kept_item = (1..p.len()).any(|i| p[i - 1].starts_with("k:") && elsewhere(&p[..i]));
        if !elsewhere(&p) && !in_kept_item && !wanted.touches(&p) {
            walk::remove(&mut merged, &p);
        }
    }
    // An apply that changes nothing keeps its entry's time, so the object is not rewritten.
    let unchanged = live.is_some_and(|l| without_managed(l) == without_managed(&merged));
    let time = match list.iter().find(|e| e.is(m, APPLY)) {
        Some(e) if unchanged && e.set == wanted && e.api_version == m.api_version => e.time.clone(),
        _ => now.to_string(),
    };
    list.retain(|e| !e.is(m, APPLY));
    list.push(Entry {
        manager: m.name.clone(),
        operation: APPLY.into(),
        api_version: m.api_version.clone(),
        time,
        subresource: m.subresource.clone().unwrap_or_default(),
        set: wanted,
    });
    store(&mut merged, list);
    Ok(merged)
}

fn without_managed(obj: &Value) -> Value {
    let mut v = obj.clone();
    if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("managedFields");
    }
    v
}

/// Whether the node at `p` in `set` has children.
fn has_children(set: &FieldSet, p: &[String]) -> bool {
    let mut node = set;
    for e in p {
        match node.children.get(e) {
            Some(n) => node = n,
            None => return false,
        }
    }
    !node.children.is_empty()
}

#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod tests;
