//! TaintNodesByCondition: a new Node is tainted `node.kubernetes.io/not-ready:NoSchedule`, so
//! that nothing is scheduled to it before its conditions say it is ready (the node lifecycle
//! controller takes the taint away).

use serde_json::{json, Value};

use crate::default_toleration_seconds::NOT_READY;
use crate::{Mutating, Operation, Request};
use machinery::error::ApiResult;

pub struct TaintNodesByCondition;

#[async_trait::async_trait]
impl Mutating for TaintNodesByCondition {
    fn name(&self) -> &'static str {
        "TaintNodesByCondition"
    }

    async fn admit(&self, r: &Request<'_>, node: &mut Value) -> ApiResult<()> {
        if r.operation != Operation::Create || !r.concerns("", "nodes") {
            return Ok(());
        }
        let tainted = node["spec"]["taints"].as_array().into_iter().flatten().any(|t| t["key"] == NOT_READY && t["effect"] == "NoSchedule");
        if !tainted {
            crate::push(&mut node["spec"]["taints"], json!({"key": NOT_READY, "effect": "NoSchedule"}));
        }
        Ok(())
    }
}
