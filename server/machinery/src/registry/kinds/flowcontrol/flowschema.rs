//! FlowSchemas: defaults, validation and kubectl's columns.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::registry::kinds::fields::{age, col, dns_label, dns_subdomain, forbidden, go_struct, invalid, path_segment, required, set, text_or_none, unsupported, AGE, DNS1123_LABEL};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    columns: COLUMNS,
    cells,
    default: defaults,
    validate,
    initial_status: Some(|| json!({})),
    ..Strategy::NONE
};

pub const COLUMNS: &[Column] = &[
    col("PriorityLevel", "string", 0),
    col("MatchingPrecedence", "string", 0),
    col("DistinguisherMethod", "string", 0),
    AGE,
    col("MissingPL", "string", 0),
];

pub fn cells(obj: &Value) -> Vec<Value> {
    let spec = &obj["spec"];
    let missing = obj["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Dangling")
        .and_then(|c| c["status"].as_str())
        .unwrap_or("?");
    vec![
        json!(spec["priorityLevelConfiguration"]["name"].as_str().unwrap_or_default()),
        json!(spec["matchingPrecedence"].as_i64().unwrap_or(1000)),
        text_or_none(&spec["distinguisherMethod"]["type"]),
        age(obj),
        json!(missing),
    ]
}

/// Kubernetes' default precedence.
pub fn defaults(obj: &mut Value) {
    if obj["spec"].is_object() {
        set(&mut obj["spec"], "matchingPrecedence", json!(1000));
    }
}

/// The highest matching precedence.
const MAX_PRECEDENCE: i64 = 10_000;

/// Verbs a rule may name (or `*` alone), in Kubernetes' sorted order.
const VERBS: &[&str] = &["create", "delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch"];

pub fn validate(obj: &Value) -> Vec<Cause> {
    let spec = &obj["spec"];
    let mut out = Vec::new();
    let precedence = &spec["matchingPrecedence"];
    let p = precedence.as_i64().unwrap_or(0);
    if p <= 0 {
        out.push(invalid("spec.matchingPrecedence", precedence, "must be a positive value"));
    }
    if p > MAX_PRECEDENCE {
        out.push(invalid("spec.matchingPrecedence", precedence, &format!("must not be greater than {MAX_PRECEDENCE}")));
    }
    if p == 1 && obj["metadata"]["name"] != "exempt" {
        out.push(invalid("spec.matchingPrecedence", precedence, "only the schema named 'exempt' may have matchingPrecedence 1"));
    }
    let method = &spec["distinguisherMethod"];
    if method.is_object() && !matches!(method["type"].as_str(), Some("ByNamespace" | "ByUser")) {
        let shown = go_struct(&[("Type", json!(method["type"].as_str().unwrap_or_default()).to_string())]);
        out.push(Cause::new("FieldValueNotSupported", "spec.distinguisherMethod.type", format!("Unsupported value: {shown}: supported values: \"ByNamespace\", \"ByUser\"")));
    }
    let level = &spec["priorityLevelConfiguration"]["name"];
    if level.as_str().is_none_or(str::is_empty) {
        out.push(required("spec.priorityLevelConfiguration.name", "must reference a priority level"));
    } else {
        path_segment(level, "spec.priorityLevelConfiguration.name", &mut out);
    }
    for (i, rule) in spec["rules"].as_array().into_iter().flatten().enumerate() {
        rule_with_subjects(rule, &format!("spec.rules[{i}]"), &mut out);
    }
    out
}

fn rule_with_subjects(rule: &Value, at: &str, out: &mut Vec<Cause>) {
    let subjects = rule["subjects"].as_array().map_or(&[][..], Vec::as_slice);
    if subjects.is_empty() {
        out.push(required(format!("{at}.subjects"), "subjects must contain at least one value"));
    }
    for (i, s) in subjects.iter().enumerate() {
        subject(s, &format!("{at}.subjects[{i}]"), out);
    }
    let resources = rule["resourceRules"].as_array().map_or(&[][..], Vec::as_slice);
    let non_resources = rule["nonResourceRules"].as_array().map_or(&[][..], Vec::as_slice);
    if resources.is_empty() && non_resources.is_empty() {
        out.push(required(at, "at least one of resourceRules and nonResourceRules has to be non-empty"));
    }
    for (i, r) in resources.iter().enumerate() {
        let at = format!("{at}.resourceRules[{i}]");
        verbs(&r["verbs"], &at, out);
        for (field, what) in [("apiGroups", "api group"), ("resources", "resource")] {
            match r[field].as_array().map_or(0, Vec::len) {
                0 => out.push(required(format!("{at}.{field}"), &format!("resource rules must supply at least one {what}"))),
                n if n > 1 && has_wildcard(&r[field]) => {
                    let plural = if field == "apiGroups" { "api groups" } else { "resources" };
                    out.push(invalid(format!("{at}.{field}"), &r[field], &format!("if '*' is present, must not specify other {plural}")));
                }
                _ => {}
            }
        }
        let namespaces = &r["namespaces"];
        if namespaces.as_array().is_none_or(Vec::is_empty) && r["clusterScope"] != true {
            out.push(required(format!("{at}.namespaces"), "resource rules that are not cluster scoped must supply at least one namespace"));
        } else if has_wildcard(namespaces) {
            if namespaces.as_array().map_or(0, Vec::len) > 1 {
                out.push(invalid(format!("{at}.namespaces"), namespaces, "if '*' is present, must not specify other namespaces"));
            }
        } else {
            for (j, ns) in namespaces.as_array().into_iter().flatten().enumerate() {
                if ns.as_str().is_some_and(|n| !crate::meta::is_dns_label(n, 63, false)) {
                    out.push(invalid(format!("{at}.namespaces[{j}]"), ns, &format!("each member of this list must be '*' or a DNS-1123 label; {DNS1123_LABEL}")));
                }
            }
        }
    }
    for (i, r) in non_resources.iter().enumerate() {
        let at = format!("{at}.nonResourceRules[{i}]");
        verbs(&r["verbs"], &at, out);
        let urls = &r["nonResourceURLs"];
        if urls.as_array().is_none_or(Vec::is_empty) {
            out.push(required(format!("{at}.nonResourceURLs"), "nonResourceURLs must contain at least one value"));
        } else if has_wildcard(urls) {
            if urls.as_array().map_or(0, Vec::len) > 1 {
                out.push(invalid(format!("{at}.nonResourceURLs"), urls, "if '*' is present, must not specify other non-resource URLs"));
            }
        } else {
            for (j, url) in urls.as_array().into_iter().flatten().enumerate() {
                if let Some(problem) = url_problem(url.as_str().unwrap_or_default()) {
                    out.push(invalid(format!("{at}.nonResourceURLs[{j}]"), url, problem));
                }
            }
        }
    }
}

fn has_wildcard(list: &Value) -> bool {
    list.as_array().is_some_and(|l| l.iter().any(|v| v == "*"))
}

fn verbs(verbs: &Value, at: &str, out: &mut Vec<Cause>) {
    let list = verbs.as_array().map_or(&[][..], Vec::as_slice);
    if list.is_empty() {
        out.push(required(format!("{at}.verbs"), "verbs must contain at least one value"));
    } else if has_wildcard(verbs) {
        if list.len() > 1 {
            out.push(invalid(format!("{at}.verbs"), verbs, "if '*' is present, must not specify other verbs"));
        }
    } else if list.iter().any(|v| !v.as_str().is_some_and(|v| VERBS.contains(&v))) {
        let supported: Vec<String> = VERBS.iter().map(|v| format!("\"{v}\"")).collect();
        out.push(Cause::new("FieldValueNotSupported", format!("{at}.verbs"), format!("Unsupported value: {verbs}: supported values: {}", supported.join(", "))));
    }
}

/// What is wrong with a non-resource URL of a rule: a path from the root, a `/*` suffix at most.
fn url_problem(path: &str) -> Option<&'static str> {
    if path.is_empty() {
        return Some("must not be empty");
    }
    if path == "/" {
        return None;
    }
    if !path.starts_with('/') {
        return Some("must start with slash");
    }
    if path.contains(' ') {
        return Some("must not contain white-space");
    }
    if path.contains("//") {
        return Some("must not contain double slash");
    }
    let stars = path.matches('*').count();
    (stars > 1 || (stars == 1 && !path.ends_with("/*"))).then_some("wildcard can only do suffix matching")
}

/// A subject names exactly the member its kind says.
fn subject(s: &Value, at: &str, out: &mut Vec<Cause>) {
    let kind = s["kind"].as_str().unwrap_or_default();
    let members = [("ServiceAccount", "serviceAccount"), ("User", "user"), ("Group", "group")];
    let Some(&(_, own)) = members.iter().find(|m| m.0 == kind) else {
        out.push(unsupported(format!("{at}.kind"), kind, &["Group", "ServiceAccount", "User"]));
        return;
    };
    let member = &s[own];
    if !member.is_object() {
        out.push(required(format!("{at}.{own}"), &format!("{own} is required when subject kind is '{kind}'")));
    } else if member["name"].as_str().is_none_or(str::is_empty) {
        out.push(required(format!("{at}.{own}.name"), ""));
    } else if kind == "ServiceAccount" && member["name"] != "*" {
        dns_subdomain(&member["name"], &format!("{at}.serviceAccount.name"), out);
    }
    if kind == "ServiceAccount" && member.is_object() {
        if member["namespace"].as_str().is_none_or(str::is_empty) {
            out.push(required(format!("{at}.serviceAccount.namespace"), "must specify namespace for service account"));
        } else {
            dns_label(&member["namespace"], &format!("{at}.serviceAccount.namespace"), out);
        }
    }
    for (other_kind, other) in members {
        if other != own && !s[other].is_null() {
            out.push(forbidden(format!("{at}.{other}"), &format!("{other} is forbidden when subject kind is not '{other_kind}'")));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row() {
        let fs = json!({"metadata": {"creationTimestamp": "t"}, "spec": {"priorityLevelConfiguration": {"name": "global-default"}, "matchingPrecedence": 9900,
            "distinguisherMethod": {"type": "ByUser"}}, "status": {"conditions": [{"type": "Dangling", "status": "False"}]}});
        assert_eq!(cells(&fs), vec![json!("global-default"), json!(9900), json!("ByUser"), json!("t"), json!("False")]);
    }
}
