//! `x-kubernetes-validations`: CEL rules on a schema node, compiled once per definition with
//! `self` (and `oldSelf`) typed by a sample of the node, so that a syntax error or a field the
//! schema does not have (`undefined field 'z'`) refuses the definition. At write time each rule
//! runs with `self` the node's value; a transition rule (naming `oldSelf`) only on an update
//! with an old value (`optionalOldSelf`: always, `oldSelf` an optional); a failure is reported
//! at the node (or its `fieldPath`) with the rule's message, `messageExpression` or
//! `failed rule: RULE`, and its `reason`.
//!
//! Each rule and messageExpression also carries its cost ([`super::cost`]): before it runs, its
//! cost on the value is charged to the object's [`Budget`]; one over the per-call limit or the
//! budget is not evaluated, is reported as Kubernetes reports it, and no rule runs after it.

use std::sync::Arc;

use cel::objects::OptionalValue;
use serde::Deserialize;
use serde_json::Value;

use super::cost::{Budget, Decl, Overrun, Plan};
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
    pub(super) program: Compiled,
    pub(super) message: Option<Compiled>,
    /// Whether it names `oldSelf`.
    pub transition: bool,
}

/// A rule's or messageExpression's program, and its cost.
#[derive(Debug)]
pub(super) struct Compiled {
    expression: Expression,
    pub(super) cost: Plan,
}

/// Compiles a node's rules against `sample` (the node's shape) and `decl` (its declaration, for
/// costs); an error names the rule's index and what is wrong.
pub fn compile(specs: &[RuleSpec], sample: &Value, exact: bool, decl: Option<Arc<Decl>>) -> Result<Vec<Rule>, (usize, &'static str, String)> {
    specs
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let transition = names_old_self(&spec.rule);
            let compiled = |source: &str, want: &str| -> Result<Compiled, String> {
                let expression = check(source, sample, transition, spec.optional_old_self, exact, want)?;
                Ok(Compiled { expression, cost: Plan::new(source, decl.clone(), spec.optional_old_self)? })
            };
            let program = compiled(&spec.rule, "bool").map_err(|e| (i, "rule", e))?;
            let message = spec.message_expression.as_deref().map(|m| compiled(m, "string")).transpose().map_err(|e| (i, "messageExpression", e))?;
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

/// Parses `source` and evaluates it once on the sample: a syntax error, a name other than
/// `self` and `oldSelf`, a field the sample does not have (when the sample is `exact`: no maps
/// or preserved fields below) or a result of another type than `want` (`bool` for a rule,
/// `string` for a messageExpression) is a compilation error, worded as Kubernetes words it.
fn check(source: &str, sample: &Value, transition: bool, optional: bool, exact: bool, want: &str) -> Result<Expression, String> {
    // A messageExpression's errors say so; a rule's do not.
    let (part, wrong_type) = match want {
        "bool" => ("", "cel expression must evaluate to a bool"),
        _ => ("messageExpression ", "messageExpression must evaluate to a string"),
    };
    if let Some(e) = expr::syntax_error(source) {
        return Err(format!("{part}{e}"));
    }
    let e = Expression::parse(source)?;
    let mut vars = vec![("self", expr::to_value(sample))];
    if transition {
        vars.push(("oldSelf", old_value(Some(sample), optional)));
    }
    match e.eval_values(vars) {
        Ok(v) if expr::type_name(&v) != want => Err(wrong_type.to_string()),
        Err(cel::ExecutionError::NoSuchKey(k)) if exact => Err(format!("{part}compilation failed: ERROR: <input>: undefined field '{k}'")),
        Err(cel::ExecutionError::UndeclaredReference(name)) => {
            let issues = expr::check_names(source, &["self", "oldSelf"]);
            Err(format!("{part}{}", issues.unwrap_or_else(|| format!("compilation failed: undeclared reference to '{name}'"))))
        }
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

/// What a value was before the write.
#[derive(Debug, Clone, Copy)]
pub enum Prior<'v> {
    /// Nothing correlates with it (a create, a new item).
    None,
    /// The correlated old value, which differs.
    Changed(&'v Value),
    /// The same: only transition rules run (the others ratchet), `oldSelf` equal to `self`.
    Unchanged,
}

/// Runs `rules` on `value` at `path` (its schema type `type_`), given what it was before. Each
/// evaluation is charged to `budget` first.
pub fn evaluate(rules: &[Rule], path: &str, type_: &str, value: &Value, prior: Prior, budget: &Budget, causes: &mut Vec<Cause>) {
    let old = match prior {
        Prior::None => None,
        Prior::Changed(old) => Some(old),
        Prior::Unchanged => Some(value),
    };
    for rule in rules {
        if budget.exhausted() {
            return;
        }
        if matches!(prior, Prior::Unchanged) && !rule.transition {
            continue;
        }
        if rule.transition && old.is_none() && !rule.spec.optional_old_self {
            continue;
        }
        let old = old.filter(|_| rule.transition);
        if let Err(overrun) = budget.charge(rule.program.cost.actual(value, old)) {
            let detail = match overrun {
                Overrun::Budget => OUT_OF_BUDGET.to_string(),
                Overrun::CallLimit => {
                    format!("'{CANCELLED}': no further validation rules will be run due to call cost exceeds limit for rule: {}", rule.error_string())
                }
            };
            causes.push(failure(None, path, type_, &detail));
            return;
        }
        let mut vars = vec![("self", expr::to_value(value))];
        if rule.transition {
            vars.push(("oldSelf", old_value(old, rule.spec.optional_old_self)));
        }
        let field = match &rule.spec.field_path {
            Some(f) => format!("{path}{f}"),
            None => path.to_string(),
        };
        match rule.program.expression.eval_values(vars.clone()) {
            Ok(cel::Value::Bool(true)) => {}
            Ok(cel::Value::Bool(false)) => match failure_message(rule, vars, value, old, budget) {
                Ok(message) => causes.push(failure(rule.spec.reason.as_deref(), &field, type_, &message)),
                Err(detail) => {
                    causes.push(failure(None, &field, type_, &detail));
                    return;
                }
            },
            Ok(other) => causes.push(failure(None, &field, type_, &format!("rule did not evaluate to a bool: {}", expr::type_name(&other)))),
            Err(e) => causes.push(failure(None, &field, type_, &format!("{} evaluation error: {}", rule.spec.rule, expr::message(&e)))),
        }
    }
}

/// Kubernetes' words when the budget runs out, and when cel-go cancels an evaluation.
const OUT_OF_BUDGET: &str = "validation failed due to running out of cost budget, no further validation rules will be run";
const CANCELLED: &str = "operation cancelled: actual cost limit exceeded";

impl Rule {
    /// How Kubernetes names the rule in errors: its message, else its source.
    fn error_string(&self) -> &str {
        self.spec.message.as_deref().unwrap_or(&self.spec.rule).trim()
    }
}

/// A failed rule's message: its messageExpression's (charged to `budget`) when that gives a
/// non-blank string, else its message or `failed rule: RULE`. An overrun is the error's detail:
/// no rule runs after it.
fn failure_message(rule: &Rule, vars: Vec<(&str, cel::Value)>, value: &Value, old: Option<&Value>, budget: &Budget) -> Result<String, String> {
    let evaluated = match &rule.message {
        Some(m) => {
            budget.charge(m.cost.actual(value, old)).map_err(|overrun| match overrun {
                Overrun::Budget => "messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run".to_string(),
                Overrun::CallLimit => {
                    format!("no further validation rules will be run due to call cost exceeds limit for messageExpression: {:?}", m.expression.source)
                }
            })?;
            m.expression.eval_values(vars).ok().and_then(|v| if let cel::Value::String(s) = v { Some(s.to_string()) } else { None })
        }
        None => None,
    };
    Ok(evaluated.filter(|s| !s.trim().is_empty()).or_else(|| rule.spec.message.clone()).unwrap_or_else(|| format!("failed rule: {}", rule.spec.rule)))
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
        let err = compile(&[spec("self = 42")], &sample, true, None).unwrap_err();
        assert!(err.2.contains("Syntax error"), "{}", err.2);
        let err = compile(&[spec("self.z == 100")], &sample, true, None).unwrap_err();
        assert!(err.2.contains("undefined field 'z'"), "{}", err.2);
        let err = compile(&[spec("self.x")], &sample, true, None).unwrap_err();
        assert_eq!(err, (0, "rule", "cel expression must evaluate to a bool".to_string()));
        let err = compile(&[spec("self.x == other")], &sample, true, None).unwrap_err();
        assert_eq!(err.2, "compilation failed: ERROR: <input>:1:11: undeclared reference to 'other' (in container '')\n | self.x == other\n | ..........^");
        let message = RuleSpec { message_expression: Some("'x is ' +".into()), ..spec("self.x > 0") };
        let err = compile(&[message], &sample, true, None).unwrap_err();
        assert!(err.2.starts_with("messageExpression compilation failed: ERROR: <input>:1:10: Syntax error: mismatched input '<EOF>'"), "{}", err.2);
        assert!(compile(&[spec("self.x + self.y > 0"), spec("self > oldSelf")], &json!(0), true, None).is_ok());
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
            None,
        )
        .unwrap();
        let mut causes = Vec::new();
        evaluate(&rules, "spec", "object", &json!({"x": 3, "y": -5}), Prior::None, &Budget::default(), &mut causes);
        let got: Vec<String> = causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
        assert_eq!(got, ["spec: Invalid value: \"object\": failed rule: self.x + self.y > 0", "spec: Invalid value: \"object\": x is 3"]);
        causes.clear();
        evaluate(&rules, "spec", "object", &json!({"x": 12, "y": 1}), Prior::Changed(&json!({"x": 13, "y": 1})), &Budget::default(), &mut causes);
        let got: Vec<String> = causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
        assert_eq!(got, ["spec.x: Forbidden: x must be small", "spec: Invalid value: \"object\": failed rule: self.x >= oldSelf.x"]);
        // Unchanged: only the transition rule runs.
        causes.clear();
        evaluate(&rules, "spec", "object", &json!({"x": 3, "y": -5}), Prior::Unchanged, &Budget::default(), &mut causes);
        assert!(causes.is_empty(), "{causes:?}");
    }

    #[test]
    fn optional_old_self_is_none_on_create() {
        let rules = compile(&[RuleSpec { optional_old_self: true, ..spec("!oldSelf.hasValue() || self != oldSelf.value()") }], &json!(""), true, None).unwrap();
        let mut causes = Vec::new();
        evaluate(&rules, "field", "string", &json!("a"), Prior::None, &Budget::default(), &mut causes);
        assert!(causes.is_empty(), "{causes:?}");
        evaluate(&rules, "field", "string", &json!("a"), Prior::Unchanged, &Budget::default(), &mut causes);
        assert_eq!(causes.len(), 1);
    }

    /// The rules of a node holding a list of integers, bounded as the schema allows.
    fn list_rules(specs: &[RuleSpec]) -> Vec<Rule> {
        let schema = json!({"type": "object", "properties": {"items": {"type": "array", "maxItems": 1000, "items": {"type": "integer"}}}});
        let node = crate::crd::schema::Structural::compile(&schema).unwrap();
        compile(specs, &json!({"items": [0]}), true, Decl::of(&node, false).map(Arc::new)).unwrap()
    }

    fn messages(causes: &[Cause]) -> Vec<String> {
        causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    #[test]
    fn rules_too_dear_for_their_value_are_refused_unevaluated() {
        let rules = list_rules(&[spec("self.items.all(x, self.items.all(y, y == x))"), spec("size(self.items) < 0")]);
        let value = |n: usize| json!({"items": vec![20; n]});
        let mut causes = Vec::new();
        evaluate(&rules, "spec", "object", &value(100), Prior::None, &Budget::default(), &mut causes);
        assert_eq!(messages(&causes), ["spec: Invalid value: \"object\": failed rule: size(self.items) < 0"]);
        // 725 × 725 comparisons: over the per-call limit; no rule runs after it.
        causes.clear();
        let budget = Budget::default();
        evaluate(&rules, "spec", "object", &value(725), Prior::None, &budget, &mut causes);
        assert_eq!(
            messages(&causes),
            ["spec: Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: self.items.all(x, self.items.all(y, y == x))"]
        );
        evaluate(&rules, "other", "object", &value(1), Prior::None, &budget, &mut causes);
        assert_eq!(causes.len(), 1);
    }

    #[test]
    fn the_budget_runs_out_over_many_values() {
        let rules = list_rules(&[RuleSpec { message: Some("all equal".into()), ..spec("self.items.all(x, self.items.all(y, y == x))") }]);
        let value = json!({"items": vec![20; 400]});
        let (budget, mut causes) = (Budget::default(), Vec::new());
        let mut runs = 0;
        while !budget.exhausted() {
            evaluate(&rules, &format!("spec[{runs}]"), "object", &value, Prior::None, &budget, &mut causes);
            runs += 1;
        }
        // Each run costs about 960,000: ten fit in the budget, the eleventh does not.
        assert_eq!(runs, 11);
        assert_eq!(
            messages(&causes),
            ["spec[10]: Invalid value: \"object\": validation failed due to running out of cost budget, no further validation rules will be run"]
        );
    }

    #[test]
    fn message_expressions_are_charged_too() {
        let message = "self.items.map(x, self.items.filter(y, y == x).size()).sum() > 0 ? 'dear' : 'cheap'";
        let rules = list_rules(&[RuleSpec { message_expression: Some(message.into()), field_path: Some(".items".into()), ..spec("size(self.items) < 0") }]);
        let mut causes = Vec::new();
        evaluate(&rules, "spec", "object", &json!({"items": [1, 2]}), Prior::None, &Budget::default(), &mut causes);
        assert_eq!(messages(&causes), ["spec.items: Invalid value: \"object\": dear"]);
        causes.clear();
        evaluate(&rules, "spec", "object", &json!({"items": vec![1; 1000]}), Prior::None, &Budget::default(), &mut causes);
        assert_eq!(messages(&causes), [format!("spec.items: Invalid value: \"object\": no further validation rules will be run due to call cost exceeds limit for messageExpression: {message:?}")]);
    }
}
