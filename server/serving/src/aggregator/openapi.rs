//! The OpenAPI of extension servers (kube-aggregator's `apiservice-openapi-controller`): each
//! APIService's server is asked for its `/openapi/v2` as `system:aggregator`, at most once a
//! minute, the last good answer kept while it cannot be asked. `/openapi/v2` then carries its
//! paths under `/apis/{group}/{version}/` (this server's own paths win a conflict) and the
//! definitions and shared parameters they need that this server does not have (one this server
//! has is kept as this server has it). The merged document is built again only when a fetched
//! document changes. `/openapi/v3` lists the group versions whose servers list them in their
//! own index, and their documents are the servers' own (fetched the same way).

use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};

use super::{cached, remotes};
use access::UserInfo;
use crate::context::Ctx;

/// The last merge: the documents it was made from (the extension servers', and the generation
/// of this server's custom resources), and the result as JSON and in gnostic's protobuf form.
type Merged = (Vec<Option<Value>>, u64, Arc<(Vec<u8>, Vec<u8>)>);

static MERGED: Mutex<Option<Merged>> = Mutex::new(None);

/// `/openapi/v2` with the extension servers' paths and definitions, as (JSON, protobuf);
/// `None` when no extension server has a document.
pub async fn v2(ctx: &Ctx, base: impl FnOnce() -> Vec<u8>) -> Option<Arc<(Vec<u8>, Vec<u8>)>> {
    let mut docs = Vec::new();
    for apiservice in remotes(ctx) {
        let (doc, _) = cached(ctx, &apiservice, "/openapi/v2", &aggregator()).await;
        let (group, version) = (apiservice["spec"]["group"].as_str().unwrap_or_default(), apiservice["spec"]["version"].as_str().unwrap_or_default());
        docs.push(doc.map(|d| only_under(&d, &format!("/apis/{group}/{version}/"))));
    }
    if docs.iter().all(Option::is_none) {
        return None;
    }
    let generation = machinery::registry::custom::current().generation;
    if let Some((made_from, made_at, merged)) = MERGED.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
        if *made_from == docs && *made_at == generation {
            return Some(merged.clone());
        }
    }
    // Merged without the lock held: two requests may both merge; the later result is kept.
    let mut doc: Value = serde_json::from_slice(&base()).ok()?;
    for remote in docs.iter().flatten() {
        merge(&mut doc, remote);
    }
    let merged = Arc::new((serde_json::to_vec(&doc).unwrap_or_default(), machinery::openapi::gnostic::document(&doc)));
    *MERGED.lock().unwrap_or_else(|p| p.into_inner()) = Some((docs, generation, merged.clone()));
    Some(merged)
}

fn aggregator() -> UserInfo {
    UserInfo { name: "system:aggregator".into(), ..Default::default() }
}

/// Adds to the `/openapi/v3` index each remote group version its server's index lists.
pub async fn extend_v3_index(ctx: &Ctx, index: &mut Value) {
    for apiservice in remotes(ctx) {
        let (group, version) = (apiservice["spec"]["group"].as_str().unwrap_or_default(), apiservice["spec"]["version"].as_str().unwrap_or_default());
        let gv = format!("apis/{group}/{version}");
        let (Some(remote), _) = cached(ctx, &apiservice, "/openapi/v3", &aggregator()).await else { continue };
        if let (Some(entry), Some(paths)) = (remote["paths"].get(&gv), index["paths"].as_object_mut()) {
            paths.entry(gv).or_insert_with(|| entry.clone());
        }
    }
}

/// The OpenAPI v3 document of a remote group version (`apis/{group}/{version}`), as its server
/// gives it.
pub async fn v3_document(ctx: &Ctx, path: &str) -> Option<Value> {
    let apiservice = super::remote_for(ctx, &format!("/{path}"))?;
    cached(ctx, &apiservice, &format!("/openapi/v3/{path}"), &aggregator()).await.0
}

/// A document's paths under `prefix`, with all its definitions.
fn only_under(doc: &Value, prefix: &str) -> Value {
    let paths: Map<String, Value> = doc["paths"].as_object().into_iter().flatten().filter(|(p, _)| p.starts_with(prefix)).map(|(p, v)| (p.clone(), v.clone())).collect();
    serde_json::json!({"paths": paths, "definitions": doc["definitions"], "parameters": doc["parameters"]})
}

/// Adds `remote`'s paths and definitions that `doc` does not have.
fn merge(doc: &mut Value, remote: &Value) {
    for field in ["paths", "definitions", "parameters"] {
        let Some(from) = remote[field].as_object() else { continue };
        if !doc[field].is_object() {
            doc[field] = Value::Object(Map::new());
        }
        let into = doc[field].as_object_mut().expect("made an object above");
        for (name, v) in from {
            into.entry(name.clone()).or_insert_with(|| v.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn remote_paths_and_missing_definitions_are_added() {
        let mut doc = json!({"paths": {"/api/v1/pods": {}}, "definitions": {"io.k8s.Meta": {"type": "object"}}});
        let remote = json!({
            "paths": {"/apis/metrics.example.com/v1/widgets": {"get": {}}, "/apis/other/v1/x": {}, "/api/v1/pods": {"evil": true}},
            "definitions": {"com.example.Widget": {"type": "object"}, "io.k8s.Meta": {"type": "string"}},
        });
        merge(&mut doc, &only_under(&remote, "/apis/metrics.example.com/v1/"));
        assert_eq!(doc["paths"].as_object().unwrap().len(), 2);
        assert_eq!(doc["paths"]["/api/v1/pods"], json!({}));
        assert_eq!(doc["definitions"]["com.example.Widget"], json!({"type": "object"}));
        assert_eq!(doc["definitions"]["io.k8s.Meta"], json!({"type": "object"}));
    }
}
