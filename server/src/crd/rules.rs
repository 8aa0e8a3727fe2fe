//! `x-kubernetes-validations`: CEL rules on a schema node, compiled once per definition with
//! `self` (and `oldSelf`) typed by a sample of the node, so that a syntax error or a field the
//! schema does not have (`undefined field 'z'`) refuses the definition. At write time each rule
//! runs with `self` the node's value; a transition rule (naming `oldSelf`) only on an update
//! with an old value (`optionalOldSelf`: always, `oldSelf` an optional); a failure is reported
//! at the node (or its `fieldPath`) with the rule's message, `messageExpression` or
//! `failed rule: RULE`, and its `reason`.

use std::sync::Arc;

use cel::objects::OptionalValue;
use serde::Deserialize;
use serde_json::Value;

use crate::error::Cause;
use crate::expr::{self, Expression};

/// One rule as the definition gives it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RuleSpec {
    pub rule: String,
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub message_expression: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub field_path: Option<String>,
    #[serde(default)]
    pub optional_old_self: bool,
}

/// A compiled rule.
#[derive(Debug)]
pub struct Rule {
    spec: RuleSpec,
    program: Expression,
    message: Option<Expression>,
    /// Whether it names `oldSelf`.
    pub transition: bool,
}

/// Compiles a node's rules against `sample` (the node's shape); an error names the rule's index
/// and what is wrong.
pub fn compile(specs: &[RuleSpec], sample: &Value, exact: bool) -> Result<Vec<Rule>, (usize, &'static str, String)> {
    specs
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let transition = names_old_self(&spec.rule);
            let program = check(&spec.rule, sample, transition, spec.optional_old_self, exact, "bool").map_err(|e| (i, "rule", e))?;
            let message = match &spec.message_expression {
                Some(m) => Some(check(m, sample, transition, spec.optional_old_self, exact, "string").map_err(|e| (i, "messageExpression", e))?),
                None => None,
            };
            Ok(Rule { spec: spec.clone(), program, message, transition })
        })
        .collect()
}

fn names_old_self(rule: &str) -> bool {
    rule.match_indices("oldSelf").any(|(at, _)| {
        let before = rule[..at].chars().next_back();
        let after = rule[at + "oldSelf".len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_') && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

/// Parses `source` and evaluates it once on the sample: a syntax error, a field the sample does
/// not have (when the sample is `exact`: no maps or preserved fields below) or a result of another
/// type is a compilation error, worded as Kubernetes words it.
fn check(source: &str, sample: &Value, transition: bool, optional: bool, exact: bool, want: &str) -> Result<Expression, String> {
    let e = Expression::parse(source).map_err(|e| format!("compilation failed: ERROR: <input>: {}", e.trim_start_matches("compilation failed: ")))?;
    let mut vars = vec![("self", expr::to_value(sample))];
    if transition {
        vars.push(("oldSelf", old_value(Some(sample), optional)));
    }
    match e.eval_values(vars) {
        Ok(v) if expr::type_name(&v) != want => Err(format!("compilation failed: ERROR: <input>: expected {want}, got {}", expr::type_name(&v))),
        Err(cel::ExecutionError::NoSuchKey(k)) if exact => Err(format!("compilation failed: ERROR: <input>: undefined field '{k}'")),
        Err(cel::ExecutionError::UndeclaredReference(name)) => Err(format!("compilation failed: ERROR: <input>: undeclared reference to '{name}'")),
        _ => Ok(e),
    }
}

/// `oldSelf` as the rule sees it: the old value, or an optional of it.
fn old_value(old: Option<&Value>, optional: bool) -> cel::Value {
    match (old, optional) {
        (Some(v), false) => expr::to_value(v),
        (Some(v), true) => cel::Value::Opaque(Arc::new(OptionalValue::of(expr::to_value(v)))),
        (None, _) => cel::Value::Opaque(Arc::new(OptionalValue::none())),
    }
}

/// Runs `rules` on `value` at `path` (its schema type `type_`); `old` is the correlated old value
/// on an update. `unchanged`: the value equals the old one, so only transition rules run (the
/// others ratchet).
pub fn evaluate(rules: &[Rule], path: &str, type_: &str, value: &Value, old: Option<&Value>, unchanged: bool, causes: &mut Vec<Cause>) {
    for rule in rules {
        if unchanged && !rule.transition {
            continue;
        }
        if rule.transition && old.is_none() && !rule.spec.optional_old_self {
            continue;
        }
        let mut vars = vec![("self", expr::to_value(value))];
        if rule.transition {
            vars.push(("oldSelf", old_value(old, rule.spec.optional_old_self)));
        }
        let field = match &rule.spec.field_path {
            Some(f) => format!("{path}{f}"),
            None => path.to_string(),
        };
        match rule.program.eval_values(vars.clone()) {
            Ok(cel::Value::Bool(true)) => {}
            Ok(cel::Value::Bool(false)) => {
                let message = rule
                    .message
                    .as_ref()
                    .and_then(|m| m.eval_values(vars).ok())
                    .and_then(|v| if let cel::Value::String(s) = v { Some(s.to_string()) } else { None })
                    .filter(|s| !s.trim().is_empty())
                    .or_else(|| rule.spec.message.clone())
                    .unwrap_or_else(|| format!("failed rule: {}", rule.spec.rule));
                causes.push(failure(rule.spec.reason.as_deref(), &field, type_, &message));
            }
            Ok(other) => causes.push(failure(None, &field, type_, &format!("rule did not evaluate to a bool: {}", expr::type_name(&other)))),
            Err(e) => causes.push(failure(None, &field, type_, &format!("{} evaluation error: {e}", rule.spec.rule))),
        }
    }
}

fn failure(reason: Option<&str>, field: &str, type_: &str, message: &str) -> Cause {
    match reason {
        Some("FieldValueForbidden") => Cause::new("FieldValueForbidden", field, format!("Forbidden: {message}")),
        Some("FieldValueRequired") => Cause::new("FieldValueRequired", field, format!("Required value: {message}")),
        Some("FieldValueDuplicate") => Cause::new("FieldValueDuplicate", field, format!("Duplicate value: \"{type_}\"")),
        _ => Cause::new("FieldValueInvalid", field, format!("Invalid value: \"{type_}\": {message}")),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec(rule: &str) -> RuleSpec {
        RuleSpec { rule: rule.into(), ..Default::default() }
    }

    #[test]
    fn definitions_with_bad_rules_are_refused() {
        let sample = json!({"x": 0, "y": 0});
        let err = compile(&[spec("self = 42")], &sample, true).unwrap_err();
        assert!(err.2.contains("Syntax error"), "{}", err.2);
        let err = compile(&[spec("self.z == 100")], &sample, true).unwrap_err();
        assert!(err.2.contains("undefined field 'z'"), "{}", err.2);
        let err = compile(&[spec("self.x")], &sample, true).unwrap_err();
        assert_eq!((err.0, err.1), (0, "rule"));
        assert!(compile(&[spec("self.x + self.y > 0"), spec("self > oldSelf")], &json!(0), true).is_ok());
    }

    #[test]
    fn rules_report_failures_with_their_messages() {
        let rules = compile(
            &[
                spec("self.x + self.y > 0"),
                RuleSpec { message: Some("x must be small".into()), reason: Some("FieldValueForbidden".into()), field_path: Some(".x".into()), ..spec("self.x < 10") },
                RuleSpec { message_expression: Some("'x is ' + string(self.x)".into()), ..spec("self.x != 3") },
                spec("self.x >= oldSelf.x"),
            ],
            &json!({"x": 0, "y": 0}),
            true,
        )
        .unwrap();
        let mut causes = Vec::new();
        evaluate(&rules, "spec", "object", &json!({"x": 3, "y": -5}), None, false, &mut causes);
        let got: Vec<String> = causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
        assert_eq!(got, ["spec: Invalid value: \"object\": failed rule: self.x + self.y > 0", "spec: Invalid value: \"object\": x is 3"]);
        causes.clear();
        evaluate(&rules, "spec", "object", &json!({"x": 12, "y": 1}), Some(&json!({"x": 13, "y": 1})), false, &mut causes);
        let got: Vec<String> = causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
        assert_eq!(got, ["spec.x: Forbidden: x must be small", "spec: Invalid value: \"object\": failed rule: self.x >= oldSelf.x"]);
        // Unchanged: only the transition rule runs.
        causes.clear();
        evaluate(&rules, "spec", "object", &json!({"x": 3, "y": -5}), Some(&json!({"x": 3, "y": -5})), true, &mut causes);
        assert!(causes.is_empty(), "{causes:?}");
    }

    #[test]
    fn optional_old_self_is_none_on_create() {
        let rules = compile(&[RuleSpec { optional_old_self: true, ..spec("!oldSelf.hasValue() || self != oldSelf.value()") }], &json!(""), true).unwrap();
        let mut causes = Vec::new();
        evaluate(&rules, "field", "string", &json!("a"), None, false, &mut causes);
        assert!(causes.is_empty(), "{causes:?}");
        evaluate(&rules, "field", "string", &json!("a"), Some(&json!("a")), true, &mut causes);
        assert_eq!(causes.len(), 1);
    }
}
