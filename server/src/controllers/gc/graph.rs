//! The garbage collector's index: every object that names owners (its `ownerReferences`), and
//! for each owner uid the keys of the objects that name it. Kept from the shared informer's events,
//! so finding an owner's dependents never scans the store.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

/// One entry of `metadata.ownerReferences`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerRef {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub uid: String,
    pub block_owner_deletion: bool,
}

impl OwnerRef {
    /// The references of `obj`; malformed ones (no uid) are left out.
    pub fn of(obj: &Value) -> Vec<OwnerRef> {
        obj["metadata"]["ownerReferences"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| {
                let s = |f: &str| r[f].as_str().unwrap_or_default().to_string();
                let uid = s("uid");
                (!uid.is_empty()).then(|| OwnerRef {
                    api_version: s("apiVersion"),
                    kind: s("kind"),
                    name: s("name"),
                    uid,
                    block_owner_deletion: r["blockOwnerDeletion"].as_bool().unwrap_or(false),
                })
            })
            .collect()
    }
}

/// An object that has owners.
#[derive(Debug, Clone)]
pub struct Dependent {
    pub uid: String,
    pub owners: Vec<OwnerRef>,
    /// Whether it is being deleted already.
    pub deleting: bool,
}

#[derive(Default)]
pub struct Graph {
    dependents: HashMap<String, Dependent>,
    by_owner: HashMap<String, BTreeSet<String>>,
}

impl Graph {
    /// Records `obj` (stored at `key`) as it is now.
    pub fn put(&mut self, key: &str, obj: &Value) {
        self.remove(key);
        let owners = OwnerRef::of(obj);
        if owners.is_empty() {
            return;
        }
        for o in &owners {
            self.by_owner.entry(o.uid.clone()).or_default().insert(key.to_string());
        }
        let uid = obj["metadata"]["uid"].as_str().unwrap_or_default().to_string();
        let deleting = obj["metadata"].get("deletionTimestamp").is_some();
        self.dependents.insert(key.to_string(), Dependent { uid, owners, deleting });
    }

    /// Forgets the object at `key`; returns what it was.
    pub fn remove(&mut self, key: &str) -> Option<Dependent> {
        let old = self.dependents.remove(key)?;
        for o in &old.owners {
            if let Some(keys) = self.by_owner.get_mut(&o.uid) {
                keys.remove(key);
                if keys.is_empty() {
                    self.by_owner.remove(&o.uid);
                }
            }
        }
        Some(old)
    }

    pub fn get(&self, key: &str) -> Option<&Dependent> {
        self.dependents.get(key)
    }

    /// The keys of the objects that name `owner_uid` as an owner.
    pub fn dependents_of(&self, owner_uid: &str) -> Vec<String> {
        self.by_owner.get(owner_uid).map(|k| k.iter().cloned().collect()).unwrap_or_default()
    }

    /// Whether any object names `owner_uid`.
    pub fn has_dependents(&self, owner_uid: &str) -> bool {
        self.by_owner.contains_key(owner_uid)
    }

    /// Whether no object has owners.
    pub fn is_empty(&self) -> bool {
        self.dependents.is_empty()
    }

    /// Every object with owners.
    pub fn keys(&self) -> Vec<String> {
        self.dependents.keys().cloned().collect()
    }

    pub fn clear(&mut self) {
        self.dependents.clear();
        self.by_owner.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(uid: &str, owners: &[&str]) -> Value {
        let refs: Vec<Value> = owners.iter().map(|o| json!({"apiVersion": "v1", "kind": "ConfigMap", "name": o, "uid": o})).collect();
        json!({"metadata": {"uid": uid, "ownerReferences": refs}})
    }

    #[test]
    fn owners_find_their_dependents_and_forget_them() {
        let mut g = Graph::default();
        g.put("/a", &obj("a", &["o1", "o2"]));
        g.put("/b", &obj("b", &["o1"]));
        g.put("/c", &obj("c", &[]));
        assert_eq!(g.dependents_of("o1"), ["/a", "/b"]);
        assert_eq!(g.dependents_of("o2"), ["/a"]);
        assert!(g.get("/c").is_none(), "objects without owners are not kept");
        g.put("/a", &obj("a", &["o2"]));
        assert_eq!(g.dependents_of("o1"), ["/b"]);
        g.remove("/b");
        assert!(!g.has_dependents("o1"));
        assert_eq!(g.keys(), ["/a"]);
    }
}
