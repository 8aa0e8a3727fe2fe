//! Objects seen as field sets, by their kind's schema ([`crate::openapi::facts`]): every scalar,
//! every atomic list, map or struct, every set member (`v:`) and every item of a map-typed list
//! (`k:` with its keys) is a field; maps and structs are walked into. Also the value at a path,
//! and removing one.

use serde_json::{Map, Value};

use super::fieldset::FieldSet;
use crate::openapi::facts::{schemas, Field, ListType};

pub(super) fn field_of(def: Option<&str>, key: &str) -> Field {
    def.map(|d| schemas().field(d, key)).unwrap_or_default()
}

/// The `k:` element of a map-list item: its key fields (sorted by name, as Kubernetes writes
/// them).
pub fn key_element(item: &Value, keys: &[String]) -> String {
    let fields: Map<String, Value> = keys.iter().filter_map(|k| item.get(k).map(|v| (k.clone(), v.clone()))).collect();
    format!("k:{}", Value::Object(fields))
}

/// The fields of a map or struct of definition `def`.
pub fn fields(obj: &Value, def: Option<&str>) -> FieldSet {
    let mut out = FieldSet::default();
    if let Some(m) = obj.as_object() {
        walk_map(m, def, &mut out);
    }
    out
}

pub(super) fn walk_map(m: &Map<String, Value>, def: Option<&str>, out: &mut FieldSet) {
    for (k, v) in m {
        let field = field_of(def, k);
        walk_value(v, &field, out.children.entry(format!("f:{k}")).or_default());
    }
}

pub(super) fn walk_value(v: &Value, field: &Field, node: &mut FieldSet) {
    match v {
        Value::Object(m) if !field.atomic && !m.is_empty() => walk_map(m, field.def.as_deref(), node),
        Value::Array(items) if !items.is_empty() => match &field.list {
            Some(ListType::Set) => {
                for item in items {
                    node.children.entry(format!("v:{item}")).or_default().member = true;
                }
            }
            Some(ListType::Map(keys)) if items.iter().all(Value::is_object) => {
                for item in items {
                    let child = node.children.entry(key_element(item, keys)).or_default();
                    child.member = true;
                    if let Some(m) = item.as_object() {
                        walk_map(m, field.def.as_deref(), child);
                    }
                }
            }
            _ => node.member = true,
        },
        _ => node.member = true,
    }
}

/// Fills in the keys of map-list items that `obj` (of definition `def`) leaves out and the
/// schema defaults (a container port's `protocol`), as the stored object will have them.
pub fn default_keys(obj: &mut Value, def: Option<&str>) {
    let Some(m) = obj.as_object_mut() else { return };
    for (k, v) in m.iter_mut() {
        let field = field_of(def, k);
        match v {
            Value::Array(items) => {
                for item in items.iter_mut() {
                    if let Some(o) = item.as_object_mut() {
                        for (key, default) in &field.key_defaults {
                            o.entry(key.clone()).or_insert_with(|| default.clone());
                        }
                    }
                    default_keys(item, field.def.as_deref());
                }
            }
            Value::Object(_) if field.def.is_some() => default_keys(v, field.def.as_deref()),
            _ => {}
        }
    }
}

/// The value at `path` in `obj`.
pub fn get<'a>(obj: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut cur = obj;
    for e in path {
        cur = step(cur, e)?;
    }
    Some(cur)
}

/// The value one path element below `cur`.
pub(super) fn step<'a>(cur: &'a Value, e: &str) -> Option<&'a Value> {
    let (kind, rest) = (e.get(..2)?, e.get(2..)?);
    match kind {
        "f:" => cur.get(rest),
        "k:" => {
            let keys: Map<String, Value> = serde_json::from_str(rest).ok()?;
            cur.as_array()?.iter().find(|item| keys.iter().all(|(k, v)| item.get(k) == Some(v)))
        }
        "v:" => {
            let want: Value = serde_json::from_str(rest).ok()?;
            cur.as_array()?.iter().find(|item| **item == want)
        }
        "i:" => cur.get(rest.parse::<usize>().ok()?),
        _ => None,
    }
}

/// Removes the value at `path` from `obj` (a field, a list item); nothing when it is absent.
pub fn remove(obj: &mut Value, path: &[String]) {
    let Some((last, parents)) = path.split_last() else { return };
    let mut cur = obj;
    for e in parents {
        let next = match e.get(..2) {
            Some("f:") => cur.get_mut(&e[2..]),
            Some("k:" | "v:") => {
                let index = match cur.as_array() {
                    Some(items) => items.iter().position(|i| step(&Value::Array(vec![i.clone()]), e).is_some()),
                    None => None,
                };
                index.and_then(|i| cur.get_mut(i))
            }
            Some("i:") => e[2..].parse::<usize>().ok().and_then(|i| cur.get_mut(i)),
            _ => None,
        };
        match next {
            Some(n) => cur = n,
            None => return,
        }
    }
    match last.get(..2) {
        Some("f:") => {
            if let Some(m) = cur.as_object_mut() {
                m.remove(&last[2..]);
            }
        }
        Some("k:" | "v:") => {
            if let Some(items) = cur.as_array_mut() {
                items.retain(|i| step(&Value::Array(vec![i.clone()]), last).is_none());
            }
        }
        Some("i:") => {
            if let (Some(items), Ok(i)) = (cur.as_array_mut(), last[2..].parse::<usize>()) {
                if i < items.len() {
                    items.remove(i);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const DEPLOYMENT: &str = "io.k8s.api.apps.v1.Deployment";

    fn deployment() -> Value {
        json!({"metadata": {"name": "d", "labels": {"app": "x"}, "finalizers": ["a"]},
               "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "x"}},
                        "template": {"spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80, "protocol": "TCP"}]}],
                                              "tolerations": [{"key": "k"}]}}}})
    }

    #[test]
    fn objects_become_field_sets_by_their_schema() {
        let set = fields(&deployment(), Some(DEPLOYMENT));
        let got: Vec<String> = set.paths().iter().map(|p| super::super::fieldset::render(p)).collect();
        for want in [
            ".metadata.labels.app",
            ".metadata.finalizers[=\"a\"]",
            ".spec.replicas",
            ".spec.selector",
            ".spec.template.spec.containers[name=\"c\"]",
            ".spec.template.spec.containers[name=\"c\"].image",
            ".spec.template.spec.containers[name=\"c\"].ports[containerPort=80,protocol=\"TCP\"].protocol",
            ".spec.template.spec.tolerations",
        ] {
            assert!(got.iter().any(|g| g == want), "missing {want} in {got:#?}");
        }
        assert!(!got.iter().any(|g| g.starts_with(".spec.selector.")), "a label selector is atomic: {got:#?}");
        assert!(!got.iter().any(|g| g.starts_with(".spec.template.spec.tolerations[")), "tolerations are atomic");
    }

    #[test]
    fn values_are_found_and_removed_by_path() {
        let mut d = deployment();
        let image: Vec<String> = ["f:spec", "f:template", "f:spec", "f:containers", "k:{\"name\":\"c\"}", "f:image"].iter().map(|s| s.to_string()).collect();
        assert_eq!(get(&d, &image), Some(&json!("i")));
        remove(&mut d, &image);
        assert_eq!(get(&d, &image), None);
        let container = &image[..5];
        remove(&mut d, container);
        assert_eq!(d["spec"]["template"]["spec"]["containers"], json!([]));
        let finalizer: Vec<String> = vec!["f:metadata".into(), "f:finalizers".into(), "v:\"a\"".into()];
        remove(&mut d, &finalizer);
        assert_eq!(d["metadata"]["finalizers"], json!([]));
    }
}
