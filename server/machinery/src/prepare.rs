//! A request body made ready to store, as every write does before admission: its type metadata
//! checked, decoded with field validation (unknown and duplicate fields), defaulted and validated
//! by its kind's strategy.

use std::cell::RefCell;
use std::collections::HashSet;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{json, Value};

use crate::error::{ApiError, ApiResult, Cause};
use crate::meta;
use crate::query::Params;
use crate::registry::ResourceInfo;

/// How unknown fields are treated (`fieldValidation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldValidation {
    Ignore,
    Warn,
    Strict,
}

impl FieldValidation {
    pub fn from_params(params: &Params) -> ApiResult<Self> {
        match params.value("fieldValidation") {
            None | Some("Warn") => Ok(FieldValidation::Warn),
            Some("Ignore") => Ok(FieldValidation::Ignore),
            Some("Strict") => Ok(FieldValidation::Strict),
            Some(other) => Err(ApiError::bad_request(format!(
                "fieldValidation must be one of \"Ignore\", \"Warn\", \"Strict\", got: {other}"
            ))),
        }
    }

    /// The value of `fieldValidation` that asks for this.
    pub fn as_str(self) -> &'static str {
        match self {
            FieldValidation::Ignore => "Ignore",
            FieldValidation::Warn => "Warn",
            FieldValidation::Strict => "Strict",
        }
    }
}

/// `apiVersion` and `kind`, when given, must be strings (or null): Go cannot read the type of
/// the body otherwise, and refuses it naming the Go type and showing the body's start.
pub fn type_meta_strings(obj: &Value, body: &[u8], kind: &str) -> ApiResult<()> {
    for field in ["apiVersion", "kind"] {
        let found = match &obj[field] {
            Value::Null | Value::String(_) => continue,
            Value::Bool(_) => "bool",
            Value::Number(_) => "number",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        let text = String::from_utf8_lossy(body);
        let start: String = text.chars().take(30).collect();
        let shown = if start.len() < text.len() { format!("{start} ...") } else { start };
        return Err(ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {kind}): couldn't get version/kind; json parse error: json: cannot unmarshal {found} into Go struct field .{field} of type string ({shown})"
        )));
    }
    Ok(())
}

/// Checks `apiVersion`/`kind` of a request body against the resource, filling them when absent.
pub fn check_type_meta(info: &ResourceInfo, obj: &mut Value, expect_kind: &str, expect_api_version: &str) -> ApiResult<()> {
    let Some(map) = obj.as_object_mut() else {
        return Err(ApiError::bad_request("the request body must be an object"));
    };
    match map.get("apiVersion").and_then(Value::as_str) {
        Some(v) if !v.is_empty() && v != expect_api_version => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version ({expect_api_version})"
            )))
        }
        _ => {
            map.insert("apiVersion".into(), json!(expect_api_version));
        }
    }
    match map.get("kind").and_then(Value::as_str) {
        Some(k) if !k.is_empty() && k != expect_kind => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({expect_kind}) for {}",
                info.resource
            )))
        }
        _ => {
            map.insert("kind".into(), json!(expect_kind));
        }
    }
    Ok(())
}

/// Decodes through the kind's typed schema (unknown fields dropped), reports the unknown fields
/// and the `duplicates` found in the body per `fieldValidation` (Strict: one 400 naming them
/// all, unknown ones first, as Kubernetes words it), normalizes what Kubernetes' decoding does
/// (quantities in canonical form, empty reference names left out) and
/// applies defaults, as Kubernetes decodes
/// a request's object before mutating admission.
pub fn decode(info: &ResourceInfo, obj: Value, validation: FieldValidation, duplicates: &[String], warnings: &mut Vec<String>) -> ApiResult<Value> {
    let decoded = (info.ops.decode)(info, obj).map_err(ApiError::BadRequest)?;
    let problems: Vec<String> = decoded
        .unknown_fields
        .iter()
        .map(|f| format!("unknown field \"{f}\""))
        .chain(duplicates.iter().map(|f| format!("duplicate field \"{f}\"")))
        .collect();
    if !problems.is_empty() {
        match validation {
            FieldValidation::Strict => {
                return Err(ApiError::StrictDecoding { message: format!("strict decoding error: {}", problems.join(", ")) });
            }
            FieldValidation::Warn => warnings.extend(problems),
            FieldValidation::Ignore => {}
        }
    }
    let mut obj = decoded.object;
    if let Some(message) = crate::protobuf::kind_message(info) {
        crate::registry::kinds::canonical::canonicalize(message, &mut obj);
    }
    (info.ops.default)(info, &mut obj);
    Ok(obj)
}

/// Validates an object (an update against the stored object `old`), as Kubernetes does after
/// mutating admission: 422 with every problem found.
pub fn validate(info: &ResourceInfo, obj: &Value, old: Option<&Value>) -> ApiResult<()> {
    let mut causes = meta::validate(info, obj);
    if old.is_some() && !causes.is_empty() {
        // Kubernetes checks an updated object's labels and annotations four times (twice in
        // its generic update path, twice in a kind's update validation) and reports each
        // problem as often: the problems found above, repeated (nothing is walked again).
        let again: Vec<Cause> = causes.iter().filter(|c| c.field.starts_with("metadata.labels") || c.field.starts_with("metadata.annotations")).cloned().collect();
        for _ in 0..3 {
            causes.extend(again.iter().cloned());
        }
    }
    causes.extend((info.ops.validate)(info, obj, old));
    causes.extend(crate::registry::kinds::enums::check(info, obj));
    if !causes.is_empty() {
        return Err(info.invalid(meta::meta_str(obj, "name").unwrap_or_default(), causes));
    }
    Ok(())
}

/// The paths (`spec.replicas`, `spec.containers[0].name`) of keys a JSON body repeats within
/// one object, in document order. A body that does not parse has none (it is refused anyway).
pub fn duplicate_fields(body: &[u8]) -> Vec<String> {
    let found = RefCell::new(Vec::new());
    let mut de = serde_json::Deserializer::from_slice(body);
    let _ = Walk { path: String::new(), found: &found }.deserialize(&mut de);
    found.into_inner()
}

/// Visits every key of a JSON document, recording repeated ones.
struct Walk<'a> {
    path: String,
    found: &'a RefCell<Vec<String>>,
}

impl Walk<'_> {
    fn child(&self, segment: &str) -> String {
        if self.path.is_empty() || segment.starts_with('[') { format!("{}{segment}", self.path) } else { format!("{}.{segment}", self.path) }
    }
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = self.child(&key);
            if !seen.insert(key) {
                self.found.borrow_mut().push(path.clone());
            }
            map.next_value_seed(Walk { path, found: self.found })?;
        }
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        while seq.next_element_seed(Walk { path: self.child(&format!("[{i}]")), found: self.found })?.is_some() {
            i += 1;
        }
        Ok(())
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_are_found_with_their_paths_in_document_order() {
        let body = br#"{"spec": {"unknownField": 1, "replicas": 2, "replicas": 3, "template": {"spec": {"containers": [{"name": "a", "name": "b"}]}}}, "spec": {}}"#;
        assert_eq!(duplicate_fields(body), vec!["spec.replicas", "spec.template.spec.containers[0].name", "spec"]);
        assert!(duplicate_fields(br#"{"a": [1, {"b": null}], "c": true}"#).is_empty());
        assert!(duplicate_fields(b"{not json").is_empty());
    }
}
