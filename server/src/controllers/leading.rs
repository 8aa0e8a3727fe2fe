//! The loop every leader-only controller runs: wait until this node leads the Raft group, say
//! so in the log, watch the keys the controller cares about, sync once, then react to each change
//! (a burst of changes settles into one full sync) and, when asked, sync again periodically;
//! when leadership moves away, stop and wait to lead again. A watch that falls behind starts over
//! with a full sync; a sync or change that failed is followed by a full sync a second later.

use std::time::Duration;

use raft_store::Event;

use serving::context::Ctx;
use machinery::error::ApiResult;

/// How often a follower looks whether it leads now.
const POLL: Duration = Duration::from_millis(500);
/// How long a burst of changes gets to settle before one full sync.
const SETTLE: Duration = Duration::from_millis(50);

/// How long after a failure a controller syncs again (a refusal, a conflict that outlasted its
/// retries, a request that timed out).
const RETRY: Duration = Duration::from_secs(1);

/// A controller that acts only on the leader.
#[async_trait::async_trait]
pub trait LeaderController: Send + Sync {
    /// For the log.
    fn name(&self) -> &'static str;
    /// The key prefix whose changes it follows.
    fn watches(&self) -> String;
    /// Also sync this often, changes or not.
    fn recheck(&self) -> Option<Duration> {
        None
    }
    /// Called each time the watch starts (or starts over after falling behind), before the
    /// first sync: state kept from events may have missed some.
    fn restarted(&self) {}
    /// Brings everything it looks after up to date.
    async fn sync(&self, ctx: &Ctx) -> ApiResult<()>;
    /// One change under [`LeaderController::watches`]: handles it and returns whether a full
    /// sync is due (by default, yes: every change is answered with a sync).
    async fn changed(&self, _ctx: &Ctx, _event: &Event) -> ApiResult<bool> {
        Ok(true)
    }
}

/// Runs `controller` for the life of the node, acting while the node leads.
pub async fn run(ctx: Ctx, controller: impl LeaderController) {
    let name = controller.name();
    let prefix = controller.watches();
    let mut leading = false;
    loop {
        while !ctx.store.is_leader() {
            tokio::time::sleep(POLL).await;
        }
        let cache = ctx.store.cache().clone();
        let mut watcher = match cache.watch(&prefix, cache.applied()) {
            Ok(w) => w,
            Err(e) => {
                tracing::warn!(controller = name, error = %e, "controller could not watch");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        if !leading {
            tracing::info!(controller = name, "this node leads: controller started");
            leading = true;
        }
        controller.restarted();
        let mut due = true;
        let mut next = None;
        while ctx.store.is_leader() {
            if due {
                let failed = match controller.sync(&ctx).await {
                    Ok(()) => false,
                    Err(e) => {
                        tracing::warn!(controller = name, error = %e, "controller sync failed");
                        true
                    }
                };
                due = false;
                next = controller.recheck().map(|every| tokio::time::Instant::now() + every);
                if failed {
                    next = Some(retry_at(next));
                }
            }
            let wake = tokio::time::Instant::now() + Duration::from_secs(1);
            let until = next.map_or(wake, |n| n.min(wake));
            match tokio::time::timeout_at(until, watcher.next()).await {
                Err(_) => due = next.is_some_and(|n| tokio::time::Instant::now() >= n),
                // Fell behind: start over with a full sync.
                Ok(Err(_)) => break,
                Ok(Ok(event)) => match controller.changed(&ctx, &event).await {
                    Ok(true) => {
                        while let Ok(Ok(_)) = tokio::time::timeout(SETTLE, watcher.next()).await {}
                        due = true;
                    }
                    Ok(false) => {}
                    Err(e) => {
                        tracing::warn!(controller = name, error = %e, key = %event.key, "controller failed");
                        next = Some(retry_at(next));
                    }
                },
            }
        }
        if !ctx.store.is_leader() {
            tracing::info!(controller = name, "this node no longer leads: controller stopped");
            leading = false;
        }
    }
}

/// When a failed sync (or a change that failed) is tried again as a full sync: after [`RETRY`],
/// or at the periodic recheck if that comes sooner.
fn retry_at(next: Option<tokio::time::Instant>) -> tokio::time::Instant {
    let retry = tokio::time::Instant::now() + RETRY;
    next.map_or(retry, |n| n.min(retry))
}
