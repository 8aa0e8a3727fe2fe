//! The loop every leader-only controller runs: wait until this node leads the Raft group, say
//! so in the log, subscribe to the informers of the keys the controller cares about, sync once,
//! then react to each change (a burst of changes settles into one full sync) and, when asked,
//! sync again periodically; when leadership moves away, stop and wait to lead again. An
//! informer that lists again (or a subscription that fell behind) is answered with a full sync;
//! a sync or change that failed is followed by a full sync a second later.

use std::time::Duration;

use raft_store::Event;

use crate::context::Context;
use crate::controllers::informer::Notice;
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
    /// The key prefixes whose changes it follows (one shared informer each).
    fn watches(&self) -> Vec<String>;
    /// Also sync this often, changes or not.
    fn recheck(&self) -> Option<Duration> {
        None
    }
    /// Called each time the subscription starts (or its informer lists again), before the
    /// next full sync: state kept from events may have missed some.
    fn restarted(&self) {}
    /// Brings everything it looks after up to date.
    async fn sync(&self, ctx: &Context) -> ApiResult<()>;
    /// One change under [`LeaderController::watches`]: handles it and returns whether a full
    /// sync is due (by default, yes: every change is answered with a sync).
    async fn changed(&self, _ctx: &Context, _event: &Event) -> ApiResult<bool> {
        Ok(true)
    }
}

/// Runs `controller` for the life of the node, acting while the node leads (unless
/// `--controllers` leaves it out).
pub async fn run(ctx: Context, controller: impl LeaderController) {
    let name = controller.name();
    if !ctx.settings.controller_enabled(name) {
        tracing::info!(controller = name, "controller turned off by --controllers");
        return;
    }
    let prefixes = controller.watches();
    let mut leading = false;
    loop {
        while !ctx.store.is_leader() {
            tokio::time::sleep(POLL).await;
        }
        let mut subscription = ctx.informers.subscribe(&prefixes).await;
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
            match tokio::time::timeout_at(until, subscription.next()).await {
                Err(_) => due = next.is_some_and(|n| tokio::time::Instant::now() >= n),
                Ok(None) => break,
                Ok(Some(Notice::Relisted)) => {
                    controller.restarted();
                    due = true;
                }
                Ok(Some(Notice::Changed(event))) => match controller.changed(&ctx, &event).await {
                    Ok(true) => {
                        // A burst settles into the one full sync; a relist within it still
                        // resets what the controller keeps from events.
                        while let Ok(Some(notice)) = tokio::time::timeout(SETTLE, subscription.next()).await {
                            if matches!(notice, Notice::Relisted) {
                                controller.restarted();
                            }
                        }
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
