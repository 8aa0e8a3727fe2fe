//! The FlowSchema status kube-apiserver keeps: a `Dangling` condition saying whether the
//! priority level a schema names exists. Written by the Raft leader, as a client: it watches
//! FlowSchemas and PriorityLevelConfigurations through the loopback client, keeps what the two
//! watches said, and after each burst of changes applies the condition to every schema whose
//! condition is missing or stale.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use futures::stream::{self, Stream, StreamExt};
use k8s_openapi::api::flowcontrol::v1::{FlowSchema, FlowSchemaCondition, FlowSchemaStatus, PriorityLevelConfiguration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time, WatchEvent};
use k8s_openapi::Metadata;

use crate::context::Context;
use crate::loopback::{Api, Client};
use machinery::error::{ApiError, ApiResult};

/// The field manager of the condition, as kube-apiserver's priority-and-fairness controller
/// applies it.
const MANAGER: &str = "api-priority-and-fairness-config-consumer-v1";

/// How often a follower looks whether it leads now (and the leader whether it still does while
/// nothing changes).
const POLL: Duration = Duration::from_millis(500);
/// How long a burst of changes gets to settle before one pass.
const SETTLE: Duration = Duration::from_millis(50);
/// How long after a failed watch or pass the watches start over.
const RETRY: Duration = Duration::from_secs(1);

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

/// What the two watches have said so far.
#[derive(Default)]
struct Seen {
    schemas: BTreeMap<String, FlowSchema>,
    levels: BTreeSet<String>,
}

/// One event of either watch.
enum Change {
    Schema(WatchEvent<FlowSchema>),
    Level(WatchEvent<PriorityLevelConfiguration>),
    /// One of the watches ended (the server's watch timeout): both start over.
    Ended,
}

impl Seen {
    fn record(&mut self, change: Change) {
        match change {
            Change::Schema(WatchEvent::Added(s) | WatchEvent::Modified(s)) => {
                self.schemas.insert(name(&s), s);
            }
            Change::Schema(WatchEvent::Deleted(s)) => {
                self.schemas.remove(&name(&s));
            }
            Change::Level(WatchEvent::Added(l) | WatchEvent::Modified(l)) => {
                self.levels.insert(name(&l));
            }
            Change::Level(WatchEvent::Deleted(l)) => {
                self.levels.remove(&name(&l));
            }
            _ => {}
        }
    }

    /// Each schema whose condition is missing or stale, with its level and whether that level
    /// is missing.
    fn stale(&self) -> Vec<(String, String, bool)> {
        let mut stale = Vec::new();
        for (name, schema) in &self.schemas {
            let level = schema.spec.as_ref().map(|s| s.priority_level_configuration.name.clone()).unwrap_or_default();
            let dangling = !self.levels.contains(&level);
            let want = if dangling { "True" } else { "False" };
            let conditions = schema.status.as_ref().and_then(|s| s.conditions.as_deref()).unwrap_or_default();
            if !conditions.iter().any(|c| c.type_.as_deref() == Some("Dangling") && c.status.as_deref() == Some(want)) {
                stale.push((name.clone(), level, dangling));
            }
        }
        stale
    }
}

fn name(obj: &impl Metadata<Ty = ObjectMeta>) -> String {
    obj.metadata().name.clone().unwrap_or_default()
}

/// Applies the right condition to every stale schema.
async fn pass(schemas: &Api<FlowSchema>, seen: &Seen) -> ApiResult<()> {
    for (name, level, dangling) in seen.stale() {
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

/// Both watches as one stream, which says when either ends.
async fn changes(client: &Client) -> ApiResult<impl Stream<Item = ApiResult<Change>> + Unpin> {
    let schemas = client.api::<FlowSchema>(None)?.watch().await?.map(|e| e.map(Change::Schema));
    let levels = client.api::<PriorityLevelConfiguration>(None)?.watch().await?.map(|e| e.map(Change::Level));
    let ended = || stream::once(async { Ok(Change::Ended) });
    Ok(Box::pin(stream::select(schemas.chain(ended()), levels.chain(ended()))))
}

/// Follows the two kinds while this node leads; returns when it no longer does, or when a
/// watch or a pass failed or a watch ended (the caller starts over).
async fn follow(ctx: &Context, client: &Client) -> ApiResult<()> {
    let schemas = client.api::<FlowSchema>(None)?;
    let mut changes = changes(client).await?;
    let mut seen = Seen::default();
    while ctx.store.is_leader() {
        let Ok(next) = tokio::time::timeout(POLL, changes.next()).await else { continue };
        let mut change = next.unwrap_or(Ok(Change::Ended))?;
        // A burst (the initial objects, say) settles into one pass.
        loop {
            if matches!(change, Change::Ended) {
                return Ok(());
            }
            seen.record(change);
            match tokio::time::timeout(SETTLE, changes.next()).await {
                Ok(Some(next)) => change = next?,
                Ok(None) => change = Change::Ended,
                Err(_) => break,
            }
        }
        pass(&schemas, &seen).await?;
    }
    Ok(())
}

/// Keeps the conditions current while this node leads.
pub async fn run(ctx: Context, client: Client) {
    loop {
        while !ctx.store.is_leader() {
            tokio::time::sleep(POLL).await;
        }
        if let Err(e) = follow(&ctx, &client).await {
            tracing::warn!(error = %e, "flow schema status controller starts over");
            tokio::time::sleep(RETRY).await;
        }
    }
}
