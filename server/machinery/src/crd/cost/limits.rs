//! Definition-time costs: a schema's estimated rule costs against Kubernetes' limits, with its
//! causes and messages.

use super::{EXPRESSION_LIMIT, SCHEMA_LIMIT};
use crate::crd::schema::{Additional, Structural};
use crate::error::Cause;

/// The estimated costs of a schema's rules against Kubernetes' limits: each rule's cost (times
/// the times it may run) and each messageExpression's against the per-expression limit, their
/// total against the schema's. `path` is the schema's (`...openAPIV3Schema`).
pub fn check_schema(schema: &Structural, path: &str) -> Vec<Cause> {
    let mut tally = Tally::default();
    let mut causes = Vec::new();
    check_node(schema, path, Some(1), &mut tally, &mut causes);
    if tally.total > SCHEMA_LIMIT {
        for (at, _) in &tally.most_expensive {
            causes.push(forbidden(at, "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"));
        }
        causes.push(forbidden(path, &exceeds("x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema", tally.total, SCHEMA_LIMIT)));
    }
    causes
}

/// The children first, then the node's rules, as Kubernetes reports them; `cardinality`: how
/// many times the node may occur, unbounded when `None`.
fn check_node(node: &Structural, path: &str, cardinality: Option<u64>, tally: &mut Tally, causes: &mut Vec<Cause>) {
    let below = cardinality.and_then(|c| repeats(node).map(|r| c.saturating_mul(r)));
    for (key, child) in &node.properties {
        check_node(child, &format!("{path}.properties[{key}]"), below, tally, causes);
    }
    if let Some(Additional::Schema(child)) = &node.additional_properties {
        check_node(child, &format!("{path}.additionalProperties"), below, tally, causes);
    }
    if let Some(items) = node.items.as_deref() {
        check_node(items, &format!("{path}.items"), below, tally, causes);
    }
    for (i, rule) in node.rules.iter().enumerate() {
        let at = format!("{path}.x-kubernetes-validations[{i}]");
        let times = cardinality.unwrap_or_else(|| rule.program.cost.max_cardinality());
        let cost = rule.program.cost.estimated().saturating_mul(times);
        if cost > EXPRESSION_LIMIT {
            causes.push(forbidden(&format!("{at}.rule"), &exceeds("estimated rule cost", cost, EXPRESSION_LIMIT)));
        }
        tally.observe(format!("{at}.rule"), cost);
        if let Some(message) = &rule.message {
            let cost = message.cost.estimated();
            if cost > EXPRESSION_LIMIT {
                causes.push(forbidden(&format!("{at}.messageExpression"), &exceeds("estimated messageExpression cost", cost, EXPRESSION_LIMIT)));
            }
            tally.observe(format!("{at}.messageExpression"), cost);
        }
    }
}

/// How many times each child of `node` may occur per occurrence of `node`: a list's items and a
/// map's values by their bound (none: unbounded), an object's properties once.
fn repeats(node: &Structural) -> Option<u64> {
    match node.type_.as_str() {
        "object" if node.additional_properties.is_some() => node.max_properties,
        "array" => node.max_items,
        _ => Some(1),
    }
}

/// The schema's total estimated cost, and its (at most 4) dearest expressions of at least 1% of
/// the schema's limit.
#[derive(Default)]
struct Tally {
    total: u64,
    most_expensive: Vec<(String, u64)>,
}

impl Tally {
    fn observe(&mut self, path: String, cost: u64) {
        self.total = self.total.saturating_add(cost);
        if cost < SCHEMA_LIMIT / 100 {
            return;
        }
        self.most_expensive.push((path, cost));
        self.most_expensive.sort_by_key(|(_, cost)| std::cmp::Reverse(*cost));
        self.most_expensive.truncate(4);
    }
}

fn forbidden(field: &str, message: &str) -> Cause {
    Cause::new("FieldValueForbidden", field, format!("Forbidden: {message}"))
}

/// Kubernetes' words for a cost over its limit.
fn exceeds(what: &str, cost: u64, limit: u64) -> String {
    let by = cost as f64 / limit as f64;
    let by = if by > 100.0 {
        "more than 100x".to_string()
    } else if by < 1.5 {
        format!("{by:.6}x")
    } else {
        format!("{by:.1}x")
    };
    format!("{what} exceeds budget by factor of {by} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)")
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::super::testing::{array, string};
    use super::*;

    fn causes(schema: Value) -> Vec<String> {
        let s = Structural::compile(&schema).unwrap();
        check_schema(&s, "spec.validation.openAPIV3Schema").into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    #[test]
    fn definitions_over_the_limits_are_refused() {
        // A rule on a node inside an unbounded list runs once per item that fits in a request.
        let nested = |max_items: Option<u64>| {
            let mut outer = array(array(string(None), max_items), max_items);
            outer["items"]["x-kubernetes-validations"] = json!([{"rule": "self.all(s, s == 'string constant')"}]);
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"x": outer}}}})
        };
        let refused = causes(nested(None));
        assert_eq!(refused[0], "spec.validation.openAPIV3Schema.properties[spec].properties[x].items.x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)");
        assert_eq!(refused[1], "spec.validation.openAPIV3Schema.properties[spec].properties[x].items.x-kubernetes-validations[0].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema");
        assert!(refused[2].starts_with("spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x"), "{refused:?}");
        assert!(causes(nested(Some(100))).is_empty());

        // With maxItems only on the outer list: 10 × (1,048,575 × 6 + 2).
        let mut outer = array(array(string(Some(10)), None), Some(10));
        outer["items"]["x-kubernetes-validations"] = json!([{"rule": "self.all(s, s == 'string constant')"}]);
        let got = causes(json!({"type": "object", "properties": {"x": outer}}));
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(got[0].contains("estimated rule cost exceeds budget by factor of 6.3x"), "{got:?}");

        // A messageExpression whose sizes are unknown.
        let f = json!({"type": "object", "properties": {"f": {"type": "array", "items": string(None),
            "x-kubernetes-validations": [{"rule": "true", "messageExpression": "string(self[0]) + string(self[1]) + string(self[2])"}]}}});
        let got = causes(f);
        let at = "spec.validation.openAPIV3Schema.properties[f].x-kubernetes-validations[0].messageExpression";
        assert_eq!(got[0], format!("{at}: Forbidden: estimated messageExpression cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"));
        assert_eq!(got[1], format!("{at}: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"));
        assert!(got[2].starts_with("spec.validation.openAPIV3Schema: Forbidden:"), "{got:?}");
    }

    #[test]
    fn factors_are_worded_as_kubernetes_words_them() {
        assert!(exceeds("estimated rule cost", 12_500_000, EXPRESSION_LIMIT).contains("factor of 1.250000x"));
        assert!(exceeds("estimated rule cost", 25_000_000, EXPRESSION_LIMIT).contains("factor of 2.5x"));
        assert!(exceeds("estimated rule cost", u64::MAX, EXPRESSION_LIMIT).contains("factor of more than 100x"));
    }
}
