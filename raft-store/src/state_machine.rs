//! The Raft state machine: applies committed transactions to the watch cache, and persists
//! snapshots of it (`snapshot.rs`). The objects live in memory; on restart the last snapshot is
//! loaded and openraft re-applies the log after it up to the saved commit index.

use std::collections::BTreeMap;
use std::io;
use std::sync::{Arc, Mutex};

use futures::{Stream, TryStreamExt};
use openraft::storage::{EntryResponder, RaftSnapshotBuilder, RaftStateMachine};
use openraft::{EntryPayload, OptionalSend};

use crate::cache::Cache;
use crate::error::io_err;
use crate::snapshot::{Snapshot, SnapshotFile, SnapshotMeta, Snapshots};
use crate::space::Space;
use crate::types::{LogId, Object, TxnResult, TypeConfig};

type StoredMembership = openraft::alias::StoredMembershipOf<TypeConfig>;

#[derive(Default, Clone)]
struct Applied {
    last: Option<LogId>,
    membership: StoredMembership,
}

/// Handle to the state machine; clones share it.
#[derive(Clone)]
pub struct StateMachine {
    cache: Arc<Cache>,
    snapshots: Snapshots,
    applied: Arc<Mutex<Applied>>,
    space: Arc<Space>,
}

impl StateMachine {
    pub(crate) fn new(cache: Arc<Cache>, snapshots: Snapshots, space: Arc<Space>) -> Self {
        StateMachine { cache, snapshots, applied: Default::default(), space }
    }
}

impl RaftSnapshotBuilder<TypeConfig> for StateMachine {
    type SnapshotData = SnapshotFile;

    async fn build_snapshot(&mut self) -> Result<Snapshot, io::Error> {
        // The cache and the applied log id move together under the apply lock.
        let (applied, (_, objects, txns)) = {
            let applied = self.applied.lock().unwrap();
            (applied.clone(), self.cache.snapshot())
        };
        let snapshots = self.snapshots.clone();
        tokio::task::spawn_blocking(move || {
            let meta = SnapshotMeta { last_log_id: applied.last, last_membership: applied.membership };
            let snapshot = snapshots.build(meta, &objects, &txns)?;
            tracing::info!(index = ?snapshot.meta.last_log_id, objects = objects.len(), "snapshot built");
            Ok(snapshot)
        })
        .await
        .map_err(io_err)?
    }
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotData = SnapshotFile;
    type SnapshotBuilder = Self;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, StoredMembership), io::Error> {
        let a = self.applied.lock().unwrap();
        Ok((a.last, a.membership.clone()))
    }

    async fn apply<Strm>(&mut self, entries: Strm) -> Result<(), io::Error>
    where
        Strm: Stream<Item = Result<EntryResponder<TypeConfig>, io::Error>> + Unpin + OptionalSend,
    {
        let entries: Vec<EntryResponder<TypeConfig>> = entries.try_collect().await?;
        // Fault injection: `apply-delay=return(MS)` holds this replica's apply back by MS per
        // batch, so that tests can make a follower lag behind the commit.
        #[cfg(feature = "failpoints")]
        if let Some(ms) = fail::eval("apply-delay", |arg| arg.and_then(|a| a.parse::<u64>().ok())).flatten() {
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
        }
        let last = entries.last().map(|(e, _)| e.log_id.index());
        tracing::debug!(?last, entries = entries.len(), "applying");
        let mut replies = Vec::with_capacity(entries.len());
        {
            let mut applied = self.applied.lock().unwrap();
            let mut cache = self.cache.write();
            for (entry, responder) in entries {
                let index = entry.log_id.index();
                let result = match entry.payload {
                    EntryPayload::Normal(ref txn) => {
                        let span = txn.trace.as_deref().map_or_else(tracing::Span::none, |parent| crate::trace::continued(parent, "raft.apply"));
                        span.in_scope(|| cache.apply(index, txn))
                    }
                    EntryPayload::Blank => {
                        cache.advance(index);
                        TxnResult::None
                    }
                    EntryPayload::Membership(ref m) => {
                        cache.advance(index);
                        applied.membership = StoredMembership::new(Some(entry.log_id), m.clone());
                        TxnResult::None
                    }
                };
                applied.last = Some(entry.log_id);
                if let Some(r) = responder {
                    replies.push((r, result));
                }
            }
            // Dropping the cache guard publishes the events and the new applied index, before
            // any client hears back.
        }
        for (r, result) in replies {
            r.send(result);
        }
        Ok(())
    }

    /// A snapshot is deferred while the file system could not hold a new one beside the old
    /// (openraft asks again later); a failed write would stop Raft.
    async fn try_create_snapshot_builder(&mut self, force: bool) -> Option<Self::SnapshotBuilder> {
        let room = self.snapshots.size().saturating_mul(2);
        if !force {
            if let Some(why) = self.space.short_of(room) {
                tracing::warn!(reason = %why, "snapshot deferred");
                return None;
            }
        }
        Some(self.clone())
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn install_snapshot(&mut self, meta: &SnapshotMeta, snapshot: SnapshotFile) -> Result<(), io::Error> {
        let snapshots = self.snapshots.clone();
        let snapshot = Snapshot { meta: meta.clone(), snapshot };
        let body = tokio::task::spawn_blocking(move || snapshots.install(snapshot)).await.map_err(io_err)??;
        let objects: BTreeMap<String, Object> = body.objects.into_iter().collect();
        let index = meta.last_log_id.map(|l| l.index()).unwrap_or(0);
        {
            let mut applied = self.applied.lock().unwrap();
            self.cache.reset(index, objects, body.txns);
            applied.last = meta.last_log_id;
            applied.membership = meta.last_membership.clone();
        }
        tracing::info!(index, "snapshot installed");
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot>, io::Error> {
        self.snapshots.current()
    }
}
