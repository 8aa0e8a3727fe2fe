//! The admission steps every write runs before storage: type metadata, typed decoding with
//! field validation, defaults, and validation.

use serde_json::{json, Value};

use crate::error::{ApiError, ApiResult};
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

/// Decodes through the kind's typed schema (unknown fields dropped, reported per
/// `fieldValidation`), applies defaults and validates. Returns the object to store.
pub fn admit(info: &ResourceInfo, obj: Value, validation: FieldValidation, warnings: &mut Vec<String>) -> ApiResult<Value> {
    let decoded = (info.ops.decode)(obj).map_err(ApiError::BadRequest)?;
    if !decoded.unknown_fields.is_empty() {
        match validation {
            FieldValidation::Strict => {
                let list: Vec<String> = decoded.unknown_fields.iter().map(|f| format!("unknown field \"{f}\"")).collect();
                return Err(ApiError::StrictDecoding { message: format!("strict decoding error: {}", list.join(", ")) });
            }
            FieldValidation::Warn => {
                warnings.extend(decoded.unknown_fields.iter().map(|f| format!("unknown field \"{f}\"")));
            }
            FieldValidation::Ignore => {}
        }
    }
    let mut obj = decoded.object;
    (info.ops.default)(&mut obj);
    let mut causes = meta::validate(info, &obj);
    causes.extend((info.ops.validate)(&obj));
    if !causes.is_empty() {
        return Err(ApiError::Invalid {
            group: info.group.to_string(),
            kind: info.kind.to_string(),
            name: meta::meta_str(&obj, "name").unwrap_or_default().to_string(),
            causes,
        });
    }
    Ok(obj)
}
