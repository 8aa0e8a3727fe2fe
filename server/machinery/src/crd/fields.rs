//! Field management over custom resources: each node of a version's schema is named like a
//! definition (`cr:example.com/v1/widgets#/spec/ports/[]`: properties by name, `[]` a list's
//! items, `{}` a map's values), so that server-side apply walks a custom resource by its own
//! `x-kubernetes-list-type` (`map` by `x-kubernetes-list-map-keys`, `set`, else atomic) and
//! `x-kubernetes-map-type`, and its `metadata` as `ObjectMeta`.

use std::sync::Arc;

use super::schema::Structural;
use crate::openapi::facts::{Field, ListType};
use crate::registry::custom::{self, CustomVersion};
use crate::registry::ResourceInfo;

const PREFIX: &str = "cr:";
const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// The definition of a custom resource's root.
pub fn root(info: &ResourceInfo) -> String {
    format!("{PREFIX}{}/{}/{}#", info.group, info.version, info.resource)
}

/// A node of a served version's schema, named by `def`.
pub struct Node {
    version: Arc<CustomVersion>,
    def: String,
}

/// The node `def` names, when it names one of a custom resource served now.
pub fn node_of(def: &str) -> Option<Node> {
    let rest = def.strip_prefix(PREFIX)?;
    let (gvr, _) = rest.split_once('#')?;
    let mut parts = gvr.splitn(3, '/');
    let (group, version, resource) = (parts.next()?, parts.next()?, parts.next()?);
    let snapshot = custom::current();
    let (_, v) = snapshot.entries.iter().find(|(i, _)| i.group == group && i.version == version && i.resource == resource)?;
    Some(Node { version: v.clone(), def: def.to_string() })
}

/// The schema node at the path after `#`.
fn resolve<'a>(root: &'a Structural, path: &str) -> Option<&'a Structural> {
    path.split('/').filter(|s| !s.is_empty()).try_fold(root, |node, seg| match seg {
        "[]" => node.items.as_deref(),
        "{}" => node.additional(),
        name => node.properties.get(name),
    })
}

/// What the node says about its field `prop`.
pub fn field(node: Node, prop: &str) -> Field {
    let path = node.def.split_once('#').map_or("", |(_, p)| p);
    if path.is_empty() && prop == "metadata" {
        return Field { def: Some(OBJECT_META.to_string()), ..Default::default() };
    }
    let Some(parent) = resolve(&node.version.schema, path) else { return Field::default() };
    let (child, segment) = match (parent.properties.get(prop), parent.additional()) {
        (Some(c), _) => (c, prop),
        (None, Some(c)) => (c, "{}"),
        (None, None) => return Field::default(),
    };
    let child_def = format!("{}/{segment}", node.def);
    if child.type_ == "array" {
        let list = match child.list_type.as_deref() {
            Some("map") => ListType::Map(child.list_map_keys.clone()),
            Some("set") => ListType::Set,
            _ => ListType::Atomic,
        };
        let key_defaults = child
            .items
            .as_deref()
            .map(|items| child.list_map_keys.iter().filter_map(|k| Some((k.clone(), items.properties.get(k)?.default.clone()?))).collect())
            .unwrap_or_default();
        return Field { def: child.items.is_some().then(|| format!("{child_def}/[]")), list: Some(list), key_defaults, ..Default::default() };
    }
    Field { def: Some(child_def), atomic: child.map_type.as_deref() == Some("atomic"), ..Default::default() }
}
