//! A webhook authorizer's `matchConditions`: CEL expressions over `request` (the
//! SubjectAccessReview spec, v1), all of which must be true for the webhook to be asked.

use serde_json::json;

use machinery::expr::Expression;

/// Compiled expressions, in the configured order.
pub struct MatchConditions {
    expressions: Vec<Expression>,
}

impl MatchConditions {
    /// Compiles every expression (they were validated when the configuration was read).
    pub fn compile(expressions: &[String]) -> Result<MatchConditions, String> {
        let expressions = expressions.iter().map(|e| Self::compile_one(e)).collect::<Result<_, String>>()?;
        Ok(MatchConditions { expressions })
    }

    /// Compiles one expression: it may name only `request`, and must give a bool.
    pub fn compile_one(expression: &str) -> Result<Expression, String> {
        Expression::compile(expression, &[("request", &sample_request())], Some("bool"))
    }

    /// Whether every expression holds for `request`; the first false one decides. Errors of
    /// the others are joined.
    pub fn matches(&self, request: &serde_json::Value) -> Result<bool, String> {
        let mut errors = Vec::new();
        for e in &self.expressions {
            match e.eval_bool(&[("request", request)], None) {
                Ok(true) => {}
                Ok(false) => return Ok(false),
                Err(e) => errors.push(format!("cel evaluation error: {e}")),
            }
        }
        match errors.len() {
            0 => Ok(true),
            1 => Err(errors.remove(0)),
            _ => Err(format!("[{}]", errors.join(", "))),
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
