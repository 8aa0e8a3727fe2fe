//! OpenAPI documents derived from the registry table and the `k8s-openapi` schemas:
//! `/openapi/v2` (Swagger 2.0), the `/openapi/v3` index, and one OpenAPI 3.0 document per group
//! version. Each kind's schema carries `x-kubernetes-group-version-kind` and Kubernetes' list,
//! map and patch extensions ([`facts`]), and every write
//! operation lists the `fieldValidation` parameter, so `kubectl explain` and kubectl's
//! server-side validation work. Built once, served as cached bytes.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use schemars::generate::SchemaSettings;
use serde_json::{json, Map, Value};

pub mod custom;
pub mod facts;
pub mod gnostic;

use crate::negotiate::PATCH_TYPES;
use crate::registry::{self, built_in, ResourceInfo};

/// The Swagger 2.0 definitions of every kind and what it refers to, keyed by definition name.
pub fn definitions() -> Map<String, Value> {
    schemas("#/definitions/", false)
}

/// Schemas of every kind, keyed by definition name, with refs under `ref_prefix`.
fn schemas(ref_prefix: &str, openapi3: bool) -> Map<String, Value> {
    let mut settings = if openapi3 { SchemaSettings::openapi3() } else { SchemaSettings::draft07() };
    settings.definitions_path = ref_prefix.trim_start_matches('#').to_string().into();
    let mut generator = settings.into_generator();
    let mut out = Map::new();
    for r in built_in() {
        let schema = (r.ops.schema)(&mut generator);
        let mut v = schema.to_value();
        if let Some(o) = v.as_object_mut() {
            o.remove("$schema");
            o.insert("x-kubernetes-group-version-kind".into(), json!([{"group": r.group, "version": r.version, "kind": r.kind}]));
        }
        out.insert(r.ops.definition.to_string(), v);
    }
    for (name, schema) in generator.take_definitions(true) {
        out.entry(name).or_insert(schema);
    }
    facts::annotate(&mut out);
    out
}

fn params(openapi3: bool) -> Vec<Value> {
    let p = |name: &str| {
        if openapi3 {
            json!({"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": true}})
        } else {
            json!({"name": name, "in": "query", "type": "string", "uniqueItems": true})
        }
    };
    vec![p("dryRun"), p("fieldManager"), p("fieldValidation")]
}

/// The definition a resource's objects are published under.
fn definition(r: &ResourceInfo) -> String {
    if registry::custom::is_custom(r) {
        custom::definition_name(r)
    } else {
        r.ops.definition.to_string()
    }
}

fn body_ref(r: &ResourceInfo, openapi3: bool) -> Value {
    let def = definition(r);
    if openapi3 {
        json!({"content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{def}")}}}})
    } else {
        json!({"name": "body", "in": "body", "required": true, "schema": {"$ref": format!("#/definitions/{def}")}})
    }
}

/// Paths of one resource: the collection (list, create) and the object (get, replace, patch,
/// delete).
fn paths(r: &ResourceInfo, openapi3: bool) -> Vec<(String, Value)> {
    let root = r.api_root();
    let base = if r.namespaced { format!("{root}/namespaces/{{namespace}}/{}", r.resource) } else { format!("{root}/{}", r.resource) };
    let gvk = json!({"group": r.group, "version": r.version, "kind": r.kind});
    let op = |action: &str, id: &str, with_body: bool| {
        let mut o = json!({
            "operationId": format!("{id}{}", r.kind),
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": gvk,
            "responses": {"200": {"description": "OK"}},
        });
        if with_body {
            let mut ps = params(openapi3);
            if openapi3 {
                o["requestBody"] = body_ref(r, true);
            } else {
                ps.push(body_ref(r, false));
            }
            o["parameters"] = json!(ps);
        }
        o
    };
    // A patch body is one of the patch media types, as kubectl checks before it sends a
    // strategic merge patch.
    let mut patch = op("patch", "patch", true);
    if openapi3 {
        let content: Map<String, Value> =
            PATCH_TYPES.iter().map(|t| (t.to_string(), json!({"schema": {"type": "object"}}))).collect();
        patch["requestBody"] = json!({"content": content, "required": true});
    } else {
        patch["consumes"] = json!(PATCH_TYPES);
    }
    vec![
        (base.clone(), json!({"get": op("list", "list", false), "post": op("post", "create", true)})),
        (
            format!("{base}/{{name}}"),
            json!({"get": op("get", "read", false), "put": op("put", "replace", true), "patch": patch, "delete": op("delete", "delete", false)}),
        ),
    ]
}

/// The Swagger 2.0 document: the built-in kinds, and the custom resources served now.
pub fn v2() -> Vec<u8> {
    if registry::custom::current().entries.is_empty() {
        return built_in_v2().to_vec();
    }
    custom::docs().v2.clone()
}

/// The Swagger 2.0 document in gnostic's protobuf form.
pub fn v2_protobuf() -> Vec<u8> {
    if registry::custom::current().entries.is_empty() {
        return built_in_v2_protobuf().to_vec();
    }
    custom::docs().v2_protobuf.clone()
}

/// The Swagger 2.0 document of the built-in kinds.
fn built_in_v2() -> &'static [u8] {
    static DOC: OnceLock<Vec<u8>> = OnceLock::new();
    DOC.get_or_init(|| {
        let all_paths: Map<String, Value> = built_in().flat_map(|r| paths(r, false)).collect();
        let doc = json!({
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": "v1.36.0"},
            "paths": all_paths,
            "definitions": definitions(),
        });
        serde_json::to_vec(&doc).unwrap_or_default()
    })
}

fn built_in_v2_protobuf() -> &'static [u8] {
    static DOC: OnceLock<Vec<u8>> = OnceLock::new();
    DOC.get_or_init(|| gnostic::document(&serde_json::from_slice(built_in_v2()).unwrap_or_default()))
}

/// `api/v1` or `apis/{group}/{version}` of a resource.
fn gv_path(r: &ResourceInfo) -> String {
    if r.group.is_empty() {
        format!("api/{}", r.version)
    } else {
        format!("apis/{}/{}", r.group, r.version)
    }
}

fn v3_docs() -> &'static BTreeMap<String, Vec<u8>> {
    static DOCS: OnceLock<BTreeMap<String, Vec<u8>>> = OnceLock::new();
    DOCS.get_or_init(|| {
        let all = schemas("#/components/schemas/", true);
        let mut docs = BTreeMap::new();
        let mut gvs: Vec<String> = built_in().map(gv_path).collect();
        gvs.dedup();
        for gv in gvs {
            let res: Vec<&ResourceInfo> = built_in().filter(|r| gv_path(r) == gv).collect();
            let paths: Map<String, Value> = res.iter().flat_map(|r| paths(r, true)).collect();
            let doc = json!({
                "openapi": "3.0.0",
                "info": {"title": "Kubernetes", "version": "v1.36.0"},
                "paths": paths,
                "components": {"schemas": all},
            });
            docs.insert(gv, serde_json::to_vec(&doc).unwrap_or_default());
        }
        docs
    })
}

fn hash(bytes: &[u8]) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    format!("{:016X}", h.finish())
}

/// The `/openapi/v3` index: each group version's document with the hash of its content.
pub fn v3_index() -> Vec<u8> {
    let entry = |gv: &String, doc: &Vec<u8>| (gv.clone(), json!({"serverRelativeURL": format!("/openapi/v3/{gv}?hash={}", hash(doc))}));
    let mut paths: Map<String, Value> = v3_docs().iter().map(|(gv, doc)| entry(gv, doc)).collect();
    if !registry::custom::current().entries.is_empty() {
        paths.extend(custom::docs().v3.iter().map(|(gv, doc)| entry(gv, doc)));
    }
    serde_json::to_vec(&json!({"paths": paths})).unwrap_or_default()
}

/// The OpenAPI 3.0 document of one group version (`api/v1`, `apis/apps/v1`, a custom one).
pub fn v3_group_version(path: &str) -> Option<Vec<u8>> {
    match v3_docs().get(path) {
        Some(doc) => Some(doc.clone()),
        None if registry::custom::current().entries.is_empty() => None,
        None => custom::docs().v3.get(path).cloned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref") {
                    out.push(r.clone());
                }
                m.values().for_each(|x| refs(x, out));
            }
            Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
            _ => {}
        }
    }

    #[test]
    fn v3_core_has_pod_with_gvk_and_resolvable_refs() {
        let doc: Value = serde_json::from_slice(&v3_group_version("api/v1").unwrap()).unwrap();
        let pod = &doc["components"]["schemas"]["io.k8s.api.core.v1.Pod"];
        assert_eq!(pod["x-kubernetes-group-version-kind"][0]["kind"], "Pod");
        let post = &doc["paths"]["/api/v1/namespaces/{namespace}/pods"]["post"];
        assert!(post["parameters"].as_array().unwrap().iter().any(|p| p["name"] == "fieldValidation"));
        let patch = &doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"];
        assert!(patch["requestBody"]["content"].get("application/strategic-merge-patch+json").is_some(), "{patch}");
        let mut all = Vec::new();
        refs(&doc, &mut all);
        assert!(!all.is_empty());
        for r in all {
            let name = r.strip_prefix("#/components/schemas/").unwrap_or_else(|| panic!("ref {r}"));
            assert!(doc["components"]["schemas"].get(name).is_some(), "dangling {r}");
        }
        let index: Value = serde_json::from_slice(&v3_index()).unwrap();
        assert!(index["paths"]["apis/apps/v1"]["serverRelativeURL"].as_str().unwrap().starts_with("/openapi/v3/apis/apps/v1?hash="));
    }
}
