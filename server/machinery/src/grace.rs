//! Graceful deletion of pods, as Kubernetes' pod strategy decides it: the period is the
//! delete's `gracePeriodSeconds`, else the pod's `terminationGracePeriodSeconds` (30 by
//! default); a pod never scheduled to a node, or already finished, goes at once; a negative
//! period counts as 1 s. A pod deleted with a period gets `deletionTimestamp` set that far ahead
//! and stays until then (the leader ends it, for want of a kubelet to confirm it stopped), or
//! until a delete with a shorter period, such as a kubelet's final one. Other kinds have no grace
//! period.

use chrono::{DateTime, Duration, Utc};
use serde_json::Value;

use crate::registry::ResourceInfo;

/// The default of `terminationGracePeriodSeconds`.
const DEFAULT_PERIOD: i64 = 30;

/// Whether the kind is deleted gracefully (pods only).
pub fn is_pod(info: &ResourceInfo) -> bool {
    info.group.is_empty() && info.resource == "pods"
}

/// The grace period of deleting `obj` when `requested` was asked for.
pub fn period(info: &ResourceInfo, obj: &Value, requested: Option<i64>) -> i64 {
    if !is_pod(info) {
        return 0;
    }
    let scheduled = obj["spec"]["nodeName"].as_str().is_some_and(|n| !n.is_empty());
    let finished = matches!(obj["status"]["phase"].as_str(), Some("Succeeded" | "Failed"));
    if !scheduled || finished {
        return 0;
    }
    match requested.or_else(|| obj["spec"]["terminationGracePeriodSeconds"].as_i64()).unwrap_or(DEFAULT_PERIOD) {
        p if p < 0 => 1,
        p => p,
    }
}

/// The `deletionTimestamp` of a deletion with `period` starting now.
pub fn deadline(period: i64) -> String {
    (Utc::now() + Duration::seconds(period)).format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Whether a deletion with `period` would end before the one `obj` is in.
pub fn sooner(obj: &Value, period: i64) -> bool {
    match obj["metadata"]["deletionTimestamp"].as_str().and_then(|t| t.parse::<DateTime<Utc>>().ok()) {
        Some(current) => Utc::now() + Duration::seconds(period) < current,
        None => true,
    }
}

/// Whether the grace period of `obj` (being deleted) is over.
pub fn expired(obj: &Value) -> bool {
    obj["metadata"]["deletionTimestamp"].as_str().and_then(|t| t.parse::<DateTime<Utc>>().ok()).is_some_and(|t| t <= Utc::now())
}
