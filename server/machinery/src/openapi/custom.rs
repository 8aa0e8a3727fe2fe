//! The OpenAPI of custom resources: each served version's schema published as a definition
//! (`com.example.v1.Widget`, with `apiVersion`, `kind`, `metadata` and its group-version-kind)
//! with its paths, in the `/openapi/v3` document of its group version and in `/openapi/v2`.
//! Built again for each registry snapshot (a definition changed), lazily, when first asked for.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::{json, Map, Value};

use super::{paths, schemas};
use crate::registry::custom::{self, Snapshot};
use crate::registry::ResourceInfo;

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";

/// The documents for one snapshot of the custom resources.
pub struct Docs {
    generation: u64,
    /// `apis/{group}/{version}` to its OpenAPI 3.0 document.
    pub v3: BTreeMap<String, Vec<u8>>,
    /// The Swagger 2.0 document with the custom resources added, and its protobuf form.
    pub v2: Vec<u8>,
    pub v2_protobuf: Vec<u8>,
}

/// The documents of the custom resources served now.
pub fn docs() -> Arc<Docs> {
    static CACHE: Mutex<Option<Arc<Docs>>> = Mutex::new(None);
    let snapshot = custom::current();
    let mut cache = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    match cache.as_ref() {
        Some(d) if d.generation == snapshot.generation => d.clone(),
        _ => {
            let built = Arc::new(build(&snapshot));
            *cache = Some(built.clone());
            built
        }
    }
}

/// `com.example.v1.Widget`: the group reversed, the version and the kind, as Kubernetes names a
/// custom resource's definition.
pub fn definition_name(info: &ResourceInfo) -> String {
    let group: Vec<&str> = info.group.split('.').rev().collect();
    format!("{}.{}.{}", group.join("."), info.version, info.kind)
}

const API_VERSION: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const KIND: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
const METADATA: &str = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// The published schema of one version, as Kubernetes' builder makes it: the definition's (for
/// Swagger 2.0 made into what kubectl copes with), with `apiVersion`, `kind` and `metadata` at
/// the root and in embedded resources; a root that preserves unknown fields is a bare object in
/// Swagger 2.0.
fn schema(info: &ResourceInfo, given: &Value, selectable: &[String], v2: bool) -> Value {
    let mut s = if given.is_object() { given.clone() } else { json!({"type": "object"}) };
    if v2 && s["x-kubernetes-preserve-unknown-fields"] == true {
        s = json!({"type": "object"});
    } else {
        if v2 {
            to_v2(&mut s);
        }
        add_type_meta(&mut s, v2, false);
        add_embedded(&mut s, v2);
    }
    s["x-kubernetes-group-version-kind"] = json!([{"group": info.group, "version": info.version, "kind": info.kind}]);
    if !selectable.is_empty() {
        s["x-kubernetes-selectable-fields"] = selectable.iter().map(|f| json!({"fieldPath": f})).collect();
    }
    s
}

/// `apiVersion`, `kind` and `metadata` among a node's properties (required in an embedded one).
fn add_type_meta(s: &mut Value, v2: bool, embedded: bool) {
    let meta_ref = if v2 { format!("#/definitions/{OBJECT_META}") } else { format!("#/components/schemas/{OBJECT_META}") };
    let meta = if v2 { json!({"$ref": meta_ref, "description": METADATA}) } else { json!({"allOf": [{"$ref": meta_ref}], "description": METADATA}) };
    let Some(map) = s.as_object_mut() else { return };
    let props = map.entry("properties").or_insert_with(|| json!({}));
    if let Some(p) = props.as_object_mut() {
        p.insert("apiVersion".into(), json!({"type": "string", "description": API_VERSION}));
        p.insert("kind".into(), json!({"type": "string", "description": KIND}));
        p.insert("metadata".into(), meta);
    }
    if embedded {
        let required = map.entry("required").or_insert_with(|| json!([]));
        for k in ["kind", "apiVersion"] {
            if let Some(list) = required.as_array_mut().filter(|l| !l.iter().any(|r| r == k)) {
                list.push(json!(k));
            }
        }
    }
}

/// Embedded resources get their type and object metadata (not in Swagger 2.0 when they preserve
/// unknown fields, which kubectl would then refuse).
fn add_embedded(s: &mut Value, v2: bool) {
    for child in children(s) {
        add_embedded(child, v2);
    }
    if v2 && s["x-kubernetes-preserve-unknown-fields"] == true {
        return;
    }
    if s["x-kubernetes-embedded-resource"] == true {
        add_type_meta(s, v2, true);
    }
}

fn children(s: &mut Value) -> Vec<&mut Value> {
    let Some(map) = s.as_object_mut() else { return Vec::new() };
    let mut out = Vec::new();
    for (k, v) in map.iter_mut() {
        match k.as_str() {
            "properties" => out.extend(v.as_object_mut().into_iter().flat_map(|m| m.values_mut())),
            "items" | "additionalProperties" if v.is_object() => out.push(v),
            _ => {}
        }
    }
    out
}

/// Kubernetes' Swagger 2.0 form of a structural schema: no junctors; a nullable node untyped and
/// without items or properties (and not required); a node preserving unknown fields without
/// items or properties, and untyped if an object; an array without items untyped.
fn to_v2(s: &mut Value) {
    let Some(map) = s.as_object_mut() else { return };
    for k in ["allOf", "oneOf", "anyOf", "not"] {
        map.remove(k);
    }
    if map.remove("nullable") == Some(Value::Bool(true)) {
        map.remove("type");
        map.remove("items");
        map.remove("properties");
    }
    if map.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
        map.remove("items");
        map.remove("properties");
        if map.get("type").and_then(Value::as_str) == Some("object") {
            map.remove("type");
        }
    }
    if map.get("type").and_then(Value::as_str) == Some("array") && !map.contains_key("items") {
        map.remove("type");
    }
    let nullable: Vec<String> = map
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.iter().filter(|(_, v)| v["nullable"] == true).map(|(k, _)| k.clone()).collect())
        .unwrap_or_default();
    if map.get("additionalProperties").is_some_and(|a| a["nullable"] == true) {
        map.remove("required");
    } else if let Some(required) = map.get_mut("required").and_then(Value::as_array_mut) {
        required.retain(|r| !r.as_str().is_some_and(|r| nullable.iter().any(|n| n == r)));
    }
    for child in children(s) {
        to_v2(child);
    }
}

/// The `<Kind>List` definition.
fn list_schema(info: &ResourceInfo, item: &str, v2: bool) -> Value {
    let prefix = if v2 { "#/definitions/" } else { "#/components/schemas/" };
    json!({
        "type": "object",
        "required": ["items"],
        "description": format!("{}List is a list of {}", info.kind, info.kind),
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "items": {"type": "array", "items": {"$ref": format!("{prefix}{item}")}},
            "metadata": {"$ref": format!("{prefix}{LIST_META}")},
        },
        "x-kubernetes-group-version-kind": [{"group": info.group, "version": info.version, "kind": format!("{}List", info.kind)}],
    })
}

/// The built-in definitions a custom resource's schema refers to (metadata and what it uses).
fn meta_definitions(all: &Map<String, Value>) -> Map<String, Value> {
    all.iter().filter(|(k, _)| k.starts_with("io.k8s.apimachinery.pkg.apis.meta.v1.") || k.starts_with("io.k8s.apimachinery.pkg.runtime.")).map(|(k, v)| (k.clone(), v.clone())).collect()
}

fn build(snapshot: &Snapshot) -> Docs {
    let v3_all = schemas("#/components/schemas/", true);
    let meta3 = meta_definitions(&v3_all);
    let mut by_gv: BTreeMap<String, Vec<&(&'static ResourceInfo, Arc<custom::CustomVersion>)>> = BTreeMap::new();
    for entry in &snapshot.entries {
        by_gv.entry(format!("apis/{}/{}", entry.0.group, entry.0.version)).or_default().push(entry);
    }
    let mut v3 = BTreeMap::new();
    for (gv, entries) in &by_gv {
        let mut components = meta3.clone();
        let mut all_paths = Map::new();
        for (info, version) in entries.iter().map(|e| (e.0, &e.1)) {
            let name = definition_name(info);
            components.insert(name.clone(), schema(info, &version.schema_json, &version.selectable, false));
            components.insert(format!("{name}List"), list_schema(info, &name, false));
            all_paths.extend(paths(info, true));
        }
        let doc = json!({
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"},
            "paths": all_paths,
            "components": {"schemas": components},
        });
        v3.insert(gv.clone(), serde_json::to_vec(&doc).unwrap_or_default());
    }
    let mut v2: Value = serde_json::from_slice(super::built_in_v2()).unwrap_or_default();
    for (info, version) in snapshot.entries.iter().map(|e| (e.0, &e.1)) {
        let name = definition_name(info);
        v2["definitions"][&name] = schema(info, &version.schema_json, &version.selectable, true);
        v2["definitions"][format!("{name}List")] = list_schema(info, &name, true);
        for (path, item) in paths(info, false) {
            v2["paths"][path] = item;
        }
    }
    let v2_protobuf = super::gnostic::document(&v2);
    Docs { generation: snapshot.generation, v3, v2: serde_json::to_vec(&v2).unwrap_or_default(), v2_protobuf }
}
