//! A value of one of Kubernetes' internal types as Go's `encoding/json` prints it in a validation
//! message: every field under its Go name, in declaration order, with its zero value when unset
//! (`"Selector":null`, `"Hostname":""`), maps by sorted key, quantities in canonical form, and
//! Go's escaping of `<`, `>` and `&`. The shapes are data (`go_types.json`, written by
//! `tools/go-types.py` from Kubernetes' struct declarations).

use std::collections::HashMap;
use std::sync::LazyLock;

use serde::Deserialize;
use serde_json::Value;

use crate::expr::amount::Amount;

/// One field of a struct: a named field read from the served JSON's `key` (or from the enclosing
/// struct's, `parent`, where conversion moves it), or an embedded struct whose fields are printed
/// inline (read from `key` when the served type nests them).
#[derive(Deserialize)]
struct Field {
    #[serde(default)]
    name: String,
    #[serde(default)]
    key: String,
    #[serde(default, rename = "type")]
    ty: String,
    #[serde(default)]
    embedded: Option<String>,
    /// JSON tag options of the apimachinery types: `omitempty`, `omitzero`.
    #[serde(default)]
    omit: Vec<String>,
    #[serde(default)]
    parent: bool,
}

static TYPES: LazyLock<HashMap<String, Vec<Field>>> =
    LazyLock::new(|| serde_json::from_str(include_str!("go_types.json")).expect("go_types.json is valid"));

/// A printed value: a scalar already in JSON, a list, or fields in order.
#[derive(PartialEq)]
enum Node {
    Scalar(String),
    List(Vec<Node>),
    Object(Vec<(String, Node)>),
}

/// `v`, the served JSON of a `struct_name` (`core.PodSpec`), as `json.Marshal` prints it.
pub(crate) fn compact(v: &Value, struct_name: &str) -> String {
    let mut out = String::new();
    write(&node(v, &Value::Null, &format!("struct {struct_name}")), false, 0, &mut out);
    out
}

/// `v` as `json.MarshalIndent(v, "", " ")` prints it.
pub(crate) fn indented(v: &Value, struct_name: &str) -> String {
    let mut out = String::new();
    write(&node(v, &Value::Null, &format!("struct {struct_name}")), true, 0, &mut out);
    out
}

fn scalar(s: impl Into<String>) -> Node {
    Node::Scalar(s.into())
}

fn null() -> Node {
    scalar("null")
}

/// `v` printed as type `ty` of the grammar in `go_types.json`; `parent` is the JSON of the
/// enclosing struct, for fields conversion moves.
fn node(v: &Value, parent: &Value, ty: &str) -> Node {
    if let Some(inner) = ty.strip_prefix('*') {
        return if v.is_null() { null() } else { node(v, parent, inner) };
    }
    if let Some(inner) = ty.strip_prefix("[]") {
        return match v.as_array() {
            Some(items) => Node::List(items.iter().map(|i| node(i, &Value::Null, inner)).collect()),
            None => null(),
        };
    }
    if let Some(inner) = ty.strip_prefix("map ") {
        return match v.as_object() {
            Some(map) => Node::Object(map.iter().map(|(k, i)| (k.clone(), node(i, &Value::Null, inner))).collect()),
            None => null(),
        };
    }
    if let Some(name) = ty.strip_prefix("struct ") {
        let mut fields = Vec::new();
        push_fields(v, parent, name, &mut fields);
        return Node::Object(fields);
    }
    match ty {
        "string" | "bytes" | "time" => match v {
            Value::String(s) => scalar(go_string(s)),
            _ if ty == "string" => scalar("\"\""),
            _ => null(),
        },
        "int" | "float" => scalar(if v.is_number() { v.to_string() } else { "0".into() }),
        "bool" => scalar(if v.as_bool() == Some(true) { "true" } else { "false" }),
        "quantity" => {
            let text = v.as_str().unwrap_or("0");
            scalar(go_string(&Amount::parse(text).map(|a| a.to_string()).unwrap_or_else(|_| text.to_string())))
        }
        "duration" => scalar(go_string(v.as_str().unwrap_or("0s"))),
        "intorstr" => match v {
            Value::String(s) => scalar(go_string(s)),
            Value::Number(n) => scalar(n.to_string()),
            _ => scalar("0"),
        },
        "raw" => raw(v),
        _ => null(),
    }
}

/// A RawExtension or FieldsV1: the JSON as it is.
fn raw(v: &Value) -> Node {
    match v {
        Value::Object(map) => Node::Object(map.iter().map(|(k, i)| (k.clone(), raw(i))).collect()),
        Value::Array(items) => Node::List(items.iter().map(raw).collect()),
        Value::String(s) => scalar(go_string(s)),
        other => scalar(other.to_string()),
    }
}

/// The fields of struct `name` read from `v`, embedded structs inline (from their own key when
/// the served type nests them, as a template's `metadata`); `parent` is the enclosing struct's JSON.
fn push_fields(v: &Value, parent: &Value, name: &str, out: &mut Vec<(String, Node)>) {
    let Some(fields) = TYPES.get(name) else { return };
    for f in fields {
        if let Some(embedded) = &f.embedded {
            let inner = if f.key.is_empty() { v } else { v.get(&f.key).unwrap_or(&Value::Null) };
            push_fields(inner, parent, embedded.trim_start_matches("struct "), out);
            continue;
        }
        let source = if f.parent { parent } else { v };
        let value = source.get(&f.key).unwrap_or(&Value::Null);
        let printed = node(value, v, &f.ty);
        let omitted = (f.omit.iter().any(|o| o == "omitempty") && empty(value, &f.ty))
            || (f.omit.iter().any(|o| o == "omitzero") && printed == node(&Value::Null, &Value::Null, &f.ty));
        if !omitted {
            out.push((f.name.clone(), printed));
        }
    }
}

/// Go's `omitempty`: false, 0, "", a nil pointer, an empty slice or map.
fn empty(v: &Value, ty: &str) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty() && !ty.starts_with('*'),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty() && ty.starts_with("map "),
    }
}

/// A JSON string as Go writes it: HTML characters and the line and paragraph separators escaped.
pub(crate) fn go_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => out.push_str(&format!("\\u{:04x}", c as u32)),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Writes `n` as `json.Marshal` (`indented` false) or `json.MarshalIndent(v, "", " ")` does: one
/// space per level, empty lists and objects staying `[]` and `{}`.
fn write(n: &Node, indented: bool, depth: usize, out: &mut String) {
    let items: Vec<(Option<&String>, &Node)> = match n {
        Node::Scalar(s) => {
            out.push_str(s);
            return;
        }
        Node::List(items) => items.iter().map(|i| (None, i)).collect(),
        Node::Object(fields) => fields.iter().map(|(k, i)| (Some(k), i)).collect(),
    };
    let (open, close) = if matches!(n, Node::List(_)) { ('[', ']') } else { ('{', '}') };
    out.push(open);
    for (i, (key, item)) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        if indented {
            out.push('\n');
            out.push_str(&" ".repeat(depth + 1));
        }
        if let Some(k) = key {
            out.push_str(&go_string(k));
            out.push_str(if indented { ": " } else { ":" });
        }
        write(item, indented, depth + 1, out);
    }
    if indented && !items.is_empty() {
        out.push('\n');
        out.push_str(&" ".repeat(depth));
    }
    out.push(close);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unset_fields_print_their_zero_values_in_declaration_order() {
        let spec = json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1.5Gi"}}});
        let printed = compact(&spec, "core.PersistentVolumeClaimSpec");
        assert!(printed.starts_with(r#"{"AccessModes":["ReadWriteOnce"],"Selector":null,"Resources":{"Limits":null,"Requests":{"storage":"1536Mi"}},"VolumeName":"""#), "{printed}");
    }

    #[test]
    fn a_pod_template_prints_its_metadata_by_json_tag_and_the_host_fields_in_the_security_context() {
        let template = json!({"metadata": {"labels": {"app": "a<b"}, "creationTimestamp": null}, "spec": {"hostNetwork": true, "securityContext": {}}});
        let printed = compact(&template, "core.PodTemplateSpec");
        assert!(printed.starts_with(r#"{"labels":{"app":"a\u003cb"},"Spec":{"Volumes":null,"#), "{printed}");
        assert!(printed.contains(r#""SecurityContext":{"HostNetwork":true,"HostPID":false,"#), "{printed}");
    }

    #[test]
    fn indented_as_marshal_indent() {
        let printed = indented(&json!({"path": "/mnt"}), "core.HostPathVolumeSource");
        assert_eq!(printed, "{\n \"Path\": \"/mnt\",\n \"Type\": null\n}");
    }
}
