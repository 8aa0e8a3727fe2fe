//! A webhook authorizer's `matchConditions`: CEL expressions over `request` (the
//! SubjectAccessReview spec, v1), all of which must be true for the webhook to be asked.

use std::sync::Arc;

use cel::{Context, ExecutionError, Program, Value};
use serde_json::json;

/// Compiled expressions, in the configured order.
pub struct MatchConditions {
    programs: Vec<(String, Program)>,
}

impl MatchConditions {
    /// Compiles every expression (they were validated when the configuration was read).
    pub fn compile(expressions: &[String]) -> Result<MatchConditions, String> {
        let programs = expressions
            .iter()
            .map(|e| Ok((e.clone(), Self::compile_one(e)?)))
            .collect::<Result<_, String>>()?;
        Ok(MatchConditions { programs })
    }

    /// Compiles one expression and checks it against a request with every field set: it may
    /// name only `request`, and must give a bool.
    pub fn compile_one(expression: &str) -> Result<Program, String> {
        let program = Program::compile(expression).map_err(|e| format!("compilation failed: {e}"))?;
        match evaluate(&program, &sample_request()) {
            Ok(Value::Bool(_)) => Ok(program),
            Ok(other) => Err(format!("compilation failed: must evaluate to bool but got {:?}", other.type_of())),
            Err(ExecutionError::UndeclaredReference(name)) => Err(format!("compilation failed: undeclared reference to '{name}'")),
            Err(_) => Ok(program),
        }
    }

    /// Whether every expression holds for `request`; the first false one decides. Errors of
    /// the others are joined.
    pub fn matches(&self, request: &serde_json::Value) -> Result<bool, String> {
        let mut errors = Vec::new();
        for (expression, program) in &self.programs {
            match evaluate(program, request) {
                Ok(Value::Bool(true)) => {}
                Ok(Value::Bool(false)) => return Ok(false),
                Ok(other) => errors.push(format!(
                    "cel evaluation error: expression '{expression}' eval result type should be bool but got {:?}",
                    other.type_of()
                )),
                Err(e) => errors.push(format!("cel evaluation error: expression '{expression}' resulted in error: {e}")),
            }
        }
        match errors.len() {
            0 => Ok(true),
            1 => Err(errors.remove(0)),
            _ => Err(format!("[{}]", errors.join(", "))),
        }
    }
}

fn evaluate(program: &Program, request: &serde_json::Value) -> Result<Value, ExecutionError> {
    let mut context = Context::default();
    context.add_variable_from_value("request", to_value(request));
    program.execute(&context)
}

/// A JSON value as CEL sees it.
fn to_value(v: &serde_json::Value) -> Value {
    match v {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => Value::Int(i),
            None => Value::Float(n.as_f64().unwrap_or_default()),
        },
        serde_json::Value::String(s) => Value::String(Arc::new(s.clone())),
        serde_json::Value::Array(a) => Value::List(Arc::new(a.iter().map(to_value).collect())),
        serde_json::Value::Object(o) => {
            let map: std::collections::HashMap<String, Value> = o.iter().map(|(k, v)| (k.clone(), to_value(v))).collect();
            Value::from(map)
        }
    }
}

/// The shape CEL sees, with every optional part present.
fn sample_request() -> serde_json::Value {
    json!({
        "user": "", "uid": "", "groups": [], "extra": {},
        "resourceAttributes": {
            "namespace": "", "verb": "", "group": "", "version": "", "resource": "", "subresource": "", "name": "",
            "fieldSelector": {"rawSelector": ""}, "labelSelector": {"rawSelector": ""},
        },
        "nonResourceAttributes": {"verb": "", "path": ""},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(user: &str, namespace: Option<&str>) -> serde_json::Value {
        let mut r = json!({"user": user, "uid": "", "groups": ["system:authenticated"], "extra": {}});
        match namespace {
            Some(ns) => r["resourceAttributes"] = json!({"namespace": ns, "verb": "get", "group": "", "version": "v1", "resource": "pods", "subresource": "", "name": ""}),
            None => r["nonResourceAttributes"] = json!({"verb": "get", "path": "/healthz"}),
        }
        r
    }

    #[test]
    fn every_condition_must_hold() {
        let m = MatchConditions::compile(&[
            "has(request.resourceAttributes)".into(),
            "request.resourceAttributes.namespace == 'kube-system'".into(),
            "!('system:masters' in request.groups)".into(),
        ])
        .unwrap();
        assert_eq!(m.matches(&request("alice", Some("kube-system"))), Ok(true));
        assert_eq!(m.matches(&request("alice", Some("default"))), Ok(false));
        assert_eq!(m.matches(&request("alice", None)), Ok(false));
    }

    #[test]
    fn errors_are_reported_not_matched() {
        let m = MatchConditions::compile(&["request.resourceAttributes.namespace == 'x'".into()]).unwrap();
        let err = m.matches(&request("alice", None)).unwrap_err();
        assert!(err.starts_with("cel evaluation error: expression 'request.resourceAttributes.namespace == 'x'' resulted in error"), "{err}");
    }

    #[test]
    fn compilation_refuses_bad_expressions() {
        for (e, want) in [
            ("request.user ==", "compilation failed"),
            ("request.user", "must evaluate to bool"),
            ("foo == 'x'", "undeclared reference to 'foo'"),
        ] {
            let err = MatchConditions::compile_one(e).err().unwrap_or_else(|| panic!("{e} compiled"));
            assert!(err.contains(want), "{e}: {err}");
        }
        assert!(MatchConditions::compile_one("request.groups.exists(g, g == 'dev')").is_ok());
        assert!(MatchConditions::compile_one("request.extra['scopes'][0] == 'x'").is_ok());
    }
}
