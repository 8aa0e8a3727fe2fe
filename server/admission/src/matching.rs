//! Whether a write falls under a policy's `matchConstraints`, a binding's `matchResources` or a
//! webhook's rules and selectors:
//! resource rules (groups, versions, resources and subresources, operations, scope, names),
//! excluded rules, and the namespace and object label selectors.

use serde_json::Value;

use crate::Request;
use machinery::selector::label_selector_matches;

fn strings(v: &Value) -> Vec<&str> {
    v.as_array().into_iter().flatten().filter_map(Value::as_str).collect()
}

fn listed(list: &[&str], value: &str) -> bool {
    list.iter().any(|x| *x == "*" || *x == value)
}

/// `*` is every resource, `*/*` every resource and subresource, `pods/*` every subresource of
/// pods, `*/status` the status of every resource.
fn resource_listed(list: &[&str], resource: &str, sub: &str) -> bool {
    list.iter().any(|r| {
        let (res, rsub) = r.split_once('/').unwrap_or((r, ""));
        (res == "*" || res == resource) && (rsub == sub || (rsub == "*" && !sub.is_empty()) || (*r == "*/*"))
    })
}

fn rule_matches(rule: &Value, r: &Request<'_>) -> bool {
    let info = r.req.info;
    let op = r.operation.as_str();
    let scope_ok = match rule["scope"].as_str().unwrap_or("*") {
        "Cluster" => !info.namespaced,
        "Namespaced" => info.namespaced,
        _ => true,
    };
    let names = strings(&rule["resourceNames"]);
    listed(&strings(&rule["operations"]), op)
        && listed(&strings(&rule["apiGroups"]), info.group)
        && listed(&strings(&rule["apiVersions"]), info.version)
        && resource_listed(&strings(&rule["resources"]), info.resource, r.req.subresource.as_deref().unwrap_or_default())
        && scope_ok
        && (names.is_empty() || names.contains(&name_of(r).as_str()))
}

/// The name of the object written.
pub fn name_of(r: &Request<'_>) -> String {
    r.req
        .name
        .clone()
        .or_else(|| r.object.and_then(|o| o["metadata"]["name"].as_str()).map(String::from))
        .unwrap_or_default()
}

/// Whether `constraints` (a MatchResources object) select the write, given the namespace the
/// object is in (`None` for cluster-scoped objects).
pub fn matches(constraints: &Value, r: &Request<'_>, namespace: Option<&Value>) -> bool {
    let included = constraints["resourceRules"].as_array().into_iter().flatten().any(|rule| rule_matches(rule, r));
    let excluded = constraints["excludeResourceRules"].as_array().into_iter().flatten().any(|rule| rule_matches(rule, r));
    included && !excluded && selectors_match(constraints, r, namespace)
}

/// The namespace and object selectors alone (a binding without resource rules uses only these).
pub fn selectors_match(constraints: &Value, r: &Request<'_>, namespace: Option<&Value>) -> bool {
    let ns_selector = &constraints["namespaceSelector"];
    let namespace_ok = if r.req.info.resource == "namespaces" && r.req.info.group.is_empty() {
        // A Namespace is matched by its own labels.
        [r.object, r.old].into_iter().flatten().any(|o| label_selector_matches(ns_selector, o["metadata"]["labels"].as_object()))
    } else {
        match namespace {
            Some(ns) => label_selector_matches(ns_selector, ns["metadata"]["labels"].as_object()),
            None => true,
        }
    };
    let obj_selector = &constraints["objectSelector"];
    let objects: Vec<&Value> = [r.object, r.old].into_iter().flatten().collect();
    let object_ok = objects.is_empty() || objects.iter().any(|o| label_selector_matches(obj_selector, o["metadata"]["labels"].as_object()));
    namespace_ok && object_ok
}
