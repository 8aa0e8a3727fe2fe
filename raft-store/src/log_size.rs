//! Snapshots by the log's size. openraft takes a snapshot every `snapshot_every` entries; with
//! small live data and large writes those entries can be hundreds of times the state, and the
//! log's file keeps the pages it once needed. So a snapshot is also taken once the log holds more
//! bytes than the newest snapshot (at least `MIN_BYTES`): the log, and with it `raft.redb`, then
//! stays within a small factor of the live data while a snapshot costs no more than the writes
//! that came since the one before.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use openraft::async_runtime::WatchReceiver;

use crate::snapshot::Snapshots;
use crate::types::Raft;

/// The log's size below which its entry count alone decides.
pub const MIN_BYTES: u64 = 8 << 20;

/// How often the size is looked at.
const EVERY: Duration = Duration::from_millis(100);

/// Asks `raft` for a snapshot whenever the log's `bytes` outgrow the newest snapshot, once at
/// least `keep` entries (those a snapshot leaves in the log) have been applied since the last.
/// Ends with the log.
pub(crate) fn start(raft: Raft, bytes: &Arc<AtomicU64>, snapshots: Snapshots, keep: u64) {
    let bytes = Arc::downgrade(bytes);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(EVERY);
        loop {
            tick.tick().await;
            let Some(held) = bytes.upgrade().map(|b| b.load(Ordering::Relaxed)) else { return };
            if held <= MIN_BYTES || held <= snapshots.size() {
                continue;
            }
            let since = {
                let m = raft.metrics();
                let m = m.borrow_watched();
                let index = |id: Option<&crate::types::LogId>| id.map_or(0, |id| id.index());
                index(m.last_applied.as_ref()).saturating_sub(index(m.snapshot.as_ref()))
            };
            if since < keep {
                continue;
            }
            tracing::debug!(log_bytes = held, entries = since, "log outgrew the snapshot: taking one");
            if raft.trigger().snapshot().await.is_err() {
                return;
            }
        }
    });
}
