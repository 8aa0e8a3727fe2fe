//! PodTopologyLabels: a pod bound to a Node (created with `spec.nodeName`, or through its
//! `binding` subresource) is labelled with the Node's `topology.kubernetes.io/zone` and
//! `topology.kubernetes.io/region`, so that it can learn them through the downward API.

use serde_json::Value;

use crate::{Mutating, Operation, Request};
use machinery::error::{ApiError, ApiResult};

/// The Node labels copied.
const LABELS: &[&str] = &["topology.kubernetes.io/zone", "topology.kubernetes.io/region"];

pub struct PodTopologyLabels {
    pub store: raft_store::Store,
}

#[async_trait::async_trait]
impl Mutating for PodTopologyLabels {
    fn name(&self) -> &'static str {
        "PodTopologyLabels"
    }

    async fn admit(&self, r: &Request<'_>, pod: &mut Value) -> ApiResult<()> {
        let pods = r.req.info.group.is_empty() && r.req.info.resource == "pods";
        let bound = match (r.req.subresource.as_deref(), r.operation) {
            (None, Operation::Create) | (Some("binding"), _) => pods,
            _ => false,
        };
        let Some(node) = pod["spec"]["nodeName"].as_str().filter(|n| bound && !n.is_empty()) else { return Ok(()) };
        // A Node that does not exist has no labels to give.
        let Some(stored) = self.store.cache().get(&format!("/registry/nodes/{node}"), None)? else { return Ok(()) };
        let node: Value = serde_json::from_slice(&stored.data).map_err(ApiError::internal)?;
        for label in LABELS {
            if let Some(value) = node["metadata"]["labels"].get(*label) {
                pod["metadata"]["labels"][*label] = value.clone();
            }
        }
        Ok(())
    }
}
