//! Sets of field paths, as `managedFields` records them (`fieldsType: FieldsV1`): a tree whose
//! edges are path elements written as Kubernetes writes them (`f:name` a field, `k:{"name":"x"}`
//! a list item by its keys, `v:"x"` a set member, `i:0` a list index) and whose nodes are
//! members of the set or only on the way to members (`.` marks a member that also has
//! children).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// One node of the tree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSet {
    /// This path itself is in the set.
    pub member: bool,
    pub children: BTreeMap<String, FieldSet>,
}

/// A path: its elements from the root.
pub type Path = Vec<String>;

impl FieldSet {
    pub fn is_empty(&self) -> bool {
        !self.member && self.children.values().all(FieldSet::is_empty)
    }

    /// Adds `path` (a member at its end).
    pub fn insert(&mut self, path: &[String]) {
        let mut node = self;
        for e in path {
            node = node.children.entry(e.clone()).or_default();
        }
        node.member = true;
    }

    pub fn contains(&self, path: &[String]) -> bool {
        let mut node = self;
        for e in path {
            match node.children.get(e) {
                Some(n) => node = n,
                None => return false,
            }
        }
        node.member
    }

    /// Whether `path` or anything under it is a member.
    pub fn touches(&self, path: &[String]) -> bool {
        let mut node = self;
        for e in path {
            match node.children.get(e) {
                Some(n) => node = n,
                None => return false,
            }
        }
        !node.is_empty()
    }

    /// Drops nodes with no member under them.
    pub fn prune(&mut self) {
        self.children.retain(|_, c| {
            c.prune();
            !c.is_empty()
        });
    }

    /// Every member path, parents before children.
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect(&mut Vec::new(), &mut out);
        out
    }

    fn collect(&self, prefix: &mut Path, out: &mut Vec<Path>) {
        if self.member {
            out.push(prefix.clone());
        }
        for (e, child) in &self.children {
            prefix.push(e.clone());
            child.collect(prefix, out);
            prefix.pop();
        }
    }

    /// Members of `self` or `other`.
    pub fn union(&mut self, other: &FieldSet) {
        self.member |= other.member;
        for (e, child) in &other.children {
            self.children.entry(e.clone()).or_default().union(child);
        }
    }

    /// Members of `self` that are not in `other`.
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet { member: self.member && !other.member, children: BTreeMap::new() };
        for (e, child) in &self.children {
            let rest = match other.children.get(e) {
                Some(o) => child.difference(o),
                None => child.clone(),
            };
            if !rest.is_empty() {
                out.children.insert(e.clone(), rest);
            }
        }
        out
    }

    /// Members in both.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet { member: self.member && other.member, children: BTreeMap::new() };
        for (e, child) in &self.children {
            if let Some(o) = other.children.get(e) {
                let both = child.intersection(o);
                if !both.is_empty() {
                    out.children.insert(e.clone(), both);
                }
            }
        }
        out
    }

    /// Whether a member of `self` is a member of the `fieldsV1` value `v` (read as
    /// [`FieldSet::from_json`] reads it), without reading `v` into a set.
    pub fn meets(&self, v: &Value) -> bool {
        let Some(m) = v.as_object() else { return false };
        self.children.iter().any(|(e, child)| {
            m.get(e).is_some_and(|c| (child.member && c.as_object().is_some_and(|o| o.is_empty() || o.contains_key("."))) || child.meets(c))
        })
    }

    /// The `fieldsV1` form.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        if self.member && !self.children.is_empty() {
            m.insert(".".into(), Value::Object(Map::new()));
        }
        for (e, child) in &self.children {
            if !child.is_empty() {
                m.insert(e.clone(), child.to_json());
            }
        }
        Value::Object(m)
    }

    /// Reads a `fieldsV1` value; `None` when it is not one.
    pub fn from_json(v: &Value) -> Option<FieldSet> {
        fn node(v: &Value, member: bool) -> Option<FieldSet> {
            let m = v.as_object()?;
            let mut out = FieldSet { member: member || m.contains_key("."), children: BTreeMap::new() };
            for (k, child) in m {
                if k == "." {
                    continue;
                }
                if !matches!(k.get(..2), Some("f:" | "k:" | "v:" | "i:")) {
                    return None;
                }
                // A leaf (`{}`) is a member.
                let leaf = child.as_object().is_some_and(Map::is_empty);
                out.children.insert(k.clone(), node(child, leaf)?);
            }
            Some(out)
        }
        node(v, false)
    }
}

/// A path as Kubernetes prints it in conflicts: `.spec.containers[name="a"].image`.
pub fn render(path: &[String]) -> String {
    let mut out = String::new();
    for e in path {
        let (kind, rest) = e.split_at(2.min(e.len()));
        match kind {
            "f:" => {
                out.push('.');
                out.push_str(rest);
            }
            "k:" => {
                let keys: Map<String, Value> = serde_json::from_str(rest).unwrap_or_default();
                let parts: Vec<String> = keys.iter().map(|(k, v)| format!("{k}={v}")).collect();
                out.push_str(&format!("[{}]", parts.join(",")));
            }
            "v:" => out.push_str(&format!("[={rest}]")),
            "i:" => out.push_str(&format!("[{rest}]")),
            _ => out.push_str(e),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(elements: &[&str]) -> Path {
        elements.iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn fields_v1_round_trip_and_set_algebra() {
        let v = json!({"f:data": {"f:a": {}, "f:b": {}}, "f:spec": {"f:containers": {"k:{\"name\":\"x\"}": {".": {}, "f:image": {}, "f:name": {}}}}});
        let set = FieldSet::from_json(&v).unwrap();
        assert_eq!(set.to_json(), v);
        assert!(set.contains(&p(&["f:data", "f:a"])));
        assert!(set.contains(&p(&["f:spec", "f:containers", "k:{\"name\":\"x\"}"])));
        assert!(!set.contains(&p(&["f:spec"])));
        let mut other = FieldSet::default();
        other.insert(&p(&["f:data", "f:a"]));
        other.insert(&p(&["f:data", "f:c"]));
        assert_eq!(set.intersection(&other).paths(), [p(&["f:data", "f:a"])]);
        let rest = set.difference(&other);
        assert!(!rest.contains(&p(&["f:data", "f:a"])) && rest.contains(&p(&["f:data", "f:b"])));
        let mut all = set.clone();
        all.union(&other);
        assert!(all.contains(&p(&["f:data", "f:c"])));
        assert!(FieldSet::from_json(&json!({"x:bad": {}})).is_none());
        assert!(FieldSet::from_json(&json!([1])).is_none());
    }

    #[test]
    fn paths_print_as_kubernetes_prints_them() {
        assert_eq!(render(&p(&["f:data", "f:key"])), ".data.key");
        assert_eq!(render(&p(&["f:spec", "f:containers", "k:{\"name\":\"a\"}", "f:image"])), ".spec.containers[name=\"a\"].image");
        assert_eq!(render(&p(&["f:metadata", "f:finalizers", "v:\"x\""])), ".metadata.finalizers[=\"x\"]");
        assert_eq!(render(&p(&["f:ports", "k:{\"containerPort\":80,\"protocol\":\"TCP\"}"])), ".ports[containerPort=80,protocol=\"TCP\"]");
    }
}
