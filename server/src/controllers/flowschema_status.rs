//! The FlowSchema status kube-apiserver keeps: a `Dangling` condition saying whether the
//! priority level a schema names exists. Written by the Raft leader, from what it has applied.

use std::time::Duration;

use k8s_openapi::api::flowcontrol::v1::{FlowSchema, FlowSchemaCondition, FlowSchemaStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

use crate::context::Context;
use crate::loopback::Client;
use machinery::error::{ApiError, ApiResult};
use serving::flowcontrol::FlowControl;

/// The field manager of the condition, as kube-apiserver's priority-and-fairness controller
/// applies it.
const MANAGER: &str = "api-priority-and-fairness-config-consumer-v1";

/// The condition a schema should carry.
fn condition(level: &str, dangling: bool) -> FlowSchemaCondition {
    let (status, reason, message) = if dangling {
        ("True", "NotFound", format!("This FlowSchema references the PriorityLevelConfiguration object named \"{level}\" but there is no such object"))
    } else {
        ("False", "Found", format!("This FlowSchema references the PriorityLevelConfiguration object named \"{level}\" and it exists"))
    };
    FlowSchemaCondition {
        type_: Some("Dangling".into()),
        status: Some(status.into()),
        reason: Some(reason.into()),
        message: Some(message),
        last_transition_time: Some(Time(jiff::Timestamp::now())),
    }
}

/// One pass: every schema whose condition is missing or stale gets the right one.
async fn sync(ctx: &Context, client: &Client, fc: &FlowControl) -> ApiResult<()> {
    let schemas = client.api::<FlowSchema>(None)?;
    let info = schemas.info();
    for (name, level, dangling) in fc.dangling() {
        let want = if dangling { "True" } else { "False" };
        let Some(current) = ctx.informers.get_parsed(&info.key_prefix(), &info.key(None, &name)).await else { continue };
        let conditions = current["status"]["conditions"].as_array().cloned().unwrap_or_default();
        if conditions.iter().any(|c| c["type"] == "Dangling" && c["status"] == want) {
            continue;
        }
        let status = FlowSchema {
            metadata: ObjectMeta { name: Some(name.clone()), ..Default::default() },
            status: Some(FlowSchemaStatus { conditions: Some(vec![condition(&level, dangling)]) }),
            ..Default::default()
        };
        match schemas.apply_status(&name, MANAGER, &status).await.map(|_| ()) {
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
