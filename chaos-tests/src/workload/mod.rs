//! The client workloads: compare-and-set registers (reads, conditional PUTs, creates, deletes on
//! a few hot keys), watchers that resume after errors, and paged and Exact-revision lists.

pub mod lists;
pub mod registers;
pub mod watchers;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ObjectMeta;
use kube::Api;

use crate::history::Item;

/// Where a workload's requests go: the load balancer (`lb`) or one node (`node-<i>`).
#[derive(Clone)]
pub struct Target {
    pub name: String,
    pub api: Api<ConfigMap>,
}

/// The namespace every workload key lives in.
pub const NAMESPACE: &str = "chaos";

/// A register's ConfigMap holding `value`, optionally at resourceVersion `rv`.
pub fn configmap(key: &str, value: &str, rv: Option<String>) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta { name: Some(key.to_string()), resource_version: rv, ..Default::default() },
        data: Some(BTreeMap::from([("v".to_string(), value.to_string())])),
        ..Default::default()
    }
}

pub fn rv_of(meta: &ObjectMeta) -> Option<u64> {
    meta.resource_version.as_deref().and_then(|v| v.parse().ok())
}

/// A ConfigMap as the history records it.
pub fn item(cm: &ConfigMap) -> Item {
    Item {
        key: cm.metadata.name.clone().unwrap_or_default(),
        value: cm.data.as_ref().and_then(|d| d.get("v").cloned()),
        rv: rv_of(&cm.metadata).unwrap_or(0),
    }
}
