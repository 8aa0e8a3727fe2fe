//! Roles and ClusterRoles: rule and aggregation-rule validation.

use serde_json::Value;

use crate::error::Cause;
use crate::registry::kinds::fields::{invalid, label_selector, required};
use crate::registry::kinds::Strategy;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    validate,
    ..Strategy::NONE
};

/// Roles and ClusterRoles: every rule names verbs, and either resources in API groups or (for
/// ClusterRoles only) non-resource URLs, never both.
pub fn validate(obj: &Value) -> Vec<Cause> {
    let namespaced = obj["kind"] == "Role";
    let mut out = Vec::new();
    let present = |v: &Value| v.as_array().is_some_and(|a| !a.is_empty());
    for (i, r) in obj["rules"].as_array().into_iter().flatten().enumerate() {
        let at = |f: &str| format!("rules[{i}].{f}");
        if !present(&r["verbs"]) {
            out.push(Cause::new("FieldValueRequired", at("verbs"), "Required value: verbs must contain at least one value"));
        }
        if present(&r["nonResourceURLs"]) {
            let urls = &r["nonResourceURLs"];
            if namespaced {
                out.push(Cause::new("FieldValueInvalid", at("nonResourceURLs"), format!("Invalid value: {urls}: namespaced rules cannot apply to non-resource URLs")));
            }
            if present(&r["apiGroups"]) || present(&r["resources"]) {
                out.push(Cause::new("FieldValueInvalid", at("nonResourceURLs"), format!("Invalid value: {urls}: rules cannot apply to both regular resources and non-resource URLs")));
            }
            continue;
        }
        if !present(&r["apiGroups"]) {
            out.push(Cause::new("FieldValueRequired", at("apiGroups"), "Required value: resource rules must supply at least one api group"));
        }
        if !present(&r["resources"]) {
            out.push(Cause::new("FieldValueRequired", at("resources"), "Required value: resource rules must supply at least one resource"));
        }
    }
    if let Some(rule) = obj.get("aggregationRule").filter(|r| !r.is_null()) {
        if !present(&rule["clusterRoleSelectors"]) {
            out.push(required("aggregationRule.clusterRoleSelectors", "at least one clusterRoleSelector required if aggregationRule is non-nil"));
        }
        for (i, sel) in rule["clusterRoleSelectors"].as_array().into_iter().flatten().enumerate() {
            let at = format!("aggregationRule.clusterRoleSelectors[{i}]");
            if !label_selector(sel, &at, &mut out) {
                out.push(invalid(at, &Value::Null, "invalid label selector."));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rules() {
        let role = json!({"kind": "Role", "rules": [{"verbs": ["get"], "nonResourceURLs": ["/x"]}, {"verbs": []}]});
        let fields: Vec<String> = validate(&role).into_iter().map(|c| c.field).collect();
        assert_eq!(fields, ["rules[0].nonResourceURLs", "rules[1].verbs", "rules[1].apiGroups", "rules[1].resources"]);
        let cluster_role = json!({"kind": "ClusterRole", "rules": [{"verbs": ["get"], "nonResourceURLs": ["/x"]}]});
        assert!(validate(&cluster_role).is_empty());
    }
}
