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

use super::{Column, Decoded, KindOps, ResourceInfo, ALL_VERBS};
use crate::crd::conversion::Conversion;
use crate::crd::jsonpath::JsonPath;
use crate::crd::schema::Structural;
use crate::error::Cause;

/// What one served version of a custom resource does.
#[derive(Debug)]
pub struct CustomVersion {
    /// The version's structural schema, compiled.
    pub schema: Arc<Structural>,
    /// The schema as the definition gives it, for OpenAPI.
    pub schema_json: Value,
    /// The version objects are stored in.
    pub storage_version: String,
    /// The table's columns after `Name` (`Age` when the definition names none).
    pub columns: Vec<PrinterColumn>,
    /// Where the `scale` subresource reads and writes, when the version has one.
    pub scale: Option<ScalePaths>,
    /// The warning every request to a `deprecated` version gets.
    pub deprecation: Option<String>,
    /// The fields a field selector may name besides the name and namespace (`spec.color`).
    pub selectable: Vec<String>,
    /// The definition is being deleted: no new objects.
    pub terminating: bool,
    /// How objects move between the definition's versions.
    pub conversion: Arc<Conversion>,
    /// The definition has this version only: every object is stored in it.
    pub only_version: bool,
}

/// A version's `subresources.scale`.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScalePaths {
    pub spec_replicas_path: String,
    pub status_replicas_path: String,
    #[serde(default)]
    pub label_selector_path: Option<String>,
}

/// One of a version's `additionalPrinterColumns`.
#[derive(Debug)]
pub struct PrinterColumn {
    pub column: Column,
    pub path: JsonPath,
}

impl CustomVersion {
    /// The cells of one object's row, as Kubernetes' custom resource table gives them: a
    /// `string` column prints what its path reaches, other types keep values of their type.
    pub fn cells(&self, obj: &Value) -> Vec<Value> {
        self.columns
            .iter()
            .map(|c| {
                let Some(found) = c.path.find(obj).into_iter().next() else { return Value::Null };
                match (c.column.type_, found) {
                    ("string", Value::String(s)) => Value::String(s.clone()),
                    ("string", other) => Value::String(other.to_string()),
                    ("integer", Value::Number(n)) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)).map_or(Value::Null, Value::from),
                    ("number", Value::Number(n)) => n.as_f64().map_or(Value::Null, Value::from),
                    ("boolean", Value::Bool(b)) => Value::Bool(*b),
                    ("date", Value::String(s)) => Value::String(s.clone()),
                    _ => Value::Null,
                }
            })
            .collect()
    }
}

/// The custom resources served now.
#[derive(Default)]
pub struct Snapshot {
    /// Counts publications, so that what is derived from a snapshot knows when it is stale.
    pub generation: u64,
    pub entries: Vec<(&'static ResourceInfo, Arc<CustomVersion>)>,
}

static CURRENT: RwLock<Option<Arc<Snapshot>>> = RwLock::new(None);

/// The snapshot served now.
pub fn current() -> Arc<Snapshot> {
    CURRENT.read().unwrap_or_else(|p| p.into_inner()).clone().unwrap_or_default()
}

/// Replaces the served custom resources.
pub fn publish(entries: Vec<(&'static ResourceInfo, Arc<CustomVersion>)>) {
    let mut current = CURRENT.write().unwrap_or_else(|p| p.into_inner());
    let generation = current.as_ref().map_or(0, |s| s.generation) + 1;
    *current = Some(Arc::new(Snapshot { generation, entries }));
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
        introduced: None,
        stored_as: None,
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

/// `s` for the life of the process, one copy per distinct string.
pub fn intern_str(s: &str) -> &'static str {
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
    strategy: super::kinds::Strategy::NONE,
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

fn custom_validate(info: &ResourceInfo, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    version(info).map(|v| v.schema.validate(obj, old)).unwrap_or_default()
}

/// Custom resources are published from their own schemas, not from a Rust type.
fn custom_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::Schema::default()
}

/// Whether `info` is a custom resource.
pub fn is_custom(info: &ResourceInfo) -> bool {
    std::ptr::eq(info.ops, &CUSTOM)
}
