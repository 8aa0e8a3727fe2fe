//! The FlowSchema status kube-apiserver keeps: a `Dangling` condition saying whether the
//! priority level a schema names exists. Written by the Raft leader, from what it has applied.

use std::time::Duration;

use serde_json::{json, Value};

use serving::flowcontrol::FlowControl;
use crate::context::Context;
use crate::loopback::request;
use machinery::error::{ApiError, ApiResult};
use crate::loopback::Client;
use machinery::registry;
use access::request::{ResourceRequest, Verb};

/// The field manager of the condition, as kube-apiserver's priority-and-fairness controller
/// applies it.
const MANAGER: &str = "api-priority-and-fairness-config-consumer-v1";

/// The condition a schema should carry.
fn condition(level: &str, dangling: bool) -> Value {
    let (status, reason, message) = if dangling {
        ("True", "NotFound", format!("This FlowSchema references the PriorityLevelConfiguration object named \"{level}\" but there is no such object"))
    } else {
        ("False", "Found", format!("This FlowSchema references the PriorityLevelConfiguration object named \"{level}\" and it exists"))
    };
    json!({"type": "Dangling", "status": status, "reason": reason, "message": message, "lastTransitionTime": machinery::meta::now()})
}

/// One pass: every schema whose condition is missing or stale gets the right one.
async fn sync(ctx: &Context, client: &Client, fc: &FlowControl) -> ApiResult<()> {
    let info = registry::lookup("flowcontrol.apiserver.k8s.io", "v1", "flowschemas").ok_or_else(|| ApiError::internal("flowschemas are not served"))?;
    for (name, level, dangling) in fc.dangling() {
        let want = if dangling { "True" } else { "False" };
        let Some(current) = ctx.informers.get_parsed(&info.key_prefix(), &info.key(None, &name)).await else { continue };
        let conditions = current["status"]["conditions"].as_array().cloned().unwrap_or_default();
        if conditions.iter().any(|c| c["type"] == "Dangling" && c["status"] == want) {
            continue;
        }
        let status = json!({
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema", "metadata": {"name": name},
            "status": {"conditions": [condition(&level, dangling)]},
        });
        let req = ResourceRequest { subresource: Some("status".into()), ..request(info, None, &name, Verb::Patch) };
        match client.apply(&req, MANAGER, true, status).await.map(|_| ()) {
            Ok(()) | Err(ApiError::NotFound { .. }) | Err(ApiError::Conflict { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Keeps the conditions current while this node leads.
pub async fn run(ctx: Context, client: Client) {
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    loop {
        tick.tick().await;
        if !ctx.store.is_leader() {
            continue;
        }
        if let Err(e) = sync(&ctx, &client, &ctx.flowcontrol).await {
            tracing::warn!(error = %e, "flow schema status pass failed");
        }
    }
}
