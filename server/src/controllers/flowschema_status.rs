//! The FlowSchema status kube-apiserver keeps: a `Dangling` condition saying whether the
//! priority level a schema names exists. Written by the Raft leader, from what it has applied.

use std::time::Duration;

use serde_json::{json, Value};

use serving::flowcontrol::FlowControl;
use serving::context::Ctx;
use crate::loopback::request;
use machinery::error::{ApiError, ApiResult};
use crate::loopback::Client;
use machinery::prepare::FieldValidation;
use machinery::registry;
use access::request::{ResourceRequest, Verb};

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
async fn sync(ctx: &Ctx, client: &Client, fc: &FlowControl) -> ApiResult<()> {
    let info = registry::lookup("flowcontrol.apiserver.k8s.io", "v1", "flowschemas").ok_or_else(|| ApiError::internal("flowschemas are not served"))?;
    for (name, level, dangling) in fc.dangling() {
        let want = if dangling { "True" } else { "False" };
        let key = info.key(None, &name);
        let Some(current) = ctx.store.cache().get(&key, None)? else { continue };
        let current: Value = machinery::stored::parse(&current)?;
        let conditions = current["status"]["conditions"].as_array().cloned().unwrap_or_default();
        if conditions.iter().any(|c| c["type"] == "Dangling" && c["status"] == want) {
            continue;
        }
        let update = |old: &Value| -> ApiResult<Value> {
            let mut new = old.clone();
            let mut conditions: Vec<Value> = old["status"]["conditions"].as_array().cloned().unwrap_or_default();
            conditions.retain(|c| c["type"] != "Dangling");
            conditions.push(condition(&level, dangling));
            new["status"] = json!({"conditions": conditions});
            Ok(new)
        };
        let req = ResourceRequest { subresource: Some("status".into()), ..request(info, None, &name, Verb::Update) };
        match client.update(&req, FieldValidation::Ignore, update).await {
            Ok(()) | Err(ApiError::NotFound { .. }) | Err(ApiError::Conflict { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Keeps the conditions current while this node leads.
pub async fn run(ctx: Ctx, client: Client) {
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
