//! CEL types for the static check of expressions ([`super::check`]): the primitive types, lists,
//! maps, `dyn`, and objects whose fields an OpenAPI schema declares, read as Kubernetes reads a
//! schema into CEL types (integers are `int`, `date-time` strings are timestamps, int-or-string
//! and fields that keep unknown fields are `dyn`, a map is an object with `additionalProperties`).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde_json::{json, Map, Value};

/// A CEL type as the checker knows it.
#[derive(Clone, Debug, PartialEq)]
pub enum Ty {
    /// Known only when evaluated: every operation is allowed.
    Dyn,
    Null,
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Duration,
    Timestamp,
    /// A type value (`int`, `type(x)`).
    Type,
    List(Box<Ty>),
    Map(Box<Ty>, Box<Ty>),
    Object(Obj),
}

/// Where an object's definitions (`$ref` targets) are looked up.
pub type Definitions = Arc<dyn Fn(&str) -> Option<Value> + Send + Sync>;

/// An object type: its fields from a schema node, or given one by one (`variables`).
#[derive(Clone)]
pub enum Obj {
    Schema { name: String, node: Arc<Value>, defs: Definitions },
    Fields { name: String, fields: Arc<BTreeMap<String, Ty>> },
}

impl fmt::Debug for Obj {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl PartialEq for Obj {
    fn eq(&self, other: &Obj) -> bool {
        self.name() == other.name()
    }
}

impl Obj {
    pub fn name(&self) -> &str {
        match self {
            Obj::Schema { name, .. } | Obj::Fields { name, .. } => name,
        }
    }

    /// The type of field `field`, or `None` when the object has no such field.
    pub fn field(&self, field: &str) -> Option<Ty> {
        match self {
            Obj::Fields { fields, .. } => fields.get(field).cloned(),
            Obj::Schema { name, node, defs } => {
                let property = node.get("properties")?.get(field)?;
                Some(of_schema(&format!("{name}.{field}"), property, defs, false))
            }
        }
    }
}

impl fmt::Display for Ty {
    /// As cel-go prints a type in its messages.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Dyn => f.write_str("dyn"),
            Ty::Null => f.write_str("null_type"),
            Ty::Bool => f.write_str("bool"),
            Ty::Int => f.write_str("int"),
            Ty::Uint => f.write_str("uint"),
            Ty::Double => f.write_str("double"),
            Ty::String => f.write_str("string"),
            Ty::Bytes => f.write_str("bytes"),
            Ty::Duration => f.write_str("google.protobuf.Duration"),
            Ty::Timestamp => f.write_str("google.protobuf.Timestamp"),
            Ty::Type => f.write_str("type"),
            Ty::List(t) => write!(f, "list({t})"),
            Ty::Map(k, v) => write!(f, "map({k}, {v})"),
            Ty::Object(o) => f.write_str(o.name()),
        }
    }
}

impl Ty {
    /// Whether a value of this type may be where `want` is expected: equal types, or either
    /// side `dyn` (or null, which the checker does not hold against any type), element by
    /// element for lists and maps; objects are not compared.
    pub fn fits(&self, want: &Ty) -> bool {
        match (self, want) {
            (Ty::Dyn | Ty::Null, _) | (_, Ty::Dyn | Ty::Null) => true,
            (Ty::List(a), Ty::List(b)) => a.fits(b),
            (Ty::Map(ka, va), Ty::Map(kb, vb)) => ka.fits(kb) && va.fits(vb),
            (Ty::Object(_), Ty::Object(_)) => true,
            (a, b) => a == b,
        }
    }

    /// The more precise of two types that fit each other (`list(dyn)` and `list(int)` give
    /// `list(int)`).
    pub fn join(&self, other: &Ty) -> Ty {
        match (self, other) {
            (Ty::Dyn | Ty::Null, t) | (t, Ty::Dyn | Ty::Null) => t.clone(),
            (Ty::List(a), Ty::List(b)) => Ty::List(Box::new(a.join(b))),
            (Ty::Map(ka, va), Ty::Map(kb, vb)) => Ty::Map(Box::new(ka.join(kb)), Box::new(va.join(vb))),
            (a, _) => a.clone(),
        }
    }

    /// A scalar: a type with no fields, items or entries.
    pub fn is_scalar(&self) -> bool {
        matches!(self, Ty::Bool | Ty::Int | Ty::Uint | Ty::Double | Ty::String | Ty::Bytes | Ty::Duration | Ty::Timestamp)
    }
}

/// The definition a `$ref` (or an `allOf` of one) names.
fn referenced<'a>(node: &'a Value) -> Option<&'a str> {
    let name = |v: &'a Value| v.get("$ref").and_then(Value::as_str).and_then(|r| r.rsplit('/').next());
    name(node).or_else(|| node.get("allOf")?.as_array()?.iter().find_map(name))
}

/// The type of the values a schema node allows. `root` marks the root of a resource, which
/// always has `apiVersion`, `kind` and `metadata`.
pub fn of_schema(name: &str, node: &Value, defs: &Definitions, root: bool) -> Ty {
    if let Some(def) = referenced(node) {
        return match defs(def) {
            Some(resolved) => of_schema(name, &resolved, defs, root),
            None => Ty::Dyn,
        };
    }
    if node.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) || node.get("anyOf").is_some() || node.get("oneOf").is_some() {
        return Ty::Dyn;
    }
    let properties = node.get("properties").and_then(Value::as_object);
    if properties.is_none() && node.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
        return Ty::Dyn;
    }
    let embedded = root || node.get("x-kubernetes-embedded-resource") == Some(&Value::Bool(true));
    match node.get("type").and_then(Value::as_str) {
        Some("boolean") => Ty::Bool,
        Some("integer") => Ty::Int,
        Some("number") => Ty::Double,
        Some("string") => match node.get("format").and_then(Value::as_str) {
            Some("byte") => Ty::Bytes,
            Some("duration") => Ty::Duration,
            Some("date" | "date-time") => Ty::Timestamp,
            _ => Ty::String,
        },
        Some("array") => Ty::List(Box::new(node.get("items").map_or(Ty::Dyn, |i| of_schema(&format!("{name}.@idx"), i, defs, false)))),
        _ if properties.is_some() || embedded => {
            let mut node = node.clone();
            if embedded {
                with_type_and_object_meta(&mut node);
            }
            Ty::Object(Obj::Schema { name: name.to_string(), node: Arc::new(node), defs: defs.clone() })
        }
        _ => match node.get("additionalProperties") {
            Some(Value::Object(values)) => {
                Ty::Map(Box::new(Ty::String), Box::new(of_schema(&format!("{name}.@elem"), &Value::Object(values.clone()), defs, false)))
            }
            Some(Value::Bool(true)) => Ty::Map(Box::new(Ty::String), Box::new(Ty::Dyn)),
            // No fields declared: whatever the object holds is known when evaluated.
            _ => Ty::Dyn,
        },
    }
}

/// `apiVersion`, `kind`, and `metadata` with at least `name` and `generateName`, where the
/// schema does not declare them, as every resource has them.
fn with_type_and_object_meta(node: &mut Value) {
    if !node.get("properties").is_some_and(Value::is_object) {
        node["properties"] = Value::Object(Map::new());
    }
    let properties = node["properties"].as_object_mut().expect("made an object above");
    for field in ["apiVersion", "kind"] {
        properties.entry(field).or_insert_with(|| json!({"type": "string"}));
    }
    properties.entry("metadata").or_insert_with(|| json!({"type": "object", "properties": {"name": {"type": "string"}, "generateName": {"type": "string"}}}));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_read_as_kubernetes_reads_them() {
        let defs: Definitions = Arc::new(|name: &str| (name == "Spec").then(|| json!({"type": "object", "properties": {"replicas": {"type": "integer"}}})));
        let schema = json!({"type": "object", "properties": {
            "spec": {"$ref": "#/definitions/Spec"},
            "when": {"type": "string", "format": "date-time"},
            "port": {"x-kubernetes-int-or-string": true},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "items": {"type": "array", "items": {"type": "number"}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        }});
        let Ty::Object(root) = of_schema("Widget", &schema, &defs, true) else { panic!("an object") };
        let Some(Ty::Object(spec)) = root.field("spec") else { panic!("spec is an object") };
        assert_eq!(spec.field("replicas"), Some(Ty::Int));
        assert_eq!(spec.field("maxRetries"), None);
        assert_eq!(root.field("when"), Some(Ty::Timestamp));
        assert_eq!(root.field("port"), Some(Ty::Dyn));
        assert_eq!(root.field("labels").unwrap().to_string(), "map(string, string)");
        assert_eq!(root.field("items").unwrap().to_string(), "list(double)");
        assert_eq!(root.field("free"), Some(Ty::Dyn));
        assert_eq!(root.field("kind"), Some(Ty::String));
        let Some(Ty::Object(meta)) = root.field("metadata") else { panic!("metadata is an object") };
        assert_eq!(meta.field("generateName"), Some(Ty::String));
        assert!(Ty::List(Box::new(Ty::Dyn)).fits(&Ty::List(Box::new(Ty::Int))));
        assert!(!Ty::Int.fits(&Ty::String));
        assert_eq!(Ty::List(Box::new(Ty::Dyn)).join(&Ty::List(Box::new(Ty::Int))), Ty::List(Box::new(Ty::Int)));
    }
}
