//! Strategic merge patch (`application/strategic-merge-patch+json`), the patch kubectl sends
//! for built-in kinds (`edit`, `apply`, `rollout restart`, ...).
//!
//! Each list's merge strategy is its `patchStrategy`/`patchMergeKey` in the published schema
//! (Kubernetes' own facts, [`crate::openapi::facts`]), found by walking the kind's schema
//! alongside the patch (see [`list_merge`]). Every other list is replaced; maps merge recursively; `null`
//! deletes a key. The directives are supported: `$patch: replace|delete` on maps and list
//! items, `$retainKeys`, `$deleteFromPrimitiveList/<field>` and `$setElementOrder/<field>`.
//! Merged lists are ordered as Kubernetes orders them: items named by the patch (or by
//! `$setElementOrder`) in that order, interleaved with the server-only items where both
//! appear in the current list; items new to the list therefore come first.

use serde_json::{Map, Value};

use crate::openapi::facts::{schemas, Field};

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList/";
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";

/// How a list merges, from the field's `patchStrategy` and `patchMergeKey`.
#[derive(Debug, Clone, PartialEq)]
enum ListMerge {
    /// Items are objects identified by this field.
    Key(String),
    /// Items are scalars; the result is the union.
    Primitive,
}

/// The merge strategy of a list field; `None` means the list is replaced.
fn list_merge(field: &Field) -> Option<ListMerge> {
    if !field.patch_strategy.as_deref().is_some_and(|s| s.split(',').any(|p| p == "merge")) {
        return None;
    }
    Some(match &field.patch_merge_key {
        Some(k) => ListMerge::Key(k.clone()),
        None => ListMerge::Primitive,
    })
}

/// What the schema says about field `key` of an object of definition `def`.
fn field_of(def: Option<&str>, key: &str) -> Field {
    def.map(|d| schemas().field(d, key)).unwrap_or_default()
}

/// Applies a strategic merge patch to an object of definition `def`; errors are messages for
/// a 400.
pub(super) fn merge(current: &Value, patch: &Value, def: &str) -> Result<Value, String> {
    let Some(patch) = patch.as_object() else {
        return Err("the strategic merge patch must be a JSON object".into());
    };
    let current = current.as_object().cloned().unwrap_or_default();
    merge_map(current, patch.clone(), Some(def)).map(Value::Object)
}

fn bad_patch_type(directive: &Value, patch: &Map<String, Value>) -> String {
    format!("unknown patch type: {} in map: {}", directive.as_str().unwrap_or_default(), Value::Object(patch.clone()))
}

/// Merges `patch` into `orig`, an object of definition `def` (`None`: not a known kind).
fn merge_map(
    mut orig: Map<String, Value>,
    mut patch: Map<String, Value>,
    def: Option<&str>,
) -> Result<Map<String, Value>, String> {
    if let Some(directive) = patch.remove(DIRECTIVE) {
        return match directive.as_str() {
            Some("replace") => merge_map(Map::new(), patch, def),
            Some("delete") => Ok(Map::new()),
            _ => Err(bad_patch_type(&directive, &patch)),
        };
    }
    if let Some(keep) = patch.remove(RETAIN_KEYS) {
        let keep =
            keep.as_array().filter(|l| l.iter().all(Value::is_string)).ok_or("invalid patch format of retainKeys")?;
        orig.retain(|k, _| keep.iter().any(|x| x == k));
    }
    let mut orders = Vec::new();
    let directives: Vec<String> = patch
        .keys()
        .filter(|k| k.starts_with(DELETE_FROM_PRIMITIVE_LIST) || k.starts_with(SET_ELEMENT_ORDER))
        .cloned()
        .collect();
    for key in directives {
        let Some(Value::Array(values)) = patch.remove(&key) else {
            return Err(if key.starts_with(SET_ELEMENT_ORDER) {
                "invalid patch format of setElementOrder list".into()
            } else {
                "invalid patch format of primitive list".into()
            });
        };
        if let Some(field) = key.strip_prefix(SET_ELEMENT_ORDER) {
            orders.push((field.to_string(), values));
        } else if let Some(Value::Array(list)) = orig.get_mut(&key[DELETE_FROM_PRIMITIVE_LIST.len()..]) {
            list.retain(|v| !values.contains(v));
        }
    }
    for (key, value) in patch {
        let order = orders.iter().position(|(f, _)| *f == key).map(|i| orders.remove(i).1);
        let old = match orig.get_mut(&key) {
            Some(old) => old.take(),
            None => Value::Null,
        };
        let field = field_of(def, &key);
        let merged = match (old, value) {
            (_, Value::Null) => {
                orig.remove(&key);
                continue;
            }
            (Value::Object(o), Value::Object(p)) => Value::Object(merge_map(o, p, field.def.as_deref())?),
            (Value::Array(o), Value::Array(p)) => Value::Array(merge_list(o, p, &field, order)?),
            (_, Value::Object(p)) => Value::Object(merge_map(Map::new(), p, field.def.as_deref())?),
            (_, Value::Array(p)) => Value::Array(merge_list(Vec::new(), p, &field, order)?),
            (_, scalar) => scalar,
        };
        orig.insert(key, merged);
    }
    // `$setElementOrder` for a list the patch does not otherwise touch.
    for (name, order) in orders {
        let field = field_of(def, &name);
        if let Some(Value::Array(list)) = orig.get_mut(&name) {
            let current = std::mem::take(list);
            *list = merge_list(current, Vec::new(), &field, Some(order))?;
        }
    }
    Ok(orig)
}

/// A patch value new to the object: its nulls and directives are resolved against nothing.
fn fresh(value: Value, def: Option<&str>) -> Result<Value, String> {
    match value {
        Value::Object(m) => merge_map(Map::new(), m, def).map(Value::Object),
        other => Ok(other),
    }
}

/// Merges a list `field`; `order` is its `$setElementOrder`.
fn merge_list(orig: Vec<Value>, patch: Vec<Value>, field: &Field, order: Option<Vec<Value>>) -> Result<Vec<Value>, String> {
    let items_def = field.def.as_deref();
    let merge_key = match list_merge(field) {
        None => return patch.into_iter().map(|v| fresh(v, items_def)).collect(),
        Some(ListMerge::Key(k)) => Some(k),
        Some(ListMerge::Primitive) => None,
    };
    let key = merge_key.as_deref();
    let mut base = orig;
    let mut items = Vec::new();
    let mut replace = false;
    for item in patch {
        match (key, item) {
            (Some(k), Value::Object(mut m)) => match m.remove(DIRECTIVE) {
                None => items.push(Value::Object(m)),
                Some(d) if d == "delete" => {
                    let id = m.get(k).ok_or_else(|| no_merge_key(&m, k))?;
                    base.retain(|o| o.get(k) != Some(id));
                }
                Some(d) if d == "replace" => replace = true,
                Some(d) if d == "merge" => return Err("merging lists cannot yet be specified in the patch".into()),
                Some(d) => return Err(bad_patch_type(&d, &m)),
            },
            (Some(k), other) => return Err(format!("map: {other} does not contain declared merge key: {k}")),
            (None, scalar) => items.push(scalar),
        }
    }
    if replace {
        base = Vec::new();
    }
    let mut merged = base.clone();
    for item in items.iter().cloned() {
        let found = match (key, &item) {
            (Some(k), Value::Object(m)) => {
                let id = m.get(k).ok_or_else(|| no_merge_key(m, k))?;
                merged.iter().position(|o| o.get(k) == Some(id))
            }
            _ => merged.iter().position(|o| *o == item),
        };
        match (found, item) {
            (Some(i), Value::Object(p)) => {
                let o = match merged[i].take() {
                    Value::Object(o) => o,
                    _ => Map::new(),
                };
                merged[i] = Value::Object(merge_map(o, p, items_def)?);
            }
            (Some(_), _) => {}
            (None, item) => merged.push(fresh(item, items_def)?),
        }
    }
    Ok(reorder(merged, &order.unwrap_or(items), &base, key))
}

fn no_merge_key(m: &Map<String, Value>, key: &str) -> String {
    format!("map: {} does not contain declared merge key: {key}", Value::Object(m.clone()))
}

/// The identity of a list item: its merge key's value, or the scalar itself.
fn id<'a>(v: &'a Value, key: Option<&str>) -> Option<&'a Value> {
    match key {
        Some(k) => v.get(k),
        None => Some(v),
    }
}

fn index(list: &[Value], v: &Value, key: Option<&str>) -> Option<usize> {
    let want = id(v, key)?;
    list.iter().position(|o| id(o, key) == Some(want))
}

/// Kubernetes' element order: items named in `order` sorted by it, interleaved with the other
/// (server-only) items, which keep their relative order; a server-only item goes before a
/// patch item only when both are in `current` and it came first there.
fn reorder(merged: Vec<Value>, order: &[Value], current: &[Value], key: Option<&str>) -> Vec<Value> {
    let (mut patched, server_only): (Vec<Value>, Vec<Value>) =
        merged.into_iter().partition(|v| index(order, v, key).is_some());
    patched.sort_by_key(|v| index(order, v, key));
    let mut out = Vec::with_capacity(patched.len() + server_only.len());
    let (mut left, mut right) = (server_only.into_iter().peekable(), patched.into_iter().peekable());
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => return out,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => {
                matches!((index(current, l, key), index(current, r, key)), (Some(a), Some(b)) if a < b)
            }
        };
        out.extend(if take_left { left.next() } else { right.next() });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const POD: &str = "io.k8s.api.core.v1.Pod";

    fn smp(current: Value, patch: Value) -> Value {
        smp_as(POD, current, patch)
    }

    fn smp_as(def: &str, current: Value, patch: Value) -> Value {
        merge(&current, &patch, def).unwrap()
    }

    fn pod(containers: Value) -> Value {
        json!({"metadata": {"name": "p", "labels": {"a": "1"}}, "spec": {"containers": containers}})
    }

    #[test]
    fn maps_merge_and_null_deletes() {
        let out =
            smp(pod(json!([])), json!({"metadata": {"labels": {"a": null, "b": "2"}, "annotations": {"x": "y"}}}));
        assert_eq!(out["metadata"], json!({"name": "p", "labels": {"b": "2"}, "annotations": {"x": "y"}}));
    }

    #[test]
    fn containers_merge_by_name_new_items_first() {
        let cur = pod(json!([{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]));
        let out = smp(cur.clone(), json!({"spec": {"containers": [{"name": "b", "image": "b:2"}]}}));
        assert_eq!(out["spec"]["containers"], json!([{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:2"}]));
        let out = smp(cur, json!({"spec": {"containers": [{"name": "c", "image": "c:1"}]}}));
        let names: Vec<&str> =
            out["spec"]["containers"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["c", "a", "b"]);
    }

    #[test]
    fn nested_container_lists_use_their_keys() {
        let cur = pod(
            json!([{"name": "a", "env": [{"name": "X", "value": "1"}], "ports": [{"containerPort": 80, "name": "http"}]}]),
        );
        let patch = json!({"spec": {"containers": [{"name": "a", "env": [{"name": "X", "value": "2"}], "ports": [{"containerPort": 80, "protocol": "TCP"}]}]}});
        let out = smp(cur, patch);
        assert_eq!(out["spec"]["containers"][0]["env"], json!([{"name": "X", "value": "2"}]));
        assert_eq!(
            out["spec"]["containers"][0]["ports"],
            json!([{"containerPort": 80, "name": "http", "protocol": "TCP"}])
        );
        let svc = json!({"spec": {"ports": [{"port": 80, "targetPort": 8080}]}});
        let out = smp_as("io.k8s.api.core.v1.Service", svc, json!({"spec": {"ports": [{"port": 80, "targetPort": 9090}]}}));
        assert_eq!(out["spec"]["ports"], json!([{"port": 80, "targetPort": 9090}]));
    }

    #[test]
    fn unknown_lists_are_replaced() {
        let cur = json!({"spec": {"tolerations": [{"key": "a"}], "args": ["x"]}});
        let out = smp(cur, json!({"spec": {"tolerations": [{"key": "b", "value": null}]}}));
        assert_eq!(out["spec"]["tolerations"], json!([{"key": "b"}]));
        assert_eq!(out["spec"]["args"], json!(["x"]));
    }

    #[test]
    fn list_directives() {
        let cur = pod(json!([{"name": "a"}, {"name": "b"}]));
        let out = smp(cur.clone(), json!({"spec": {"containers": [{"name": "a", "$patch": "delete"}]}}));
        assert_eq!(out["spec"]["containers"], json!([{"name": "b"}]));
        let out = smp(cur.clone(), json!({"spec": {"containers": [{"$patch": "replace"}, {"name": "c"}]}}));
        assert_eq!(out["spec"]["containers"], json!([{"name": "c"}]));
        assert!(merge(&cur, &json!({"spec": {"containers": [{"image": "x"}]}}), POD)
            .unwrap_err()
            .contains("merge key: name"));
        assert!(merge(&cur, &json!({"spec": {"containers": [{"name": "a", "$patch": "bogus"}]}}), POD)
            .unwrap_err()
            .starts_with("unknown patch type: bogus"));
    }

    #[test]
    fn map_directives() {
        let cur = json!({"spec": {"selector": {"a": "1", "b": "2"}, "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}});
        const DEPLOYMENT: &str = "io.k8s.api.apps.v1.Deployment";
        let out = smp_as(DEPLOYMENT, cur.clone(), json!({"spec": {"selector": {"$patch": "replace", "c": "3"}}}));
        assert_eq!(out["spec"]["selector"], json!({"c": "3"}));
        let out = smp_as(DEPLOYMENT, cur.clone(), json!({"spec": {"selector": {"$patch": "delete"}}}));
        assert_eq!(out["spec"]["selector"], json!({}));
        let out = smp_as(DEPLOYMENT, cur, json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}));
        assert_eq!(out["spec"]["strategy"], json!({"type": "Recreate"}));
    }

    #[test]
    fn primitive_lists_union_and_delete() {
        let cur = json!({"metadata": {"finalizers": ["a", "b"]}});
        let out = smp(cur.clone(), json!({"metadata": {"finalizers": ["b", "c"]}}));
        assert_eq!(out["metadata"]["finalizers"], json!(["a", "b", "c"]));
        let out = smp(cur, json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}));
        assert_eq!(out["metadata"]["finalizers"], json!(["b"]));
    }

    #[test]
    fn set_element_order() {
        let cur = pod(json!([{"name": "a"}, {"name": "b"}, {"name": "sidecar"}]));
        let patch = json!({"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}], "containers": [{"name": "a", "image": "x"}]}});
        let out = smp(cur.clone(), patch);
        assert_eq!(out["spec"]["containers"], json!([{"name": "b"}, {"name": "a", "image": "x"}, {"name": "sidecar"}]));
        let out = smp(
            cur,
            json!({"spec": {"$setElementOrder/containers": [{"name": "sidecar"}, {"name": "a"}, {"name": "b"}]}}),
        );
        assert_eq!(out["spec"]["containers"], json!([{"name": "sidecar"}, {"name": "a"}, {"name": "b"}]));
    }

    proptest::proptest! {
        /// Arbitrary objects and patches, directives among their keys, merge or are refused
        /// with a message, never a panic.
        #[test]
        fn arbitrary_patches_never_panic(current in crate::test_values::json_value(), patch in crate::test_values::json_value()) {
            let _ = merge(&current, &patch, POD);
            let _ = merge(&current, &patch, "io.k8s.api.apps.v1.Deployment");
        }
    }

    #[test]
    fn new_values_are_cleaned() {
        let out = smp(
            json!({}),
            json!({"metadata": {"labels": {"a": "1", "b": null}}, "spec": {"containers": [{"name": "a", "$patch": "delete"}, {"name": "b"}]}}),
        );
        assert_eq!(out, json!({"metadata": {"labels": {"a": "1"}}, "spec": {"containers": [{"name": "b"}]}}));
        assert!(merge(&json!({}), &json!([1]), POD).is_err());
    }
}
