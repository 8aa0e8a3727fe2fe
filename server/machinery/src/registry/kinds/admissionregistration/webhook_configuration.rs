//! Mutating and validating webhook configurations: defaults, each webhook's checks (a fully
//! qualified unique name, side effects, timeout, selectors, client, review versions, match
//! conditions that give a bool), and kubectl's columns.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::expr::admission::{declarations, definitions};
use crate::expr::types::Ty;
use crate::registry::kinds::fields::{age, col, duplicate, invalid, items, label_selector, required, set, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// Validating webhook configurations.
pub const VALIDATING: Strategy = Strategy { default: validating_defaults, validate, columns: COLUMNS, cells, warnings: Some(crate::registry::kinds::warnings::static_suffix), ..Strategy::NONE };

/// Mutating webhook configurations: also called again after later mutations only if asked.
pub const MUTATING: Strategy = Strategy { default: mutating_defaults, validate, columns: COLUMNS, cells, warnings: Some(crate::registry::kinds::warnings::static_suffix), ..Strategy::NONE };

/// The AdmissionReview versions this server can send.
const REVIEW_VERSIONS: &[&str] = &["v1", "v1beta1"];

pub fn validate(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let mut names = Vec::new();
    for (i, hook) in obj["webhooks"].as_array().into_iter().flatten().enumerate() {
        let at = format!("webhooks[{i}]");
        webhook(hook, &at, &mut out);
        review_versions(&hook["admissionReviewVersions"], &format!("{at}.admissionReviewVersions"), &mut out);
        let name = &hook["name"];
        if name.as_str().is_some_and(|n| !n.is_empty()) {
            if names.contains(&name) {
                out.push(duplicate(format!("{at}.name"), name));
            } else {
                names.push(name);
            }
        }
    }
    out
}

fn webhook(hook: &Value, at: &str, out: &mut Vec<Cause>) {
    let name = hook["name"].as_str().unwrap_or_default();
    if name.is_empty() {
        out.push(Cause::required(format!("{at}.name")));
    } else if !crate::meta::is_dns_subdomain(name) {
        out.push(Cause::invalid(format!("{at}.name"), name, crate::meta::DNS1123_SUBDOMAIN));
    } else if name.split('.').count() < 3 {
        out.push(Cause::invalid(format!("{at}.name"), name, "should be a domain with at least three segments separated by dots"));
    }
    if hook["sideEffects"].is_null() {
        out.push(required(format!("{at}.sideEffects"), "must specify one of None, NoneOnDryRun"));
    }
    let timeout = &hook["timeoutSeconds"];
    if timeout.as_i64().is_some_and(|t| !(1..=30).contains(&t)) {
        out.push(invalid(format!("{at}.timeoutSeconds"), timeout, "the timeout value must be between 1 and 30 seconds"));
    }
    for selector in ["namespaceSelector", "objectSelector"] {
        if hook[selector].is_object() {
            label_selector(&hook[selector], &format!("{at}.{selector}"), out);
        }
    }
    out.extend(crate::webhook::client_config::validate(&hook["clientConfig"], &format!("{at}.clientConfig")));
    let vars = declarations(hook, &Ty::Dyn, Ty::Dyn, &definitions());
    super::validating_policy::expressions(&hook["matchConditions"], &format!("{at}.matchConditions"), &vars, out);
}

/// At least one version, each a DNS-1035 label and listed once, one of them one this server
/// sends.
fn review_versions(versions: &Value, at: &str, out: &mut Vec<Cause>) {
    let list = versions.as_array().map_or(&[][..], Vec::as_slice);
    if list.is_empty() {
        out.push(required(at, &format!("must specify one of {}", REVIEW_VERSIONS.join(", "))));
        return;
    }
    for (i, v) in list.iter().enumerate() {
        if list[..i].contains(v) {
            out.push(invalid(format!("{at}[{i}]"), v, "duplicate version"));
        } else if v.as_str().is_none_or(|s| !crate::meta::is_dns_label(s, 63, true)) {
            out.push(invalid(format!("{at}[{i}]"), v, crate::meta::DNS1035_LABEL));
        }
    }
    if !list.iter().any(|v| v.as_str().is_some_and(|s| REVIEW_VERSIONS.contains(&s))) {
        out.push(invalid(at, versions, &format!("must include at least one of {}", REVIEW_VERSIONS.join(", "))));
    }
}

/// Each webhook's defaults: equivalent versions match, empty selectors, rules of any scope, a
/// 10 s timeout.
fn validating_defaults(obj: &mut Value) {
    for hook in obj.get_mut("webhooks").and_then(Value::as_array_mut).into_iter().flatten() {
        set(hook, "matchPolicy", json!("Equivalent"));
        set(hook, "namespaceSelector", json!({}));
        set(hook, "objectSelector", json!({}));
        set(hook, "timeoutSeconds", json!(10));
        set(hook, "failurePolicy", json!("Fail"));
        for rule in hook.get_mut("rules").and_then(Value::as_array_mut).into_iter().flatten() {
            set(rule, "scope", json!("*"));
        }
    }
}

fn mutating_defaults(obj: &mut Value) {
    validating_defaults(obj);
    for hook in obj.get_mut("webhooks").and_then(Value::as_array_mut).into_iter().flatten() {
        set(hook, "reinvocationPolicy", json!("Never"));
    }
}

pub const COLUMNS: &[Column] = &[col("Webhooks", "integer", 0), AGE];

pub fn cells(obj: &Value) -> Vec<Value> {
    vec![json!(items(&obj["webhooks"])), age(obj)]
}
