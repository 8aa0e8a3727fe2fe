//! ExtendedResourceToleration: a pod requesting an extended resource (`example.com/gpu`)
//! tolerates the `NoSchedule` taint of that name, with which nodes holding such resources are
//! kept for the pods that use them.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use crate::{Mutating, Request};
use machinery::error::ApiResult;

pub struct ExtendedResourceToleration;

/// Kubernetes' extended resources: a domain-qualified name outside `kubernetes.io` (and not a
/// quota's `requests.` name).
fn extended(name: &str) -> bool {
    let Some((domain, _)) = name.split_once('/') else { return false };
    let native = domain == "kubernetes.io" || domain.ends_with(".kubernetes.io");
    let mut problems = Vec::new();
    machinery::meta::validate_qualified_name(&format!("requests.{name}"), "", &mut problems);
    !native && !name.starts_with("requests.") && problems.is_empty()
}

#[async_trait::async_trait]
impl Mutating for ExtendedResourceToleration {
    fn name(&self) -> &'static str {
        "ExtendedResourceToleration"
    }

    async fn admit(&self, r: &Request<'_>, pod: &mut Value) -> ApiResult<()> {
        if !r.concerns("", "pods") {
            return Ok(());
        }
        let containers = ["containers", "initContainers"].iter().flat_map(|l| pod["spec"][*l].as_array().into_iter().flatten());
        let names: BTreeSet<String> = containers.flat_map(|c| c["resources"]["requests"].as_object().into_iter().flatten()).map(|(k, _)| k.clone()).filter(|k| extended(k)).collect();
        for name in names {
            let toleration = json!({"key": name, "operator": "Exists", "effect": "NoSchedule"});
            let list = pod["spec"]["tolerations"].as_array().cloned().unwrap_or_default();
            if !list.contains(&toleration) {
                pod["spec"]["tolerations"] = json!([list, vec![toleration]].concat());
            }
        }
        Ok(())
    }
}
