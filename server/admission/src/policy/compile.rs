//! An admission policy compiled once: its match constraints, parameter kind, match
//! conditions, variables, and validations and audit annotations (ValidatingAdmissionPolicy)
//! or mutations (MutatingAdmissionPolicy), each expression checked against the variables
//! Kubernetes gives policies. An expression that does not compile stays an error, which the
//! policy's failure policy decides on when the policy applies.

use serde_json::{json, Value};

use machinery::expr::Expression;

use super::authorizer::Authorizer;

/// One validation: the expression that must hold and what to say when it does not.
pub struct Validation {
    pub expression: Result<Expression, String>,
    pub message: Option<String>,
    pub message_expression: Option<Result<Expression, String>>,
    /// `Invalid` unless the policy says `Forbidden`, `Unauthorized` or `RequestEntityTooLarge`.
    pub reason: &'static str,
}

/// How a mutation's result changes the object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    /// An `Object{...}` merged into the object as server-side apply merges a configuration.
    ApplyConfiguration,
    /// A list of `JSONPatch{...}` operations (RFC 6902).
    JsonPatch,
}

pub struct Mutation {
    pub patch_type: PatchType,
    pub expression: Result<Expression, String>,
}

pub struct Policy {
    pub name: String,
    /// `failurePolicy: Fail` (the default): errors refuse the write; `Ignore`: they are skipped.
    pub fail_closed: bool,
    pub constraints: Value,
    /// `apiVersion` and `kind` of the parameter objects, if the policy takes any.
    pub param_kind: Option<(String, String)>,
    pub conditions: Vec<(String, Result<Expression, String>)>,
    pub variables: Vec<(String, Result<Expression, String>)>,
    pub validations: Vec<Validation>,
    /// `auditAnnotations`: keys and the expressions of their values (a string, or null for none).
    pub audit_annotations: Vec<(String, Result<Expression, String>)>,
    pub mutations: Vec<Mutation>,
    /// `reinvocationPolicy: IfNeeded`: run again when a later mutation changed the object.
    pub reinvoke: bool,
}

/// The variables every policy expression may name, with every optional part present.
fn sample(variables: &[String]) -> Vec<(&'static str, Value)> {
    let vars: serde_json::Map<String, Value> = variables.iter().map(|v| (v.clone(), Value::Null)).collect();
    vec![
        ("object", json!({})),
        ("oldObject", json!({})),
        ("params", json!({})),
        ("namespaceObject", json!({})),
        ("request", json!({"kind": {}, "resource": {}, "userInfo": {}, "operation": "", "name": "", "namespace": ""})),
        ("variables", Value::Object(vars)),
        ("authorizer", Authorizer::sample()),
    ]
}

fn compile(source: &str, names: &[String], want: Option<&str>) -> Result<Expression, String> {
    let sample = sample(names);
    let bound: Vec<(&str, &Value)> = sample.iter().map(|(k, v)| (*k, v)).collect();
    Expression::compile_with(source, &bound, want, Some(&Authorizer::for_compiling()))
}

fn reason_of(v: &Value) -> &'static str {
    match v.as_str() {
        Some("Forbidden") => "Forbidden",
        Some("Unauthorized") => "Unauthorized",
        Some("RequestEntityTooLarge") => "RequestEntityTooLarge",
        _ => "Invalid",
    }
}

impl Policy {
    pub fn compile(obj: &Value) -> Policy {
        let spec = &obj["spec"];
        let names: Vec<String> = spec["variables"].as_array().into_iter().flatten().filter_map(|v| v["name"].as_str().map(String::from)).collect();
        // The entries of `list` as (their `key` field, their `expression` field compiled).
        let named = |list: &Value, key: &str, expression: &str, want: Option<&str>| -> Vec<(String, Result<Expression, String>)> {
            list.as_array()
                .into_iter()
                .flatten()
                .map(|e| (e[key].as_str().unwrap_or_default().to_string(), compile(e[expression].as_str().unwrap_or_default(), &names, want)))
                .collect()
        };
        let variables = named(&spec["variables"], "name", "expression", None);
        let conditions = named(&spec["matchConditions"], "name", "expression", Some("bool"));
        let validations = spec["validations"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|v| Validation {
                expression: compile(v["expression"].as_str().unwrap_or_default(), &names, Some("bool")),
                message: v["message"].as_str().filter(|m| !m.is_empty()).map(String::from),
                message_expression: v["messageExpression"].as_str().filter(|m| !m.is_empty()).map(|m| compile(m, &names, Some("string"))),
                reason: reason_of(&v["reason"]),
            })
            .collect();
        let audit_annotations = named(&spec["auditAnnotations"], "key", "valueExpression", None);
        let mutations = spec["mutations"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| {
                let (patch_type, source) = match m["patchType"].as_str() {
                    Some("JSONPatch") => (PatchType::JsonPatch, &m["jsonPatch"]["expression"]),
                    _ => (PatchType::ApplyConfiguration, &m["applyConfiguration"]["expression"]),
                };
                Mutation { patch_type, expression: compile(source.as_str().unwrap_or_default(), &names, None) }
            })
            .collect();
        let param_kind = spec["paramKind"]["kind"].as_str().map(|k| (spec["paramKind"]["apiVersion"].as_str().unwrap_or_default().to_string(), k.to_string()));
        Policy {
            name: obj["metadata"]["name"].as_str().unwrap_or_default().to_string(),
            fail_closed: spec["failurePolicy"].as_str() != Some("Ignore"),
            constraints: spec["matchConstraints"].clone(),
            param_kind,
            conditions,
            variables,
            validations,
            audit_annotations,
            mutations,
            reinvoke: spec["reinvocationPolicy"].as_str() == Some("IfNeeded"),
        }
    }
}
