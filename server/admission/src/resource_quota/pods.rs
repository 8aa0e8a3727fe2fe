//! What a pod uses of quota, as Kubernetes' pod evaluator counts it: always `count/pods`; unless
//! it has finished (Succeeded, Failed) or its grace period has run out, `pods` and its requests
//! and limits (overhead included) under the quota's names (`cpu` and `requests.cpu`,
//! `limits.cpu`, the same for memory and ephemeral storage, huge pages, `requests.` of extended
//! resources); and the containers a quota on CPU or memory needs to name them.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Duration, Utc};
use serde_json::Value;

use crate::pod_resources::{total, Side};
use crate::resource_list::{add_into, read, ResourceList};
use machinery::expr::amount::Amount;

/// The resource names the evaluator counts (besides the prefixed and extended ones).
pub const RESOURCES: &[&str] = &[
    "count/pods",
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
];

/// Prefixes of counted names (huge pages).
pub const PREFIXES: &[&str] = &["hugepages-", "requests.hugepages-"];

/// The prefix of resources a device class stands for.
const DEVICE_CLASS: &str = "deviceclass.resource.kubernetes.io/";

/// A name outside Kubernetes' own (`example.com/gpu`).
fn extended(name: &str) -> bool {
    name.contains('/') && !name.contains("kubernetes.io/") && !name.starts_with("requests.")
}

/// Whether a quota name is a request of an extended resource (`requests.example.com/gpu`).
pub fn extended_request(name: &str) -> bool {
    let native = !name.contains('/') || name.contains("kubernetes.io/");
    (!native || name.starts_with(&format!("requests.{DEVICE_CLASS}"))) && name.starts_with("requests.")
}

/// The quota names one set of requests and limits (a container's or a pod's) fills.
fn compute(requests: &ResourceList, limits: &ResourceList) -> ResourceList {
    let mut out = ResourceList::from([("pods".to_string(), Amount::count(1))]);
    for resource in ["cpu", "memory", "ephemeral-storage"] {
        if let Some(r) = requests.get(resource) {
            out.insert(resource.to_string(), r.clone());
            out.insert(format!("requests.{resource}"), r.clone());
        }
        if let Some(l) = limits.get(resource) {
            out.insert(format!("limits.{resource}"), l.clone());
        }
    }
    for (resource, r) in requests {
        if resource.starts_with("hugepages-") {
            out.insert(resource.clone(), r.clone());
            out.insert(format!("requests.{resource}"), r.clone());
        }
        if extended(resource) || resource.starts_with(DEVICE_CLASS) {
            out.insert(format!("requests.{resource}"), r.clone());
        }
    }
    out
}

/// Whether the pod still holds its resources: not finished, and not past its grace period.
fn holds_resources(pod: &Value) -> bool {
    if matches!(pod["status"]["phase"].as_str(), Some("Succeeded" | "Failed")) {
        return false;
    }
    let meta = &pod["metadata"];
    let deleted = meta["deletionTimestamp"].as_str().and_then(|t| t.parse::<DateTime<Utc>>().ok());
    match (deleted, meta["deletionGracePeriodSeconds"].as_i64()) {
        (Some(at), Some(grace)) => Utc::now() <= at + Duration::seconds(grace),
        _ => true,
    }
}

/// The pod's usage.
pub fn usage(pod: &Value) -> ResourceList {
    let mut out = ResourceList::from([("count/pods".to_string(), Amount::count(1))]);
    if holds_resources(pod) {
        add_into(&mut out, &compute(&total(pod, Side::Requests, true), &total(pod, Side::Limits, true)));
    }
    out
}

/// The names whose presence a quota requires of every container.
const REQUIRED: &[&str] = &["cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"];

/// Why the pod cannot be charged to a quota limiting `required`: the containers that do not
/// name a required resource (`must specify limits.cpu for: a,b; memory for: a`).
pub fn constraints(required: &[String], pod: &Value) -> Result<(), String> {
    let spec = &pod["spec"];
    if machinery::features::enabled("PodLevelResources") && ["requests", "limits"].iter().any(|s| spec["resources"][*s].as_object().is_some_and(|m| !m.is_empty())) {
        return Ok(());
    }
    let required: BTreeSet<&str> = required.iter().map(String::as_str).filter(|r| REQUIRED.contains(r)).collect();
    let mut missing: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for c in ["containers", "initContainers"].iter().flat_map(|l| spec[*l].as_array().into_iter().flatten()) {
        let has = compute(&read(&c["resources"]["requests"]), &read(&c["resources"]["limits"]));
        for r in required.iter().filter(|r| !has.contains_key(**r)) {
            missing.entry(r).or_default().insert(c["name"].as_str().unwrap_or_default());
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    let each: Vec<String> = missing.iter().map(|(r, names)| format!("{r} for: {}", names.iter().copied().collect::<Vec<_>>().join(","))).collect();
    Err(format!("must specify {}", each.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource_list::pretty;
    use serde_json::json;

    #[test]
    fn counts_requests_limits_and_extended_resources() {
        let pod = json!({"spec": {"containers": [
            {"name": "a", "resources": {"requests": {"cpu": "250m", "memory": "64Mi", "example.com/gpu": "1"}, "limits": {"memory": "128Mi"}}},
            {"name": "b", "resources": {"requests": {"cpu": "250m"}}},
        ]}});
        assert_eq!(
            pretty(&usage(&pod)),
            "count/pods=1,cpu=500m,limits.memory=128Mi,memory=64Mi,pods=1,requests.cpu=500m,requests.example.com/gpu=1,requests.memory=64Mi"
        );
        let done = json!({"spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}]}, "status": {"phase": "Succeeded"}});
        assert_eq!(pretty(&usage(&done)), "count/pods=1");
        let required = ["limits.cpu".to_string(), "memory".to_string(), "pods".to_string()];
        assert_eq!(constraints(&required, &pod).unwrap_err(), "must specify limits.cpu for: a,b; memory for: b");
        assert!(extended_request("requests.example.com/gpu") && !extended_request("requests.cpu") && !extended_request("example.com/gpu"));
    }
}
