//! A version's structural schema (`openAPIV3Schema`), compiled once per definition: decoding a
//! custom resource prunes the fields the schema does not know (reported as unknown fields, for
//! `fieldValidation`), defaulting fills `default`s, and validation (`validate.rs`) checks types, formats,
//! enums, patterns, bounds, `required`, `nullable`, the `allOf`/`anyOf`/`oneOf`/`not`
//! constraints and the CEL rules ([`super::rules`]), with the messages and field paths
//! Kubernetes gives. An update ratchets: a value equal to its correlated old value (same
//! property, map key, or map-list item) is not validated again, but for transition rules. The
//! rules of one object share one cost budget ([`super::cost`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::cost::Decl;
use super::rules::{self, Rule, RuleSpec};
use crate::registry::{kinds, Decoded};

mod validate;

/// One node of a structural schema, as the definition gives it (the fields this server acts on).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Structural {
    #[serde(rename = "type", default)]
    pub type_: String,
    #[serde(default)]
    pub format: String,
    #[serde(default)]
    pub properties: BTreeMap<String, Structural>,
    #[serde(default)]
    pub additional_properties: Option<Additional>,
    #[serde(default)]
    pub items: Option<Box<Structural>>,
    #[serde(default)]
    pub required: Vec<String>,
    #[serde(default)]
    pub nullable: bool,
    #[serde(rename = "enum", default)]
    pub enum_: Option<Vec<Value>>,
    #[serde(default)]
    pub default: Option<Value>,
    #[serde(default)]
    pub pattern: Option<String>,
    #[serde(skip)]
    pub regex: Option<regex::Regex>,
    /// Whether this node or one below it has a `default` (reads then fill them too).
    #[serde(skip)]
    pub has_defaults: bool,
    #[serde(default)]
    pub maximum: Option<f64>,
    #[serde(default)]
    pub exclusive_maximum: bool,
    #[serde(default)]
    pub minimum: Option<f64>,
    #[serde(default)]
    pub exclusive_minimum: bool,
    #[serde(default)]
    pub multiple_of: Option<f64>,
    #[serde(default)]
    pub max_length: Option<u64>,
    #[serde(default)]
    pub min_length: Option<u64>,
    #[serde(default)]
    pub max_items: Option<u64>,
    #[serde(default)]
    pub min_items: Option<u64>,
    #[serde(default)]
    pub unique_items: bool,
    #[serde(default)]
    pub max_properties: Option<u64>,
    #[serde(default)]
    pub min_properties: Option<u64>,
    #[serde(default)]
    pub all_of: Vec<Structural>,
    #[serde(default)]
    pub any_of: Vec<Structural>,
    #[serde(default)]
    pub one_of: Vec<Structural>,
    #[serde(default)]
    pub not: Option<Box<Structural>>,
    #[serde(rename = "x-kubernetes-preserve-unknown-fields", default)]
    pub preserve_unknown_fields: bool,
    #[serde(rename = "x-kubernetes-int-or-string", default)]
    pub int_or_string: bool,
    #[serde(rename = "x-kubernetes-embedded-resource", default)]
    pub embedded_resource: bool,
    #[serde(rename = "x-kubernetes-list-type", default)]
    pub list_type: Option<String>,
    #[serde(rename = "x-kubernetes-list-map-keys", default)]
    pub list_map_keys: Vec<String>,
    #[serde(rename = "x-kubernetes-map-type", default)]
    pub map_type: Option<String>,
    #[serde(rename = "x-kubernetes-validations", default)]
    pub validations: Vec<RuleSpec>,
    #[serde(skip)]
    pub rules: Vec<Rule>,
}

/// `additionalProperties`: a schema for every other key, or `true`/`false`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Additional {
    Allowed(bool),
    Schema(Box<Structural>),
}

impl Structural {
    /// Reads a schema and compiles its patterns and rules; the error names where the first bad
    /// one is (relative to the schema, e.g. `.properties[spec].x-kubernetes-validations[0].rule`)
    /// and what is wrong with it, as a field error's message.
    pub fn compile(schema: &Value) -> Result<Structural, (String, String)> {
        let mut s: Structural = serde_json::from_value(schema.clone()).map_err(|e| (String::new(), e.to_string()))?;
        s.prepare("")?;
        Ok(s)
    }

    fn prepare(&mut self, path: &str) -> Result<(), (String, String)> {
        if let Some(p) = &self.pattern {
            self.regex = Some(
                regex::Regex::new(p)
                    .map_err(|e| (format!("{path}.pattern"), format!("Invalid value: {p:?}: must be a valid regular expression, but isn't: {e}")))?,
            );
        }
        let mut defaults = self.default.is_some();
        let mut children: Vec<(String, &mut Structural)> = Vec::new();
        for (k, child) in self.properties.iter_mut() {
            children.push((format!("{path}.properties[{k}]"), child));
        }
        if let Some(Additional::Schema(s)) = &mut self.additional_properties {
            children.push((format!("{path}.additionalProperties"), s.as_mut()));
        }
        if let Some(items) = self.items.as_deref_mut() {
            children.push((format!("{path}.items"), items));
        }
        for (name, list) in [("allOf", &mut self.all_of), ("anyOf", &mut self.any_of), ("oneOf", &mut self.one_of)] {
            for (i, s) in list.iter_mut().enumerate() {
                children.push((format!("{path}.{name}[{i}]"), s));
            }
        }
        if let Some(not) = self.not.as_deref_mut() {
            children.push((format!("{path}.not"), not));
        }
        for (child_path, child) in children {
            child.prepare(&child_path)?;
            defaults |= child.has_defaults;
        }
        self.has_defaults = defaults;
        if !self.validations.is_empty() {
            let decl = Decl::of(self, path.is_empty() || self.embedded_resource).map(Arc::new);
            self.rules = rules::compile(&self.validations, &self.sample(), self.exact(), decl).map_err(|(i, field, e)| {
                let spec = &self.validations[i];
                let source = if field == "rule" { &spec.rule } else { spec.message_expression.as_deref().unwrap_or_default() };
                (format!("{path}.x-kubernetes-validations[{i}].{field}"), format!("Invalid value: {source:?}: {e}"))
            })?;
        }
        Ok(())
    }

    /// A value of this node's shape, every property present, for typing rules.
    fn sample(&self) -> Value {
        if self.int_or_string {
            return Value::from(0);
        }
        match self.type_.as_str() {
            "object" if !self.properties.is_empty() => Value::Object(self.properties.iter().map(|(k, s)| (k.clone(), s.sample())).collect()),
            "object" => Value::Object(Map::new()),
            "array" => Value::Array(self.items.iter().map(|i| i.sample()).collect()),
            "string" => Value::from(""),
            "integer" => Value::from(0),
            "number" => Value::from(0.5),
            "boolean" => Value::from(false),
            _ => Value::Object(Map::new()),
        }
    }

    /// Whether every key a rule may read is declared below this node (no maps, no preserved
    /// fields), so that reading another is an undefined field rather than a missing key.
    fn exact(&self) -> bool {
        !self.preserve_unknown_fields
            && self.additional_properties.is_none()
            && !self.embedded_resource
            && self.properties.values().all(Structural::exact)
            && self.items.as_deref().is_none_or(Structural::exact)
    }

    pub fn additional(&self) -> Option<&Structural> {
        match &self.additional_properties {
            Some(Additional::Schema(s)) => Some(s),
            _ => None,
        }
    }

    /// Whether keys the schema does not name are kept.
    fn keeps_unknown(&self) -> bool {
        self.preserve_unknown_fields || matches!(self.additional_properties, Some(Additional::Allowed(true)))
    }

    /// Prunes what the schema does not know (each reported as unknown); `metadata` is decoded as
    /// an `ObjectMeta`. A body that is not an object is refused.
    pub fn decode(&self, mut obj: Value) -> Result<Decoded, String> {
        if !obj.is_object() {
            return Err("the request body must be an object".into());
        }
        let mut unknown_fields = Vec::new();
        self.prune(&mut obj, "", true, &mut unknown_fields);
        Ok(Decoded { object: obj, unknown_fields })
    }

    fn prune(&self, value: &mut Value, path: &str, resource: bool, unknown: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if resource {
                    prune_metadata(map, path, unknown);
                }
                let keep_unknown = self.keeps_unknown();
                let additional = self.additional();
                let keys: Vec<String> = map.keys().cloned().collect();
                for key in keys {
                    let child_path = join(path, &key);
                    if resource && ["apiVersion", "kind", "metadata"].contains(&key.as_str()) {
                        continue;
                    }
                    let child = self.properties.get(&key).or(additional);
                    match child {
                        Some(schema) => {
                            let v = map.get_mut(&key).expect("key listed");
                            schema.prune(v, &child_path, schema.embedded_resource, unknown);
                        }
                        None if keep_unknown => {}
                        None => {
                            map.remove(&key);
                            unknown.push(child_path);
                        }
                    }
                }
            }
            Value::Array(items) => {
                if let Some(schema) = &self.items {
                    for (i, item) in items.iter_mut().enumerate() {
                        schema.prune(item, &format!("{path}[{i}]"), schema.embedded_resource, unknown);
                    }
                }
            }
            _ => {}
        }
    }

    /// Fills `default`s where a property is missing (or null and not nullable), top down.
    pub fn default(&self, value: &mut Value) {
        match value {
            Value::Object(map) => {
                for (key, schema) in &self.properties {
                    let missing = match map.get(key) {
                        None => true,
                        Some(Value::Null) => !schema.nullable,
                        Some(_) => false,
                    };
                    if missing {
                        match &schema.default {
                            Some(d) => {
                                map.insert(key.clone(), d.clone());
                            }
                            // A null the schema does not allow and nothing replaces is dropped.
                            None if map.get(key).is_some_and(Value::is_null) => {
                                map.remove(key);
                            }
                            None => {}
                        }
                    }
                    if let Some(v) = map.get_mut(key) {
                        schema.default(v);
                    }
                }
                if let Some(schema) = self.additional() {
                    for (key, v) in map.iter_mut() {
                        if !self.properties.contains_key(key) {
                            schema.default(v);
                        }
                    }
                }
            }
            Value::Array(items) => {
                if let Some(schema) = &self.items {
                    for item in items {
                        schema.default(item);
                    }
                }
            }
            _ => {}
        }
    }
}

/// Keeps only what `ObjectMeta` knows of `metadata` (unknown fields reported).
fn prune_metadata(map: &mut Map<String, Value>, path: &str, unknown: &mut Vec<String>) {
    let Some(meta) = map.get_mut("metadata") else { return };
    if !meta.is_object() {
        return;
    }
    if let Ok(decoded) = kinds::decode::<ObjectMeta>(meta.clone()) {
        unknown.extend(decoded.unknown_fields.into_iter().map(|f| join(&join(path, "metadata"), &f)));
        *meta = decoded.object;
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() { key.to_string() } else { format!("{path}.{key}") }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Structural {
        Structural::compile(&json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "required": ["image"],
                    "properties": {
                        "image": {"type": "string", "pattern": "^[a-z]+$"},
                        "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1},
                        "mode": {"type": "string", "enum": ["a", "b"]},
                        "tags": {"type": "array", "maxItems": 2, "items": {"type": "string"}},
                        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        "port": {"x-kubernetes-int-or-string": true},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}}
                    }
                }
            }
        }))
        .unwrap()
    }

    #[test]
    fn unknown_fields_are_pruned_and_reported() {
        let obj = json!({"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "a", "bogus": 1}, "spec": {"image": "x", "extra": 1, "free": {"any": {"thing": 1}}}, "top": 2});
        let d = schema().decode(obj).unwrap();
        assert_eq!(d.unknown_fields, vec!["metadata.bogus", "spec.extra", "top"]);
        assert_eq!(d.object["spec"], json!({"image": "x", "free": {"any": {"thing": 1}}}));
        assert_eq!(d.object["metadata"], json!({"name": "a"}));
    }

    #[test]
    fn defaults_fill_missing_and_null_fields() {
        let mut obj = json!({"spec": {"image": "x"}});
        schema().default(&mut obj);
        assert_eq!(obj["spec"]["replicas"], 1);
        let mut obj = json!({"spec": {"image": "x", "replicas": null, "mode": null}});
        schema().default(&mut obj);
        assert_eq!(obj["spec"], json!({"image": "x", "replicas": 1}));
    }

    #[test]
    fn violations_are_reported_as_kubernetes_words_them() {
        let obj = json!({"spec": {"image": "X1", "replicas": 11, "mode": "c", "tags": ["a", "b", "c"], "port": true, "labels": {"k": 1}}});
        let causes: Vec<String> = schema().validate(&obj, None).iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
        assert_eq!(
            causes,
            vec![
                "spec.image: Invalid value: \"X1\": spec.image in body should match '^[a-z]+$'",
                "spec.labels.k: Invalid value: 1: spec.labels.k in body must be of type string: \"integer\"",
                "spec.mode: Unsupported value: \"c\": supported values: \"a\", \"b\"",
                "spec.port: Invalid value: true: spec.port in body must be of type integer,string: \"boolean\"",
                "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10",
                "spec.tags: Too many: 3: must have at most 2 items",
            ]
        );
        let causes = schema().validate(&json!({"spec": {}}), None);
        assert_eq!((causes[0].field.as_str(), causes[0].message.as_str()), ("spec.image", "Required value"));
    }
}
