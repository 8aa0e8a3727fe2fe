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
#[derive(Debug, Clone, PartialEq, Eq)]
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
    /// Records `obj` (stored at `key`) as it is now; whether that changed what the graph knows
    /// of it (its owners, uid, or whether it is being deleted).
    pub fn put(&mut self, key: &str, obj: &Value) -> bool {
        let old = self.remove(key);
        let owners = OwnerRef::of(obj);
        if owners.is_empty() {
            return old.is_some();
        }
        for o in &owners {
            self.by_owner.entry(o.uid.clone()).or_default().insert(key.to_string());
        }
        let uid = obj["metadata"]["uid"].as_str().unwrap_or_default().to_string();
        let deleting = obj["metadata"].get("deletionTimestamp").is_some();
        let new = Dependent { uid, owners, deleting };
        let changed = old.as_ref() != Some(&new);
        self.dependents.insert(key.to_string(), new);
        changed
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
        assert!(g.put("/a", &obj("a", &["o1", "o2"])), "a new dependent is a change");
        assert!(g.put("/b", &obj("b", &["o1"])));
        assert!(!g.put("/c", &obj("c", &[])), "an object without owners changes nothing");
        assert_eq!(g.dependents_of("o1"), ["/a", "/b"]);
        assert_eq!(g.dependents_of("o2"), ["/a"]);
        assert!(g.get("/c").is_none(), "objects without owners are not kept");
        assert!(!g.put("/b", &obj("b", &["o1"])), "the same owners again are no change");
        let mut deleting = obj("b", &["o1"]);
        deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert!(g.put("/b", &deleting), "a dependent being deleted is a change");
        assert!(g.put("/a", &obj("a", &["o2"])), "losing an owner is a change");
        assert_eq!(g.dependents_of("o1"), ["/b"]);
        g.remove("/b");
        assert!(!g.has_dependents("o1"));
        assert_eq!(g.keys(), ["/a"]);
    }
}
