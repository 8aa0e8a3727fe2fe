//! What an update did to an object's fields, as Kubernetes compares objects, found by walking
//! the old and new objects together and only where they differ: the fields it set (`gained`:
//! every path of the new object's field tree that the old object lacks, maps and lists
//! included, and the members whose value differs; a list item both have gains only the fields
//! that changed in it) and the fields it removed (`lost`: every path of the old object's field
//! tree that the new one's lacks). Subtrees equal in both are compared, never walked into, so an
//! update that changes one value of a large object builds the few paths around that value rather
//! than both objects' whole field sets. What the walk cannot pair item by item (a set list, a map
//! list whose items repeat a key, a value that changed shape) is settled by the definitions on
//! that subtree.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::fieldset::FieldSet;
use super::walk::{self, field_of, key_element, walk_map, walk_value};
use crate::openapi::facts::{Field, ListType};

/// The fields an update gained and lost.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Diff {
    pub gained: FieldSet,
    pub lost: FieldSet,
}

/// The fields `new` (of definition `def`) gained and lost against `old` (a value that is not an
/// object has no fields, as an empty one).
pub fn diff(old: &Value, new: &Value, def: Option<&str>) -> Diff {
    let (mut d, empty) = (Diff::default(), Map::new());
    maps(old.as_object().unwrap_or(&empty), new.as_object().unwrap_or(&empty), def, &mut d);
    d
}

/// How the field-set walk sees a value: walked into as a map, walked into item by item as a
/// map list (with its keys), or anything else.
enum Shape<'a> {
    Map(&'a Map<String, Value>),
    MapList(&'a [Value], &'a [String]),
    Other,
}

fn shape<'a>(v: &'a Value, field: &'a Field) -> Shape<'a> {
    match (v, &field.list) {
        (Value::Object(m), _) if !field.atomic && !m.is_empty() => Shape::Map(m),
        (Value::Array(items), Some(ListType::Map(keys))) if !items.is_empty() && items.iter().all(Value::is_object) => Shape::MapList(items, keys),
        _ => Shape::Other,
    }
}

/// Adds `d`'s sets under path element `e` of `out`, when not empty.
fn nest(out: &mut Diff, e: String, d: Diff) {
    if d.gained.is_empty() && d.lost.is_empty() {
        return;
    }
    if !d.gained.is_empty() {
        out.gained.children.insert(e.clone(), d.gained);
    }
    if !d.lost.is_empty() {
        out.lost.children.insert(e, d.lost);
    }
}

fn maps(o: &Map<String, Value>, n: &Map<String, Value>, def: Option<&str>, out: &mut Diff) {
    for (k, nv) in n {
        let ov = o.get(k);
        if ov == Some(nv) {
            continue;
        }
        let field = field_of(def, k);
        let mut d = Diff::default();
        match ov {
            Some(ov) => value(ov, nv, &field, &mut d),
            None => d.gained = every_path(fields_of(nv, &field)),
        }
        nest(out, format!("f:{k}"), d);
    }
    for (k, ov) in o {
        if !n.contains_key(k) {
            let d = Diff { lost: every_path(fields_of(ov, &field_of(def, k))), ..Default::default() };
            nest(out, format!("f:{k}"), d);
        }
    }
}

/// `ov` and `nv` differ.
fn value(ov: &Value, nv: &Value, field: &Field, out: &mut Diff) {
    match (shape(ov, field), shape(nv, field)) {
        (Shape::Map(o), Shape::Map(n)) => maps(o, n, field.def.as_deref(), out),
        (Shape::MapList(o, keys), Shape::MapList(n, _)) => match (by_key(o, keys), by_key(n, keys)) {
            (Some(o), Some(n)) => items(&o, &n, field.def.as_deref(), out),
            _ => by_definition(ov, nv, field, out),
        },
        _ => by_definition(ov, nv, field, out),
    }
}

/// A map list's items by their `k:` element; `None` when two items share one.
fn by_key<'a>(items: &'a [Value], keys: &[String]) -> Option<HashMap<String, &'a Map<String, Value>>> {
    let mut out = HashMap::with_capacity(items.len());
    for item in items {
        if out.insert(key_element(item, keys), item.as_object()?).is_some() {
            return None;
        }
    }
    Some(out)
}

fn items(o: &HashMap<String, &Map<String, Value>>, n: &HashMap<String, &Map<String, Value>>, def: Option<&str>, out: &mut Diff) {
    for (e, ni) in n {
        let mut d = Diff::default();
        match o.get(e) {
            Some(oi) if oi == ni => continue,
            Some(oi) => maps(oi, ni, def, &mut d),
            None => {
                walk_map(ni, def, &mut d.gained);
                d.gained = every_path(d.gained);
            }
        }
        nest(out, e.clone(), d);
    }
    for (e, oi) in o {
        if !n.contains_key(e) {
            let mut d = Diff::default();
            walk_map(oi, def, &mut d.lost);
            d.lost = every_path(d.lost);
            nest(out, e.clone(), d);
        }
    }
}

/// The definitions (the module's header), on one subtree: what `nv`'s field tree gained against
/// `ov`'s and lost.
fn by_definition(ov: &Value, nv: &Value, field: &Field, out: &mut Diff) {
    let new_set = fields_of(nv, field);
    changed(Some(ov), nv, &new_set, false, &mut out.gained);
    out.lost = every_path(fields_of(ov, field)).difference(&every_path(new_set));
}

/// The field tree of a value.
fn fields_of(v: &Value, field: &Field) -> FieldSet {
    let mut set = FieldSet::default();
    walk_value(v, field, &mut set);
    set
}

/// `set` with every node a member: what an update adds or removes whole, maps and lists
/// included, as Kubernetes records them (`.` in `fieldsV1`).
fn every_path(mut set: FieldSet) -> FieldSet {
    fn mark(node: &mut FieldSet) {
        node.member = true;
        node.children.values_mut().for_each(mark);
    }
    mark(&mut set);
    set
}

/// Marks in `out` the paths of `set` under `new` that `old` lacks, and its members whose value
/// differs from `old`'s at the same place (a list item, `item`, only when `old` lacks it).
fn changed(old: Option<&Value>, new: &Value, set: &FieldSet, item: bool, out: &mut FieldSet) {
    out.member = old.is_none() || (set.member && !item && old != Some(new));
    for (element, child) in &set.children {
        let Some(n) = walk::step(new, element) else { continue };
        let mut sub = FieldSet::default();
        changed(old.and_then(|o| walk::step(o, element)), n, child, element.starts_with("k:"), &mut sub);
        if !sub.is_empty() {
            out.children.insert(element.clone(), sub);
        }
    }
}
