//! Merging an applied configuration into the live object, by the kind's schema: maps and
//! structs field by field, map-typed lists item by item (by their keys), sets member by member,
//! and atomic values (scalars, atomic lists, maps and structs) replaced whole.

use serde_json::{Map, Value};

use super::walk::key_element;
use crate::openapi::facts::{schemas, Field, ListType};

/// `live` with `applied` merged in, for an object of definition `def`.
pub fn merge(live: &Value, applied: &Value, def: Option<&str>) -> Value {
    match (live, applied) {
        (Value::Object(l), Value::Object(a)) => Value::Object(merge_map(l, a, def)),
        (_, a) => a.clone(),
    }
}

fn merge_map(live: &Map<String, Value>, applied: &Map<String, Value>, def: Option<&str>) -> Map<String, Value> {
    let mut out = live.clone();
    for (k, a) in applied {
        let field = def.map(|d| schemas().field(d, k)).unwrap_or_default();
        let merged = match out.get(k) {
            Some(l) => merge_value(l, a, &field),
            None => a.clone(),
        };
        out.insert(k.clone(), merged);
    }
    out
}

fn merge_value(live: &Value, applied: &Value, field: &Field) -> Value {
    match (live, applied) {
        (Value::Object(l), Value::Object(a)) if !field.atomic => Value::Object(merge_map(l, a, field.def.as_deref())),
        (Value::Array(l), Value::Array(a)) => match &field.list {
            Some(ListType::Set) => {
                let mut out = l.clone();
                out.extend(a.iter().filter(|v| !l.contains(v)).cloned());
                Value::Array(out)
            }
            Some(ListType::Map(keys)) if l.iter().chain(a).all(Value::is_object) => {
                let mut out = l.clone();
                for item in a {
                    let id = key_element(item, keys);
                    match out.iter().position(|o| key_element(o, keys) == id) {
                        Some(i) => out[i] = merge(&out[i], item, field.def.as_deref()),
                        None => out.push(item.clone()),
                    }
                }
                Value::Array(out)
            }
            _ => applied.clone(),
        },
        _ => applied.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merges_by_list_type() {
        let live = json!({"metadata": {"labels": {"a": "1"}, "finalizers": ["x"]},
                          "spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "1"}], "tolerations": [{"key": "t"}]}});
        let applied = json!({"metadata": {"labels": {"b": "2"}, "finalizers": ["y"]},
                             "spec": {"containers": [{"name": "b", "image": "2"}], "tolerations": [{"key": "u"}]}});
        let out = merge(&live, &applied, Some("io.k8s.api.core.v1.Pod"));
        assert_eq!(out["metadata"]["labels"], json!({"a": "1", "b": "2"}));
        assert_eq!(out["metadata"]["finalizers"], json!(["x", "y"]));
        assert_eq!(out["spec"]["containers"], json!([{"name": "a", "image": "1"}, {"name": "b", "image": "2"}]));
        assert_eq!(out["spec"]["tolerations"], json!([{"key": "u"}]), "atomic lists are replaced");
    }
}
