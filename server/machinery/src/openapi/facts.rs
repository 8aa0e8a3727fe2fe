//! Kubernetes' schema facts about its built-in kinds, kept as data (`schema-facts.txt`): which
//! lists are atomic, sets or maps (and their keys), which maps and structs are atomic, and the
//! strategic merge patch strategy and merge key of each list. They are published in this
//! server's OpenAPI (as the `x-kubernetes-*` extensions clients such as kubectl read) and the
//! patch code walks the published schemas with them ([`Schemas::field`]).

use std::collections::HashMap;
use std::sync::LazyLock;

use serde_json::{Map, Value};

const DATA: &str = include_str!("schema-facts.txt");

/// The facts of one property (or of a definition itself), as `(extension, value)` pairs with
/// the `x-kubernetes-` prefix dropped.
type Facts = Vec<(String, String)>;

/// Facts by definition, then property.
static FACTS: LazyLock<HashMap<&'static str, HashMap<&'static str, Facts>>> = LazyLock::new(|| {
    let mut out: HashMap<&str, HashMap<&str, Facts>> = HashMap::new();
    for l in DATA.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let mut parts = l.split_whitespace();
        let (Some(def), Some(prop)) = (parts.next(), parts.next()) else { continue };
        let facts = parts.filter_map(|p| p.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect();
        out.entry(def).or_default().insert(prop, facts);
    }
    out
});

fn facts(def: &str, prop: &str) -> Option<&'static Facts> {
    FACTS.get(def)?.get(prop)
}

fn fact<'a>(facts: Option<&'a Facts>, key: &str) -> Option<&'a str> {
    facts?.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

/// Facts that are Kubernetes' own OpenAPI extensions (the others are this server's notes).
const PUBLISHED: &[&str] = &["list-type", "list-map-keys", "map-type", "patch-strategy", "patch-merge-key"];

/// The extensions as the OpenAPI document carries them.
fn extensions(facts: &Facts) -> impl Iterator<Item = (String, Value)> + '_ {
    facts.iter().filter(|(k, _)| PUBLISHED.contains(&k.as_str())).map(|(k, v)| {
        let value = if k == "list-map-keys" { Value::Array(v.split(',').map(|s| Value::String(s.to_string())).collect()) } else { Value::String(v.clone()) };
        (format!("x-kubernetes-{k}"), value)
    })
}

/// Puts the facts into generated schemas (keyed by definition name).
pub fn annotate(definitions: &mut Map<String, Value>) {
    for (def, props) in FACTS.iter() {
        for (prop, facts) in props {
            let Some(schema) = definitions.get_mut(*def) else { continue };
            let target = if *prop == "." { Some(schema) } else { schema.get_mut("properties").and_then(|p| p.get_mut(*prop)) };
            if let Some(Value::Object(target)) = target {
                target.extend(extensions(facts));
            }
        }
    }
}

/// How a list merges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListType {
    /// Replaced whole.
    Atomic,
    /// Scalars, each its own member.
    Set,
    /// Objects identified by these keys.
    Map(Vec<String>),
}

/// What the schema says about one field of an object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Field {
    /// The definition of the field's value, of a list's items, or of a map's values.
    pub def: Option<String>,
    /// For a list: how it merges under server-side apply.
    pub list: Option<ListType>,
    /// The strategic merge patch strategy (`merge`, `retainKeys`, `merge,retainKeys`).
    pub patch_strategy: Option<String>,
    pub patch_merge_key: Option<String>,
    /// A map or struct replaced whole.
    pub atomic: bool,
    /// For a map-typed list: the defaults of its keys, which items may leave out.
    pub key_defaults: Vec<(String, Value)>,
}

/// The published schemas, walked by definition name and field.
pub struct Schemas {
    definitions: Map<String, Value>,
}

/// The definition a `$ref` names.
fn ref_name(v: &Value) -> Option<String> {
    v.get("$ref")?.as_str()?.rsplit('/').next().map(str::to_string)
}

impl Schemas {
    pub fn new(definitions: Map<String, Value>) -> Schemas {
        Schemas { definitions }
    }

    /// The definition named `def`.
    pub fn definition(&self, def: &str) -> Option<&Value> {
        self.definitions.get(def)
    }

    /// What the schema of definition `def` says about its field `prop` (a custom resource's
    /// schema nodes are definitions too: [`crate::crd::fields`]).
    pub fn field(&self, def: &str, prop: &str) -> Field {
        if let Some(node) = crate::crd::fields::node_of(def) {
            return crate::crd::fields::field(node, prop);
        }
        let schema = self.definitions.get(def).and_then(|d| d.get("properties")).and_then(|p| p.get(prop));
        let f = facts(def, prop);
        let value_def = schema.and_then(|s| {
            ref_name(s)
                .or_else(|| s.get("items").and_then(ref_name))
                .or_else(|| s.get("additionalProperties").and_then(ref_name))
                .or_else(|| s.get("allOf").and_then(Value::as_array).and_then(|a| a.iter().find_map(ref_name)))
        });
        let is_list = schema.is_some_and(|s| s.get("type").and_then(Value::as_str) == Some("array"));
        let list = is_list.then(|| match fact(f, "list-type") {
            Some("map") => ListType::Map(fact(f, "list-map-keys").unwrap_or_default().split(',').map(str::to_string).collect()),
            Some("set") => ListType::Set,
            // Lists with a merge strategy and no list type merge by the strategy's key.
            _ if fact(f, "patch-strategy").is_some_and(|s| s.contains("merge")) => match fact(f, "patch-merge-key") {
                Some(k) => ListType::Map(vec![k.to_string()]),
                None => ListType::Set,
            },
            _ => ListType::Atomic,
        });
        let atomic = fact(f, "map-type") == Some("atomic") || value_def.as_deref().is_some_and(|d| !is_list && fact(facts(d, "."), "map-type") == Some("atomic"));
        let key_defaults = fact(f, "list-map-key-defaults")
            .into_iter()
            .flat_map(|d| d.split(','))
            .filter_map(|pair| pair.split_once(':'))
            .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
            .collect();
        Field {
            def: value_def,
            list,
            key_defaults,
            patch_strategy: fact(f, "patch-strategy").map(str::to_string),
            patch_merge_key: fact(f, "patch-merge-key").map(str::to_string),
            atomic,
        }
    }
}

/// The Swagger 2.0 definitions every resource's schema refers to, with the facts.
pub fn schemas() -> &'static Schemas {
    static SCHEMAS: LazyLock<Schemas> = LazyLock::new(|| Schemas::new(super::definitions()));
    &SCHEMAS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_reach_the_schemas_and_the_walk() {
        let s = schemas();
        let containers = s.field("io.k8s.api.core.v1.PodSpec", "containers");
        assert_eq!(containers.def.as_deref(), Some("io.k8s.api.core.v1.Container"));
        assert_eq!(containers.list, Some(ListType::Map(vec!["name".into()])));
        assert_eq!(containers.patch_merge_key.as_deref(), Some("name"));
        let ports = s.field("io.k8s.api.core.v1.Container", "ports");
        assert_eq!(ports.list, Some(ListType::Map(vec!["containerPort".into(), "protocol".into()])));
        assert_eq!(s.field("io.k8s.api.core.v1.PodSpec", "tolerations").list, Some(ListType::Atomic));
        assert_eq!(s.field("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "finalizers").list, Some(ListType::Set));
        assert!(s.field("io.k8s.api.core.v1.PodSpec", "nodeSelector").atomic);
        assert!(!s.field("io.k8s.api.core.v1.PodSpec", "securityContext").atomic);
        let doc: Value = serde_json::from_slice(&super::super::v2()).unwrap();
        let published = &doc["definitions"]["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"];
        assert_eq!(published["x-kubernetes-patch-strategy"], "merge");
        assert_eq!(published["x-kubernetes-list-map-keys"], serde_json::json!(["name"]));
    }
}
