//! The schema unions of CustomResourceDefinitions (`JSONSchemaPropsOrBool`, `-OrArray`,
//! `-OrStringArray`): one JSON value (`true` or a schema; a schema or a list of them; a schema or
//! a list of names) that Protobuf carries as a message with a field per alternative.

use serde_json::{json, Map, Value};

const OR_BOOL: &str = "apiextensions-apiserver.pkg.apis.apiextensions.v1.JsonSchemaPropsOrBool";
const OR_ARRAY: &str = "apiextensions-apiserver.pkg.apis.apiextensions.v1.JsonSchemaPropsOrArray";
const OR_STRING_ARRAY: &str = "apiextensions-apiserver.pkg.apis.apiextensions.v1.JsonSchemaPropsOrStringArray";

/// The message form of the union `name`'s JSON value; `None` when `name` is not a union.
pub fn to_message(name: &str, value: &Value) -> Option<Value> {
    Some(match (name, value) {
        (OR_BOOL, Value::Bool(b)) => json!({"allows": b}),
        (OR_BOOL, schema) => json!({"allows": true, "schema": schema}),
        (OR_ARRAY, Value::Array(schemas)) => json!({"jSonSchemas": schemas}),
        (OR_STRING_ARRAY, Value::Array(names)) => json!({"property": names}),
        (OR_ARRAY | OR_STRING_ARRAY, schema) => json!({"schema": schema}),
        _ => return None,
    })
}

/// The JSON value of the union `name` decoded as `message`; `None` when `name` is not a union.
pub fn from_message(name: &str, message: &Map<String, Value>) -> Option<Value> {
    let schema = message.get("schema").filter(|s| s.is_object()).cloned();
    let list = |key: &str| message.get(key).filter(|l| l.as_array().is_some_and(|a| !a.is_empty())).cloned();
    Some(match name {
        OR_BOOL => schema.unwrap_or_else(|| Value::Bool(message.get("allows").and_then(Value::as_bool).unwrap_or(false))),
        OR_ARRAY => list("jSonSchemas").or(schema).unwrap_or(Value::Null),
        OR_STRING_ARRAY => list("property").or(schema).unwrap_or(Value::Null),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_come_back_as_they_went() {
        for (name, value) in [
            (OR_BOOL, json!(true)),
            (OR_BOOL, json!(false)),
            (OR_BOOL, json!({"type": "string"})),
            (OR_ARRAY, json!({"type": "string"})),
            (OR_ARRAY, json!([{"type": "string"}, {"type": "integer"}])),
            (OR_STRING_ARRAY, json!(["a", "b"])),
            (OR_STRING_ARRAY, json!({"type": "object"})),
        ] {
            let message = to_message(name, &value).unwrap();
            let bytes = crate::protobuf::encode::message(name, &value).unwrap();
            assert_eq!(crate::protobuf::decode::message(name, &bytes).unwrap(), value, "{name} via {message}");
        }
        assert!(to_message("api.core.v1.Pod", &json!({})).is_none());
        // Raw JSON values (a schema's `default`, `enum`, `example`) go through as they are.
        let schema = json!({"type": "string", "default": "54f76737", "enum": ["a", 1, {"b": null}]});
        let name = "apiextensions-apiserver.pkg.apis.apiextensions.v1.JsonSchemaProps";
        let bytes = crate::protobuf::encode::message(name, &schema).unwrap();
        assert_eq!(crate::protobuf::decode::message(name, &bytes).unwrap(), schema);
    }
}
