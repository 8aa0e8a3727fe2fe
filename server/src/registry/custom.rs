//! The registry's run-time part: custom resources, one entry per served version of each
//! established CustomResourceDefinition, published as one snapshot that is swapped whole when a
//! definition changes on this replica (built from the replicated objects by
//! [`crate::crd::served`], never per request).
//!
//! A custom resource's [`ResourceInfo`] is interned: its names live as long as the process (one
//! copy per distinct set of names ever served), so requests keep the `&'static` entry the
//! built-in table gives. What a version does (its schema, subresources) lives in the snapshot and
//! goes with it.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, RwLock};

use serde_json::Value;

use super::{Decoded, KindOps, ResourceInfo, ALL_VERBS};
use crate::crd::schema::Structural;
use crate::error::Cause;

/// What one served version of a custom resource does.
#[derive(Debug)]
pub struct CustomVersion {
    /// The version's structural schema.
    pub schema: Arc<Structural>,
}

/// The custom resources served now.
#[derive(Default)]
pub struct Snapshot {
    pub entries: Vec<(&'static ResourceInfo, Arc<CustomVersion>)>,
}

static CURRENT: RwLock<Option<Arc<Snapshot>>> = RwLock::new(None);

/// The snapshot served now.
pub fn current() -> Arc<Snapshot> {
    CURRENT.read().unwrap_or_else(|p| p.into_inner()).clone().unwrap_or_default()
}

/// Replaces the served custom resources.
pub fn publish(snapshot: Snapshot) {
    *CURRENT.write().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(snapshot));
}

/// What `info` does, if it is a custom resource served now.
pub fn version(info: &ResourceInfo) -> Option<Arc<CustomVersion>> {
    if !std::ptr::eq(info.ops, &CUSTOM) {
        return None;
    }
    current().entries.iter().find(|(i, _)| std::ptr::eq(*i, info)).map(|(_, v)| v.clone())
}

/// The names of a custom resource version, as the definition accepted them.
pub struct Names<'a> {
    pub group: &'a str,
    pub version: &'a str,
    pub plural: &'a str,
    pub singular: &'a str,
    pub kind: &'a str,
    pub namespaced: bool,
    pub short_names: Vec<&'a str>,
    pub categories: Vec<&'a str>,
    pub status: bool,
    pub scale: bool,
}

/// The interned entry for `names`.
pub fn intern(names: &Names) -> &'static ResourceInfo {
    static ENTRIES: Mutex<Vec<&'static ResourceInfo>> = Mutex::new(Vec::new());
    let subresources: &'static [&'static str] = match (names.status, names.scale) {
        (false, false) => &[],
        (true, false) => &["status"],
        (false, true) => &["scale"],
        (true, true) => &["status", "scale"],
    };
    let info = ResourceInfo {
        group: intern_str(names.group),
        version: intern_str(names.version),
        resource: intern_str(names.plural),
        singular: intern_str(names.singular),
        kind: intern_str(names.kind),
        namespaced: names.namespaced,
        short_names: intern_list(&names.short_names),
        categories: intern_list(&names.categories),
        subresources,
        verbs: ALL_VERBS,
        has_generation: true,
        ops: &CUSTOM,
        gate: None,
    };
    let mut entries = ENTRIES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(found) = entries.iter().find(|e| same(e, &info)) {
        return found;
    }
    let leaked: &'static ResourceInfo = Box::leak(Box::new(info));
    entries.push(leaked);
    leaked
}

fn same(a: &ResourceInfo, b: &ResourceInfo) -> bool {
    (a.group, a.version, a.resource, a.singular, a.kind, a.namespaced, a.short_names, a.categories, a.subresources)
        == (b.group, b.version, b.resource, b.singular, b.kind, b.namespaced, b.short_names, b.categories, b.subresources)
}

fn intern_str(s: &str) -> &'static str {
    static STRINGS: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);
    let mut strings = STRINGS.lock().unwrap_or_else(|p| p.into_inner());
    let set = strings.get_or_insert_with(HashSet::new);
    if let Some(found) = set.get(s) {
        return found;
    }
    let leaked: &'static str = Box::leak(s.to_string().into_boxed_str());
    set.insert(leaked);
    leaked
}

fn intern_list(items: &[&str]) -> &'static [&'static str] {
    static LISTS: Mutex<Vec<&'static [&'static str]>> = Mutex::new(Vec::new());
    if items.is_empty() {
        return &[];
    }
    let interned: Vec<&'static str> = items.iter().map(|s| intern_str(s)).collect();
    let mut lists = LISTS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(found) = lists.iter().find(|l| **l == interned.as_slice()) {
        return found;
    }
    let leaked: &'static [&'static str] = Box::leak(interned.into_boxed_slice());
    lists.push(leaked);
    leaked
}

/// The behaviour every custom resource shares: each step asks the version's schema.
static CUSTOM: KindOps = KindOps {
    decode: custom_decode,
    default: custom_default,
    validate: custom_validate,
    update: super::kinds::no_update_rules,
    columns: &[],
    cells: super::kinds::no_cells,
    schema: custom_schema,
    definition: "",
};

fn custom_decode(info: &ResourceInfo, obj: Value) -> Result<Decoded, String> {
    match version(info) {
        Some(v) => v.schema.decode(obj),
        None => Ok(Decoded { object: obj, unknown_fields: Vec::new() }),
    }
}

fn custom_default(info: &ResourceInfo, obj: &mut Value) {
    if let Some(v) = version(info) {
        v.schema.default(obj);
    }
}

fn custom_validate(info: &ResourceInfo, obj: &Value) -> Vec<Cause> {
    version(info).map(|v| v.schema.validate(obj)).unwrap_or_default()
}

/// Custom resources are published from their own schemas, not from a Rust type.
fn custom_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::Schema::default()
}

/// Whether `info` is a custom resource.
pub fn is_custom(info: &ResourceInfo) -> bool {
    std::ptr::eq(info.ops, &CUSTOM)
}
