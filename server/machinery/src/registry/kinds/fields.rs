//! Small helpers the kinds' strategies share: setting a default, the messages of enumerations
//! and immutable fields, and table columns' common parts.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::registry::Column;

/// Sets `obj[key]` when absent or null.
pub(crate) fn set(obj: &mut Value, key: &str, value: Value) {
    if obj.get(key).is_none_or(Value::is_null) {
        obj[key] = value;
    }
}

/// A field that, when set, must hold one of `allowed` (listed in Kubernetes' order).
pub(crate) fn one_of(value: &Value, field: &str, allowed: &[&str], out: &mut Vec<Cause>) {
    if let Some(v) = value.as_str().filter(|v| !allowed.contains(v)) {
        let list: Vec<String> = allowed.iter().map(|a| format!("\"{a}\"")).collect();
        out.push(Cause::new("FieldValueNotSupported", field, format!("Unsupported value: \"{v}\": supported values: {}", list.join(", "))));
    }
}

pub(crate) fn unsupported(field: String, value: &str, supported: &[&str]) -> Cause {
    let list: Vec<String> = supported.iter().map(|s| format!("\"{s}\"")).collect();
    Cause::new("FieldValueNotSupported", field, format!("Unsupported value: \"{value}\": supported values: {}", list.join(", ")))
}

/// A list as Go's `%v` prints a string slice: `[a b]`.
pub(crate) fn go_list(v: &Value) -> String {
    let items: Vec<&str> = v.as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    format!("[{}]", items.join(" "))
}

/// `field: Invalid value: ...: field is immutable` unless `old` and `new` agree at `pointer`.
pub(crate) fn unchanged(old: &Value, new: &Value, pointer: &str, out: &mut Vec<Cause>) {
    let (was, now) = (old.pointer(pointer), new.pointer(pointer));
    if was != now {
        let field = pointer.trim_start_matches('/').replace('/', ".");
        let shown = now.map(Value::to_string).unwrap_or_else(|| "null".into());
        out.push(Cause::invalid(field, shown.trim_matches('"'), "field is immutable"));
    }
}

pub(crate) const fn col(name: &'static str, type_: &'static str, priority: u32) -> Column {
    Column { name, type_, format: "", description: "", priority }
}

pub(crate) const AGE: Column = col("Age", "date", 0);

pub(crate) fn age(obj: &Value) -> Value {
    obj["metadata"]["creationTimestamp"].clone()
}

pub(crate) fn int(v: &Value) -> i64 {
    v.as_i64().unwrap_or(0)
}

/// How many entries a map holds.
pub(crate) fn keys(v: &Value) -> usize {
    v.as_object().map_or(0, |m| m.len())
}

/// How many items a list holds.
pub(crate) fn items(v: &Value) -> usize {
    v.as_array().map_or(0, Vec::len)
}

pub(crate) fn text_or_none(v: &Value) -> Value {
    json!(v.as_str().filter(|s| !s.is_empty()).unwrap_or("<none>"))
}

/// A label selector as kubectl prints it: `k=v` for each label, `k in (a,b)` and the like for
/// each expression, comma-separated; `<none>` when empty.
pub(crate) fn selector(sel: &Value) -> String {
    let mut parts: Vec<String> = sel["matchLabels"].as_object().into_iter().flatten().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default())).collect();
    for e in sel["matchExpressions"].as_array().into_iter().flatten() {
        let key = e["key"].as_str().unwrap_or_default();
        let values: Vec<&str> = e["values"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        parts.push(match e["operator"].as_str().unwrap_or_default() {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            other => format!("{key} {other} ({})", values.join(",")),
        });
    }
    if parts.is_empty() {
        "<none>".into()
    } else {
        parts.join(",")
    }
}

/// A map of labels as kubectl prints it (`k=v,...`), `<none>` when empty.
pub(crate) fn labels(map: &Value) -> String {
    let parts: Vec<String> = map.as_object().into_iter().flatten().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default())).collect();
    if parts.is_empty() {
        "<none>".into()
    } else {
        parts.join(",")
    }
}

/// The names (or images) of a pod spec's containers, comma-separated.
pub(crate) fn containers(spec: &Value, field: &str) -> Value {
    let names: Vec<&str> = spec["containers"].as_array().into_iter().flatten().filter_map(|c| c[field].as_str()).collect();
    json!(names.join(","))
}
