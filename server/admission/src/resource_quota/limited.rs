//! The quota configuration's `limitedResources` (`ResourceQuotaConfiguration`): resources whose
//! consumption needs a quota that covers it. A write consuming a limited resource (a usage name
//! containing one of `matchContains`) in a namespace without a quota limiting that name is
//! refused, as is an object in one of `matchScopes` that no quota's scopes cover (a
//! PriorityClass kept for the cluster's own pods, say).

use std::collections::BTreeSet;

use serde_json::Value;

use super::evaluators::Evaluator;
use crate::resource_list::ResourceList;

/// One `limitedResources` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Limited {
    api_group: String,
    resource: String,
    match_contains: Vec<String>,
    match_scopes: Vec<Value>,
}

/// The entries of the plugin's configuration (none without one).
pub fn parse(config: Option<&Value>) -> Result<Vec<Limited>, String> {
    let strings = |v: &Value| v.as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect();
    let entries = config.map(|c| &c["limitedResources"]).and_then(Value::as_array).into_iter().flatten();
    entries
        .map(|e| {
            let resource = e["resource"].as_str().filter(|r| !r.is_empty()).ok_or("ResourceQuota: a limitedResources entry names no resource")?;
            Ok(Limited {
                api_group: e["apiGroup"].as_str().unwrap_or_default().to_string(),
                resource: resource.to_string(),
                match_contains: strings(&e["matchContains"]),
                match_scopes: e["matchScopes"].as_array().cloned().unwrap_or_default(),
            })
        })
        .collect()
}

/// The usage names of `usage` that only a covering quota lets the write of `group`/`resource`
/// consume.
pub fn names(limited: &[Limited], group: &str, resource: &str, usage: &ResourceList) -> BTreeSet<String> {
    let entries = limited.iter().filter(|l| l.api_group == group && l.resource == resource);
    let consumed = |l: &Limited| usage.iter().filter(|(_, v)| v.sign() > 0).map(|(k, _)| k).filter(|k| l.match_contains.iter().any(|m| k.contains(m.as_str()))).cloned().collect::<Vec<_>>();
    entries.flat_map(consumed).collect()
}

/// The `matchScopes` requirements (of every entry) the object meets.
pub fn scopes(limited: &[Limited], evaluator: &Evaluator, object: &Value) -> Vec<Value> {
    limited.iter().flat_map(|l| &l.match_scopes).filter(|s| evaluator.meets(s, object)).cloned().collect()
}

/// The limited scopes no quota scope of the same name covers, as Go prints such a list:
/// `[{PriorityClass In [cluster-services]}]`; `None` when all are covered.
pub fn uncovered(limited: &[Value], covered: &[Value]) -> Option<String> {
    let open: Vec<String> = limited
        .iter()
        .filter(|s| !covered.iter().any(|c| c["scopeName"] == s["scopeName"]))
        .map(|s| {
            let values: Vec<&str> = s["values"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            format!("{{{} {} [{}]}}", s["scopeName"].as_str().unwrap_or_default(), s["operator"].as_str().unwrap_or_default(), values.join(" "))
        })
        .collect();
    (!open.is_empty()).then(|| format!("[{}]", open.join(" ")))
}
