//! The declarations CEL sees for a schema's nodes: kinds, the most elements each may hold and
//! the smallest serialized size, the sizes a definition is estimated for.

use std::collections::BTreeMap;

use serde_json::Value;

use super::size::{Seg, Size, Sizes};
use super::MAX_STRING;
use crate::crd::schema::Structural;

/// A schema node as CEL declares it: its kind, the most elements (characters, items,
/// properties) it may have, and its smallest serialized size.
#[derive(Debug)]
pub struct Decl {
    pub(super) kind: DeclKind,
    pub(super) max_elements: u64,
    pub(super) min_size: u64,
}

#[derive(Debug)]
pub(super) enum DeclKind {
    Object(BTreeMap<String, Decl>),
    List(Box<Decl>),
    Map(Box<Decl>),
    Scalar(Scalar),
}

#[derive(Debug, Clone, Copy)]
pub(super) enum Scalar {
    Dyn,
    Bool,
    Int,
    Double,
    String,
    Bytes,
    Duration,
    Timestamp,
}

/// The keys of a map: strings CEL declares with no size.
static MAP_KEY: Decl = Decl { kind: DeclKind::Scalar(Scalar::String), max_elements: 0, min_size: 2 };

impl Decl {
    /// The declaration of `s`, or none when CEL cannot see it (no type); `resource`: the root of
    /// a custom resource or of an embedded resource, which also has `apiVersion`, `kind` and
    /// `metadata.name`/`generateName`.
    pub fn of(s: &Structural, resource: bool) -> Option<Decl> {
        if s.int_or_string {
            return Some(Decl::scalar(Scalar::Dyn, s.max_length.map_or(MAX_STRING, |m| m.saturating_mul(4)), 1));
        }
        match s.type_.as_str() {
            "array" => Decl::list(s),
            "object" => match s.additional() {
                Some(values) => Decl::map(s, values),
                None => Some(Decl::object(s, resource)),
            },
            "string" => Some(Decl::string(s)),
            "boolean" => Some(Decl::scalar(Scalar::Bool, 0, 4)),
            "number" => Some(Decl::scalar(Scalar::Double, 0, 1)),
            "integer" => Some(Decl::scalar(Scalar::Int, 0, 1)),
            _ => None,
        }
    }

    fn scalar(scalar: Scalar, max_elements: u64, min_size: u64) -> Decl {
        Decl { kind: DeclKind::Scalar(scalar), max_elements, min_size }
    }

    fn list(s: &Structural) -> Option<Decl> {
        let items = s.items.as_deref()?;
        let elem = Decl::of(items, items.embedded_resource)?;
        let max = s.max_items.unwrap_or(MAX_STRING / elem.min_size.saturating_add(1));
        Some(Decl { kind: DeclKind::List(Box::new(elem)), max_elements: max, min_size: 2 })
    }

    fn map(s: &Structural, values: &Structural) -> Option<Decl> {
        let elem = Decl::of(values, values.embedded_resource)?;
        // A key of at least `""`, a colon and a comma.
        let max = s.max_properties.unwrap_or(MAX_STRING / elem.min_size.saturating_add(6));
        Some(Decl { kind: DeclKind::Map(Box::new(elem)), max_elements: max, min_size: 2 })
    }

    fn object(s: &Structural, resource: bool) -> Decl {
        let mut fields = BTreeMap::new();
        let mut min_size = 2;
        for (name, prop) in &s.properties {
            let Some(decl) = Decl::of(prop, prop.embedded_resource) else { continue };
            if s.required.contains(name) && prop.default.is_none() {
                min_size = (name.len() as u64).saturating_add(decl.min_size).saturating_add(4).saturating_add(min_size);
            }
            fields.insert(name.clone(), decl);
        }
        if resource {
            let string = || Decl::scalar(Scalar::String, MAX_STRING, 2);
            fields.insert("apiVersion".into(), string());
            fields.insert("kind".into(), string());
            let meta = BTreeMap::from([("name".to_string(), string()), ("generateName".to_string(), string())]);
            fields.insert("metadata".into(), Decl { kind: DeclKind::Object(meta), max_elements: 0, min_size: 2 });
        }
        Decl { kind: DeclKind::Object(fields), max_elements: 0, min_size }
    }

    fn string(s: &Structural) -> Decl {
        match s.format.as_str() {
            "byte" => Decl::scalar(Scalar::Bytes, s.max_length.unwrap_or(MAX_STRING), 2),
            "duration" => Decl::scalar(Scalar::Duration, 32, 3),
            "date" => Decl::scalar(Scalar::Timestamp, 12, 12),
            "date-time" => Decl::scalar(Scalar::Timestamp, 32, 21),
            _ => {
                let longest_enum =
                    || s.enum_.as_ref().filter(|e| !e.is_empty()).map(|e| e.iter().filter_map(Value::as_str).map(|v| v.len() as u64).max().unwrap_or(0));
                let max = s.max_length.map(|m| m.saturating_mul(4)).or_else(longest_enum).unwrap_or(MAX_STRING);
                Decl::scalar(Scalar::String, max, 2)
            }
        }
    }

    /// The declaration at `segs` below this one.
    fn at(&self, segs: &[Seg]) -> Option<&Decl> {
        segs.iter().try_fold(self, |d, seg| match (seg, &d.kind) {
            (Seg::Items | Seg::Values, DeclKind::List(elem) | DeclKind::Map(elem)) => Some(elem.as_ref()),
            (Seg::Keys, DeclKind::Map(_)) => Some(&MAP_KEY),
            (Seg::Field(name), DeclKind::Object(fields)) => fields.get(*name),
            _ => None,
        })
    }
}

/// The sizes the schema allows. As Kubernetes does, the path's first step (its variable) is
/// skipped: every path starts at the rule's node.
pub(super) struct Declared<'a>(pub(super) Option<&'a Decl>);

impl<'a> Sizes<'a> for Declared<'a> {
    fn size(&self, path: &[Seg<'a>]) -> Option<Size> {
        let (_, rest) = path.split_first()?;
        let decl = self.0?.at(rest)?;
        Some(Size { min: 0, max: decl.max_elements })
    }
}
