//! The objects of one cluster-scoped resource as this replica has applied them, kept by the
//! apply path: each decoded once when it is written, so that a plugin needing them on every
//! write (a namespace's labels, the default StorageClass, a RuntimeClass by name) looks them up
//! instead of reading and decoding them again, as kube-apiserver's plugins read a lister.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use raft_store::{ApplyObserver, Object};
use serde_json::Value;

/// Objects under one storage prefix, by name; shared by the store that feeds it and the
/// requests that read it. An object that cannot be decoded counts as absent.
pub struct Kept {
    prefixes: [&'static str; 1],
    by_name: RwLock<BTreeMap<String, Arc<Value>>>,
}

impl Kept {
    /// The objects stored under `prefix` (`/registry/<group>/<resource>/`).
    pub fn new(prefix: &'static str) -> Kept {
        Kept { prefixes: [prefix], by_name: RwLock::default() }
    }

    /// The object `name` as last applied here.
    pub fn get(&self, name: &str) -> Option<Arc<Value>> {
        self.by_name.read().unwrap_or_else(|e| e.into_inner()).get(name).cloned()
    }

    /// Every object, in name order.
    pub fn all(&self) -> Vec<Arc<Value>> {
        self.by_name.read().unwrap_or_else(|e| e.into_inner()).values().cloned().collect()
    }
}

fn decode(object: &Object) -> Option<Arc<Value>> {
    serde_json::from_slice(&object.data).ok().map(Arc::new)
}

impl ApplyObserver for Kept {
    fn prefixes(&self) -> &[&'static str] {
        &self.prefixes
    }

    fn applied(&self, key: &str, object: Option<&Object>) {
        let Some(name) = key.strip_prefix(self.prefixes[0]) else { return };
        let mut by_name = self.by_name.write().unwrap_or_else(|e| e.into_inner());
        match object.and_then(decode) {
            Some(o) => by_name.insert(name.to_string(), o),
            None => by_name.remove(name),
        };
    }

    fn reset(&self, objects: &mut dyn Iterator<Item = (&str, &Object)>) {
        let prefix = self.prefixes[0];
        let fresh = objects.filter_map(|(key, o)| Some((key.strip_prefix(prefix)?.to_string(), decode(o)?))).collect();
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
        let kept = Kept::new("/registry/things/");
        kept.applied("/registry/things/b", Some(&stored(r#"{"metadata":{"name":"b"}}"#)));
        kept.applied("/registry/things/a", Some(&stored(r#"{"metadata":{"name":"a"}}"#)));
        kept.applied("/registry/things/c", Some(&stored("not json")));
        assert_eq!(kept.all().iter().map(|o| o["metadata"]["name"].as_str().unwrap()).collect::<Vec<_>>(), ["a", "b"]);
        kept.applied("/registry/things/a", None);
        assert!(kept.get("a").is_none() && kept.get("b").is_some());
        let d = stored(r#"{"metadata":{"name":"d"}}"#);
        kept.reset(&mut [("/registry/things/d", &d)].into_iter());
        assert!(kept.get("d").is_some() && kept.get("b").is_none());
    }
}
