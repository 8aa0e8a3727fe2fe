//! The objects of one namespaced resource by namespace, kept by the apply path: each decoded
//! once when it is written, with its revision, so that a write that needs its namespace's
//! LimitRanges or ResourceQuotas looks them up instead of listing and decoding them from the
//! store (kube-apiserver's plugins read an informer's lister the same way).

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use raft_store::{ApplyObserver, Object};
use serde_json::Value;

/// One object as applied: decoded, and the revision a conditional write of it names.
#[derive(Clone, Debug)]
pub struct Stored {
    pub rev: u64,
    pub value: Arc<Value>,
}

/// The objects under one key prefix (`/registry/<resource>/`), by namespace, then name.
pub struct ByNamespace {
    prefix: [&'static str; 1],
    by_namespace: RwLock<BTreeMap<String, BTreeMap<String, Stored>>>,
}

impl ByNamespace {
    pub fn new(prefix: &'static str) -> ByNamespace {
        ByNamespace { prefix: [prefix], by_namespace: Default::default() }
    }

    /// The namespace's objects in name order (none for an unknown namespace).
    pub fn list(&self, namespace: &str) -> Vec<Stored> {
        let all = self.by_namespace.read().unwrap_or_else(|e| e.into_inner());
        all.get(namespace).map(|named| named.values().cloned().collect()).unwrap_or_default()
    }

    /// The namespace and name a key under the prefix stands for.
    fn split<'k>(&self, key: &'k str) -> Option<(&'k str, &'k str)> {
        key.strip_prefix(self.prefix[0])?.split_once('/')
    }
}

/// The decoded object (one that cannot be decoded is left out: it limits nothing).
fn decode(object: &Object) -> Option<Stored> {
    serde_json::from_slice(&object.data).ok().map(|v| Stored { rev: object.rev, value: Arc::new(v) })
}

impl ApplyObserver for ByNamespace {
    fn prefixes(&self) -> &[&'static str] {
        &self.prefix
    }

    fn applied(&self, key: &str, object: Option<&Object>) {
        let Some((namespace, name)) = self.split(key) else { return };
        let mut all = self.by_namespace.write().unwrap_or_else(|e| e.into_inner());
        match object.and_then(decode) {
            Some(stored) => {
                all.entry(namespace.to_string()).or_default().insert(name.to_string(), stored);
            }
            None => {
                if let Some(named) = all.get_mut(namespace) {
                    named.remove(name);
                    if named.is_empty() {
                        all.remove(namespace);
                    }
                }
            }
        }
    }

    fn reset(&self, objects: &mut dyn Iterator<Item = (&str, &Object)>) {
        let mut fresh: BTreeMap<String, BTreeMap<String, Stored>> = BTreeMap::new();
        for (key, object) in objects {
            if let (Some((namespace, name)), Some(stored)) = (self.split(key), decode(object)) {
                fresh.entry(namespace.to_string()).or_default().insert(name.to_string(), stored);
            }
        }
        *self.by_namespace.write().unwrap_or_else(|e| e.into_inner()) = fresh;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(rev: u64, name: &str) -> Object {
        Object { rev, data: bytes::Bytes::from(format!(r#"{{"metadata":{{"name":"{name}"}}}}"#)) }
    }

    fn names(index: &ByNamespace, namespace: &str) -> Vec<(String, u64)> {
        index.list(namespace).iter().map(|s| (s.value["metadata"]["name"].as_str().unwrap().to_string(), s.rev)).collect()
    }

    #[test]
    fn follows_writes_deletes_and_resets_by_namespace() {
        let index = ByNamespace::new("/registry/limitranges/");
        index.applied("/registry/limitranges/a/y", Some(&stored(3, "y")));
        index.applied("/registry/limitranges/a/x", Some(&stored(4, "x")));
        index.applied("/registry/limitranges/b/z", Some(&stored(5, "z")));
        assert_eq!(names(&index, "a"), [("x".to_string(), 4), ("y".to_string(), 3)]);
        index.applied("/registry/limitranges/a/x", Some(&stored(6, "x")));
        index.applied("/registry/limitranges/a/y", None);
        assert_eq!(names(&index, "a"), [("x".to_string(), 6)]);
        assert!(index.list("c").is_empty());
        let w = stored(7, "w");
        index.reset(&mut [("/registry/limitranges/c/w", &w)].into_iter());
        assert!(index.list("a").is_empty());
        assert_eq!(names(&index, "c"), [("w".to_string(), 7)]);
    }
}
