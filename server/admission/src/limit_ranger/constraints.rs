//! The bounds a LimitRange sets, checked as LimitRanger checks them, with its messages: a
//! `Container` limit for each container and init container, a `Pod` limit for the pod's totals,
//! a `PersistentVolumeClaim` limit for a claim's storage request. Each limit's resources are
//! checked in name order (Kubernetes walks a map, in no fixed order).

use serde_json::Value;

use crate::pod_resources::{total, Side};
use crate::resource_list::{read, ResourceList};
use machinery::expr::amount::Amount;

/// resource.MaxMilliValue: beyond it, amounts are compared in whole units.
const MAX_MILLI: i64 = i64::MAX / 1000;

/// The request, limit and bound compared: in thousandths when all three allow it, else whole
/// units (each rounded up).
fn compared(request: Option<&Amount>, limit: Option<&Amount>, bound: &Amount) -> (i64, i64, i64) {
    let zero = Amount::zero();
    let (request, limit) = (request.unwrap_or(&zero), limit.unwrap_or(&zero));
    let whole = (request.scaled(0), limit.scaled(0), bound.scaled(0));
    if whole.0 <= MAX_MILLI && whole.1 <= MAX_MILLI && whole.2 <= MAX_MILLI {
        return (request.scaled(-3), limit.scaled(-3), bound.scaled(-3));
    }
    whole
}

fn min(kind: &str, resource: &str, bound: &Amount, requests: &ResourceList, limits: &ResourceList) -> Option<String> {
    let (request, limit) = (requests.get(resource), limits.get(resource));
    let (observed_request, observed_limit, enforced) = compared(request, limit, bound);
    let Some(request) = request else {
        return Some(format!("minimum {resource} usage per {kind} is {bound}.  No request is specified"));
    };
    if observed_request < enforced {
        return Some(format!("minimum {resource} usage per {kind} is {bound}, but request is {request}"));
    }
    match limit {
        Some(limit) if observed_limit < enforced => Some(format!("minimum {resource} usage per {kind} is {bound}, but limit is {limit}")),
        _ => None,
    }
}

fn max(kind: &str, resource: &str, bound: &Amount, requests: &ResourceList, limits: &ResourceList) -> Option<String> {
    let (request, limit) = (requests.get(resource), limits.get(resource));
    let (observed_request, observed_limit, enforced) = compared(request, limit, bound);
    let Some(limit) = limit else {
        return Some(format!("maximum {resource} usage per {kind} is {bound}.  No limit is specified"));
    };
    if observed_limit > enforced {
        return Some(format!("maximum {resource} usage per {kind} is {bound}, but limit is {limit}"));
    }
    match request {
        Some(request) if observed_request > enforced => Some(format!("maximum {resource} usage per {kind} is {bound}, but request is {request}")),
        _ => None,
    }
}

/// A claim has no limits: its request is what a maximum bounds.
fn max_request(kind: &str, resource: &str, bound: &Amount, requests: &ResourceList) -> Option<String> {
    let request = requests.get(resource);
    let (observed_request, _, enforced) = compared(request, None, bound);
    let Some(request) = request else {
        return Some(format!("maximum {resource} usage per {kind} is {bound}.  No request is specified"));
    };
    (observed_request > enforced).then(|| format!("maximum {resource} usage per {kind} is {bound}, but request is {request}"))
}

fn ratio(kind: &str, resource: &str, bound: &Amount, requests: &ResourceList, limits: &ResourceList) -> Option<String> {
    let (request, limit) = (requests.get(resource), limits.get(resource));
    let (observed_request, observed_limit, _) = compared(request, limit, bound);
    if request.is_none() || observed_request == 0 {
        return Some(format!("{resource} max limit to request ratio per {kind} is {bound}, but no request is specified or request is 0"));
    }
    if limit.is_none() || observed_limit == 0 {
        return Some(format!("{resource} max limit to request ratio per {kind} is {bound}, but no limit is specified or limit is 0"));
    }
    let shown = observed_limit as f64 / observed_request as f64;
    let (observed, allowed) = match bound.scaled(0) <= MAX_MILLI {
        true => (shown * 1000.0, bound.scaled(-3) as f64),
        false => (shown, bound.scaled(0) as f64),
    };
    (observed > allowed).then(|| format!("{resource} max limit to request ratio per {kind} is {bound}, but provided ratio is {shown:.6}"))
}

/// Each bound of `limit` (one entry of `spec.limits`) checked against one set of requests and
/// limits, min before max before ratio.
fn check(limit: &Value, kind: &str, requests: &ResourceList, limits: &ResourceList, out: &mut Vec<String>) {
    for (resource, bound) in read(&limit["min"]) {
        out.extend(min(kind, &resource, &bound, requests, limits));
    }
    for (resource, bound) in read(&limit["max"]) {
        out.extend(max(kind, &resource, &bound, requests, limits));
    }
    for (resource, bound) in read(&limit["maxLimitRequestRatio"]) {
        out.extend(ratio(kind, &resource, &bound, requests, limits));
    }
}

fn limits<'a>(range: &'a Value, kind: &'a str) -> impl Iterator<Item = &'a Value> {
    range["spec"]["limits"].as_array().into_iter().flatten().filter(move |l| l["type"] == kind)
}

/// What a pod breaks of the range's `Container` and `Pod` limits.
pub fn pod(range: &Value, pod: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for limit in range["spec"]["limits"].as_array().into_iter().flatten() {
        match limit["type"].as_str() {
            Some(kind @ "Container") => {
                for list in ["containers", "initContainers"] {
                    for c in pod["spec"][list].as_array().into_iter().flatten() {
                        check(limit, kind, &read(&c["resources"]["requests"]), &read(&c["resources"]["limits"]), &mut out);
                    }
                }
            }
            Some(kind @ "Pod") => check(limit, kind, &total(pod, Side::Requests, false), &total(pod, Side::Limits, false), &mut out),
            _ => {}
        }
    }
    out
}

/// What a claim's storage request breaks of the range's `PersistentVolumeClaim` limits.
pub fn claim(range: &Value, claim: &Value) -> Vec<String> {
    let kind = "PersistentVolumeClaim";
    let requests = read(&claim["spec"]["resources"]["requests"]);
    let mut out = Vec::new();
    for limit in limits(range, kind) {
        for (resource, bound) in read(&limit["min"]) {
            out.extend(min(kind, &resource, &bound, &requests, &ResourceList::new()));
        }
        for (resource, bound) in read(&limit["max"]) {
            out.extend(max_request(kind, &resource, &bound, &requests));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn range(limits: Value) -> Value {
        json!({"spec": {"limits": limits}})
    }

    fn container(requests: Value, limits: Value) -> Value {
        json!({"spec": {"containers": [{"name": "c", "resources": {"requests": requests, "limits": limits}}]}})
    }

    #[test]
    fn container_bounds_in_kubernetes_words() {
        let r = range(json!([{"type": "Container", "min": {"cpu": "100m"}, "max": {"memory": "1Gi"}, "maxLimitRequestRatio": {"cpu": "2"}}]));
        let p = container(json!({"cpu": "50m", "memory": "512Mi"}), json!({"cpu": "200m", "memory": "2Gi"}));
        assert_eq!(pod(&r, &p), [
            "minimum cpu usage per Container is 100m, but request is 50m",
            "maximum memory usage per Container is 1Gi, but limit is 2Gi",
            "cpu max limit to request ratio per Container is 2, but provided ratio is 4.000000",
        ]);
        let p = container(json!({}), json!({}));
        assert_eq!(pod(&r, &p), [
            "minimum cpu usage per Container is 100m.  No request is specified",
            "maximum memory usage per Container is 1Gi.  No limit is specified",
            "cpu max limit to request ratio per Container is 2, but no request is specified or request is 0",
        ]);
        let p = container(json!({"cpu": "100m", "memory": "1Gi"}), json!({"cpu": "200m", "memory": "1Gi"}));
        assert!(pod(&r, &p).is_empty());
    }

    #[test]
    fn pod_totals_and_claims() {
        let r = range(json!([{"type": "Pod", "max": {"cpu": "1"}}, {"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "2Gi"}}]));
        let p = json!({"spec": {"containers": [
            {"name": "a", "resources": {"requests": {"cpu": "600m"}, "limits": {"cpu": "600m"}}},
            {"name": "b", "resources": {"requests": {"cpu": "600m"}, "limits": {"cpu": "600m"}}},
        ]}});
        assert_eq!(pod(&r, &p), ["maximum cpu usage per Pod is 1, but limit is 1200m"]);
        let c = |storage: &str| json!({"spec": {"resources": {"requests": {"storage": storage}}}});
        assert_eq!(claim(&r, &c("500Mi")), ["minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi"]);
        assert_eq!(claim(&r, &c("3Gi")), ["maximum storage usage per PersistentVolumeClaim is 2Gi, but request is 3Gi"]);
        assert!(claim(&r, &c("2Gi")).is_empty());
    }
}
