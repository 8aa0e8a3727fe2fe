//! The namespaces this replica has applied, kept by the apply path: each decoded once when it
//! is written, so that a request needing its namespace (the lifecycle check of a create, the
//! namespace selectors of admission policies) looks it up instead of reading and decoding it
//! again, as kube-apiserver's admission plugins read a namespace lister.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use raft_store::{ApplyObserver, Object};
use serde_json::Value;

const PREFIX: &str = "/registry/namespaces/";

/// Namespaces by name; shared by the store that feeds it and the requests that read it.
#[derive(Default)]
pub struct Namespaces {
    by_name: RwLock<HashMap<String, Arc<Value>>>,
}

impl Namespaces {
    /// The namespace `name` as last applied here.
    pub fn get(&self, name: &str) -> Option<Arc<Value>> {
        self.by_name.read().unwrap_or_else(|e| e.into_inner()).get(name).cloned()
    }

    /// Whether the namespace is being deleted.
    pub fn terminating(namespace: &Value) -> bool {
        namespace["metadata"].get("deletionTimestamp").is_some()
    }
}

/// The decoded namespace a stored object holds (one that cannot be decoded counts as absent).
fn decode(object: &Object) -> Option<Arc<Value>> {
    serde_json::from_slice(&object.data).ok().map(Arc::new)
}

impl ApplyObserver for Namespaces {
    fn prefixes(&self) -> &[&'static str] {
        &[PREFIX]
    }

    fn applied(&self, key: &str, object: Option<&Object>) {
        let Some(name) = key.strip_prefix(PREFIX) else { return };
        let mut by_name = self.by_name.write().unwrap_or_else(|e| e.into_inner());
        match object.and_then(decode) {
            Some(ns) => by_name.insert(name.to_string(), ns),
            None => by_name.remove(name),
        };
    }

    fn reset(&self, objects: &mut dyn Iterator<Item = (&str, &Object)>) {
        let fresh = objects.filter_map(|(key, o)| Some((key.strip_prefix(PREFIX)?.to_string(), decode(o)?))).collect();
        *self.by_name.write().unwrap_or_else(|e| e.into_inner()) = fresh;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(json: &str) -> Object {
        Object { rev: 1, data: bytes::Bytes::from(json.to_string()) }
    }

    #[test]
    fn follows_writes_deletes_and_resets() {
        let index = Namespaces::default();
        index.applied("/registry/namespaces/a", Some(&stored(r#"{"metadata":{"name":"a"}}"#)));
        assert!(!Namespaces::terminating(&index.get("a").unwrap()));
        index.applied("/registry/namespaces/a", Some(&stored(r#"{"metadata":{"name":"a","deletionTimestamp":"2026-11-28T00:00:00Z"}}"#)));
        assert!(Namespaces::terminating(&index.get("a").unwrap()));
        index.applied("/registry/namespaces/a", None);
        assert!(index.get("a").is_none());
        let b = stored(r#"{"metadata":{"name":"b"}}"#);
        index.reset(&mut [("/registry/namespaces/b", &b)].into_iter());
        assert!(index.get("b").is_some() && index.get("a").is_none());
    }
}
