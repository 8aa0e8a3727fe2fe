//! Validation of a custom resource against its structural schema: types, formats, enums,
//! patterns, bounds, `required`, `nullable`, the `allOf`/`anyOf`/`oneOf`/`not` constraints and
//! the CEL rules, with Kubernetes' messages and field paths; unchanged values ratchet.

use serde_json::{Map, Value};

use super::{join, Structural};
use crate::crd::cost::Budget;
use crate::crd::rules::{self, Prior};
use crate::error::Cause;

impl Structural {
    /// Every way `obj` breaks the schema (the root's `apiVersion`, `kind` and `metadata` are the
    /// server's to check).
    pub fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        let strip = |v: &Value| {
            let mut v = v.clone();
            if let Some(map) = v.as_object_mut() {
                for k in ["apiVersion", "kind", "metadata"] {
                    map.remove(k);
                }
            }
            v
        };
        let mut causes = Vec::new();
        self.check(&strip(obj), old.map(strip).as_ref(), &At::default(), &Budget::default(), &mut causes);
        causes
    }

    fn check(&self, value: &Value, old: Option<&Value>, at: &At, budget: &Budget, causes: &mut Vec<Cause>) {
        let path = at.schema.as_str();
        if value.is_null() && (self.nullable || path.is_empty()) {
            return;
        }
        if old == Some(value) {
            // Unchanged: valid as it was, but for what transition rules say.
            self.transitions(value, at, budget, causes);
            return;
        }
        if !self.type_matches(value) {
            let name = if path.is_empty() { "body" } else { path };
            let expected = if self.int_or_string { "integer,string" } else { self.type_.as_str() };
            causes.push(Cause::new(
                "FieldValueTypeInvalid",
                path,
                format!("Invalid value: {}: {name} in body must be of type {expected}: {:?}", show(value), type_name(value)),
            ));
            return;
        }
        if let Some(allowed) = &self.enum_ {
            if !allowed.contains(value) {
                let list: Vec<String> = allowed.iter().map(|v| v.as_str().map_or_else(|| v.to_string(), |s| format!("{s:?}"))).collect();
                causes.push(Cause::new(
                    "FieldValueNotSupported",
                    path,
                    format!("Unsupported value: {}: supported values: {}", show(value), list.join(", ")),
                ));
            }
        }
        match value {
            Value::String(s) => self.check_string(s, path, causes),
            Value::Number(n) => self.check_number(n.as_f64().unwrap_or_default(), value, path, causes),
            Value::Array(items) => self.check_array(items, old.and_then(Value::as_array), at, budget, causes),
            Value::Object(map) => self.check_object(map, old.and_then(Value::as_object), at, budget, causes),
            _ => {}
        }
        for schema in &self.all_of {
            schema.check(value, old, at, budget, causes);
        }
        let passes = |s: &Structural| {
            let mut c = Vec::new();
            s.check(value, None, at, budget, &mut c);
            c.is_empty()
        };
        if !self.any_of.is_empty() && !self.any_of.iter().any(passes) {
            causes.push(invalid(path, value, &format!("{} in body must validate at least one schema (anyOf)", name_of(path))));
        }
        if !self.one_of.is_empty() && self.one_of.iter().filter(|s| passes(s)).count() != 1 {
            causes.push(invalid(path, value, &format!("{} in body must validate one and only one schema (oneOf)", name_of(path))));
        }
        if self.not.as_deref().is_some_and(passes) {
            causes.push(invalid(path, value, &format!("{} in body must not validate the schema (not)", name_of(path))));
        }
        let prior = old.map_or(Prior::None, Prior::Changed);
        rules::evaluate(&self.rules, &at.rule, self.rule_type(), value, prior, budget, causes);
    }

    /// The type a rule failure names (`"object"`, `"string"`, ...).
    fn rule_type(&self) -> &str {
        if self.type_.is_empty() { "object" } else { &self.type_ }
    }

    /// The transition rules at and below an unchanged value (each sees `oldSelf` equal to `self`).
    fn transitions(&self, value: &Value, at: &At, budget: &Budget, causes: &mut Vec<Cause>) {
        rules::evaluate(&self.rules, &at.rule, self.rule_type(), value, Prior::Unchanged, budget, causes);
        match value {
            Value::Object(map) => {
                for (key, v) in map {
                    match (self.properties.get(key), self.additional()) {
                        (Some(schema), _) => schema.transitions(v, &at.field(key), budget, causes),
                        (None, Some(schema)) => schema.transitions(v, &at.key(key), budget, causes),
                        (None, None) => {}
                    }
                }
            }
            Value::Array(items) if self.list_type.as_deref() == Some("map") => {
                if let Some(schema) = &self.items {
                    for (i, item) in items.iter().enumerate() {
                        schema.transitions(item, &at.index(i), budget, causes);
                    }
                }
            }
            _ => {}
        }
    }

    /// The old item a map-list item correlates with: the one with the same keys.
    fn correlated<'a>(&self, item: &Value, old: Option<&'a [Value]>) -> Option<&'a Value> {
        if self.list_type.as_deref() != Some("map") || self.list_map_keys.is_empty() {
            return None;
        }
        old?.iter().find(|o| self.list_map_keys.iter().all(|k| o.get(k) == item.get(k)))
    }

    fn type_matches(&self, value: &Value) -> bool {
        if self.int_or_string {
            return value.is_string() || is_integer(value);
        }
        match self.type_.as_str() {
            "object" => value.is_object(),
            "array" => value.is_array(),
            "string" => value.is_string(),
            "integer" => is_integer(value),
            "number" => value.is_number(),
            "boolean" => value.is_boolean(),
            _ => true,
        }
    }

    fn check_string(&self, s: &str, path: &str, causes: &mut Vec<Cause>) {
        let name = name_of(path);
        let value = Value::String(s.to_string());
        let chars = s.chars().count() as u64;
        if let Some(max) = self.max_length.filter(|m| chars > *m) {
            let unit = if max == 1 { "byte" } else { "bytes" };
            causes.push(Cause::new("FieldValueTooLong", path, format!("Too long: may not be more than {max} {unit}")));
        }
        if let Some(min) = self.min_length.filter(|m| chars < *m) {
            causes.push(invalid(path, &value, &format!("{name} in body should be at least {min} chars long")));
        }
        if let (Some(re), Some(p)) = (&self.regex, &self.pattern) {
            if !re.is_match(s) {
                causes.push(invalid(path, &value, &format!("{name} in body should match '{p}'")));
            }
        }
        if let Some(problem) = format_problem(&self.format, s) {
            causes.push(invalid(path, &value, &format!("{name} in body must be of type {}: {s:?}", problem)));
        }
    }

    fn check_number(&self, n: f64, value: &Value, path: &str, causes: &mut Vec<Cause>) {
        let name = name_of(path);
        if let Some(max) = self.maximum {
            if self.exclusive_maximum && n >= max {
                causes.push(invalid(path, value, &format!("{name} in body should be less than {}", num(max))));
            } else if n > max {
                causes.push(invalid(path, value, &format!("{name} in body should be less than or equal to {}", num(max))));
            }
        }
        if let Some(min) = self.minimum {
            if self.exclusive_minimum && n <= min {
                causes.push(invalid(path, value, &format!("{name} in body should be greater than {}", num(min))));
            } else if n < min {
                causes.push(invalid(path, value, &format!("{name} in body should be greater than or equal to {}", num(min))));
            }
        }
        if let Some(m) = self.multiple_of.filter(|m| *m > 0.0) {
            let q = n / m;
            if (q - q.round()).abs() > 1e-9 {
                causes.push(invalid(path, value, &format!("{name} in body should be a multiple of {}", num(m))));
            }
        }
    }

    fn check_array(&self, items: &[Value], old: Option<&Vec<Value>>, at: &At, budget: &Budget, causes: &mut Vec<Cause>) {
        let path = at.schema.as_str();
        let name = name_of(path);
        let len = items.len() as u64;
        if let Some(max) = self.max_items.filter(|m| len > *m) {
            let unit = if max == 1 { "item" } else { "items" };
            causes.push(Cause::new("FieldValueTooMany", path, format!("Too many: {len}: must have at most {max} {unit}")));
        }
        if let Some(min) = self.min_items.filter(|m| len < *m) {
            causes.push(invalid(path, &Value::Array(items.to_vec()), &format!("{name} in body should have at least {min} items")));
        }
        if self.unique_items && items.iter().enumerate().any(|(i, a)| items[..i].contains(a)) {
            causes.push(Cause::new("FieldValueDuplicate", path, format!("Duplicate value: {}", show(&Value::Array(items.to_vec())))));
        }
        if let Some(schema) = &self.items {
            for (i, item) in items.iter().enumerate() {
                schema.check(item, self.correlated(item, old.map(Vec::as_slice)), &at.index(i), budget, causes);
            }
        }
    }

    fn check_object(&self, map: &Map<String, Value>, old: Option<&Map<String, Value>>, at: &At, budget: &Budget, causes: &mut Vec<Cause>) {
        let path = at.schema.as_str();
        for key in &self.required {
            if map.get(key).is_none_or(Value::is_null) && !(self.properties.get(key).is_some_and(|p| p.nullable) && map.contains_key(key)) {
                causes.push(Cause::new("FieldValueRequired", join(path, key), "Required value"));
            }
        }
        let len = map.len() as u64;
        if let Some(max) = self.max_properties.filter(|m| len > *m) {
            let unit = if max == 1 { "item" } else { "items" };
            causes.push(Cause::new("FieldValueTooMany", path, format!("Too many: {len}: must have at most {max} {unit}")));
        }
        if let Some(min) = self.min_properties.filter(|m| len < *m) {
            causes.push(invalid(path, &Value::Object(map.clone()), &format!("{} in body should have at least {min} properties", name_of(path))));
        }
        for (key, v) in map {
            if self.embedded_resource && ["apiVersion", "kind", "metadata"].contains(&key.as_str()) {
                continue;
            }
            let old = old.and_then(|o| o.get(key));
            match (self.properties.get(key), self.additional()) {
                (Some(schema), _) => schema.check(v, old, &at.field(key), budget, causes),
                (None, Some(schema)) => schema.check(v, old, &at.key(key), budget, causes),
                (None, None) => {}
            }
        }
        if self.embedded_resource {
            for key in ["apiVersion", "kind"] {
                if map.get(key).and_then(Value::as_str).is_none_or(str::is_empty) {
                    causes.push(Cause::new("FieldValueRequired", join(path, key), "Required value: must not be empty"));
                }
            }
        }
    }
}

/// Where a value is, as schema errors name it (`map.key.field`) and as rule errors name it
/// (`map[key].field`, Kubernetes' field path).
#[derive(Default)]
struct At {
    schema: String,
    rule: String,
}

impl At {
    fn field(&self, key: &str) -> At {
        At { schema: join(&self.schema, key), rule: join(&self.rule, key) }
    }
    fn key(&self, key: &str) -> At {
        At { schema: join(&self.schema, key), rule: format!("{}[{key}]", self.rule) }
    }
    fn index(&self, i: usize) -> At {
        At { schema: format!("{}[{i}]", self.schema), rule: format!("{}[{i}]", self.rule) }
    }
}

fn name_of(path: &str) -> &str {
    if path.is_empty() { "body" } else { path }
}

fn is_integer(v: &Value) -> bool {
    v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0 && f.is_finite())
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A value as Kubernetes prints it in a field error: strings quoted, others as JSON.
fn show(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Object(_) | Value::Array(_) => format!("{:?}", v.to_string()),
        other => other.to_string(),
    }
}

fn num(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e15 { format!("{}", f as i64) } else { f.to_string() }
}

fn invalid(path: &str, value: &Value, detail: &str) -> Cause {
    Cause::new("FieldValueInvalid", path, format!("Invalid value: {}: {detail}", show(value)))
}

/// Why `s` is not of string format `format`, for the formats Kubernetes checks.
fn format_problem(format: &str, s: &str) -> Option<&'static str> {
    let ok = match format {
        "date-time" | "datetime" => chrono::DateTime::parse_from_rfc3339(s).is_ok(),
        "date" => chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok(),
        "byte" => base64::Engine::decode(&base64::engine::general_purpose::STANDARD, s).is_ok(),
        "uuid" => s.len() == 36 && s.chars().enumerate().all(|(i, c)| if [8, 13, 18, 23].contains(&i) { c == '-' } else { c.is_ascii_hexdigit() }),
        "ipv4" => s.parse::<std::net::Ipv4Addr>().is_ok(),
        "ipv6" => s.parse::<std::net::Ipv6Addr>().is_ok(),
        _ => return None,
    };
    if ok {
        None
    } else {
        Some(match format {
            "datetime" => "date-time",
            "date-time" => "date-time",
            "date" => "date",
            "byte" => "byte",
            "uuid" => "uuid",
            "ipv4" => "ipv4",
            _ => "ipv6",
        })
    }
}
