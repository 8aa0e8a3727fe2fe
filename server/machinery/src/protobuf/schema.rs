//! The Protobuf schema of the built-in kinds: for every message, its fields by number with their
//! JSON names and wire types. Parsed once from `schema.txt`, which is generated from the
//! `k8s-pb` crate (see `generate.rs`); one line per message:
//!
//! ```text
//! api.apps.v1.DeploymentSpec<TAB>1:replicas:i32<TAB>2:selector:@apimachinery.pkg.apis.meta.v1.LabelSelector ...
//! ```
//!
//! A type is `s` (string), `i32`, `i64`, `bool`, `f64`, `bytes` or `@Message`; `[]` before it
//! marks a repeated field and `{}` a map from string keys. A field named `..` is a Go struct
//! embedded in its parent, whose fields appear in the parent's JSON.

use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

/// The generated schema text.
pub const TEXT: &str = include_str!("schema.txt");

/// A scalar or message type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    String,
    Int32,
    Int64,
    Bool,
    Double,
    Bytes,
    /// A message, by its name without the `io.k8s.` prefix.
    Message(&'static str),
}

/// How many values a field holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Label {
    Optional,
    Repeated,
    /// `map<string, T>`, encoded as repeated entries with key 1 and value 2.
    Map,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    pub json: &'static str,
    pub ty: Type,
    pub label: Label,
}

#[derive(Debug, Default)]
pub struct Message {
    /// By field number, so that encoding writes them in order.
    pub fields: BTreeMap<u32, Field>,
}

/// Every message by name (without the `io.k8s.` prefix).
pub fn messages() -> &'static HashMap<&'static str, Message> {
    static MESSAGES: OnceLock<HashMap<&'static str, Message>> = OnceLock::new();
    MESSAGES.get_or_init(|| parse(TEXT).unwrap_or_else(|line| panic!("protobuf schema.txt: bad line {line:?}")))
}

/// Parses the schema text; a malformed line is returned as the error.
pub fn parse(text: &'static str) -> Result<HashMap<&'static str, Message>, &'static str> {
    let mut out = HashMap::new();
    for line in text.lines().filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let mut parts = line.split('\t');
        let name = parts.next().ok_or(line)?;
        let mut message = Message::default();
        for field in parts {
            let (tag, rest) = field.split_once(':').ok_or(line)?;
            let (json, ty) = rest.split_once(':').ok_or(line)?;
            let (label, ty) = if let Some(t) = ty.strip_prefix("[]") {
                (Label::Repeated, t)
            } else if let Some(t) = ty.strip_prefix("{}") {
                (Label::Map, t)
            } else {
                (Label::Optional, ty)
            };
            let ty = match ty {
                "s" => Type::String,
                "i32" => Type::Int32,
                "i64" => Type::Int64,
                "bool" => Type::Bool,
                "f64" => Type::Double,
                "bytes" => Type::Bytes,
                m => Type::Message(m.strip_prefix('@').ok_or(line)?),
            };
            message.fields.insert(tag.parse().map_err(|_| line)?, Field { json, ty, label });
        }
        out.insert(name, message);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_referenced_message_is_defined() {
        let all = messages();
        assert!(all.contains_key("api.apps.v1.Deployment"));
        for (name, m) in all {
            for f in m.fields.values() {
                if let Type::Message(t) = f.ty {
                    // `ExtraValue` is decoded by name (decode.rs), without a schema.
                    assert!(all.contains_key(t) || t.ends_with(".ExtraValue"), "{name}.{} refers to undefined {t}", f.json);
                }
            }
        }
    }

    #[test]
    fn parses_labels_and_types() {
        let m = parse("# c\nx.A\t1:name:s\t2:items:[]@x.B\t3:data:{}bytes\nx.B\t1:n:i64\n").unwrap();
        let a = &m["x.A"].fields;
        assert_eq!(a[&1], Field { json: "name", ty: Type::String, label: Label::Optional });
        assert_eq!(a[&2], Field { json: "items", ty: Type::Message("x.B"), label: Label::Repeated });
        assert_eq!(a[&3], Field { json: "data", ty: Type::Bytes, label: Label::Map });
        assert!(parse("x.A\t1-name-s").is_err());
    }
}
