//! The store handle the API server uses: open a node's data directory, propose transactions
//! through Raft, and read linearizably or at a revision from the watch cache.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use openraft::{BasicNode, Config, ReadPolicy, SnapshotPolicy};
use openraft::async_runtime::WatchReceiver;
use redb::Database;

use crate::cache::{Cache, CacheOptions};
use crate::error::StoreError;
use crate::log_store::LogStore;
use crate::network::Network;
use crate::state_machine::StateMachine;
use crate::types::{NodeId, Raft, Txn, TxnResult};

/// How long a request waits for a leader to be elected.
const LEADER_WAIT: Duration = Duration::from_secs(5);

/// How to open a node.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    pub node_id: NodeId,
    /// This node's Raft address, as peers reach it.
    pub raft_addr: String,
    pub cache: CacheOptions,
    /// Build a snapshot (and purge the log before it) after this many entries.
    pub snapshot_every: u64,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            node_id: 1,
            raft_addr: "127.0.0.1:0".into(),
            cache: CacheOptions::default(),
            snapshot_every: 50_000,
        }
    }
}

/// A replica of the store; clones share it.
#[derive(Clone)]
pub struct Store {
    raft: Raft,
    cache: Arc<Cache>,
    node_id: NodeId,
    db: std::sync::Weak<Database>,
}

impl Store {
    /// Opens (or creates) the node's state under `dir` and starts Raft. A new single node
    /// initializes itself as the only voter.
    pub async fn open(dir: &Path, opts: StoreOptions) -> Result<Store, StoreError> {
        std::fs::create_dir_all(dir).map_err(StoreError::internal)?;
        let db = Arc::new(Database::create(dir.join("raft.redb")).map_err(StoreError::internal)?);
        let db_ref = Arc::downgrade(&db);
        let log = LogStore::open(db.clone()).map_err(StoreError::internal)?;
        let cache = Arc::new(Cache::new(opts.cache));
        let sm = StateMachine::new(cache.clone(), db).map_err(StoreError::internal)?;
        let config = Config {
            cluster_name: "apiserver".into(),
            heartbeat_interval: 100,
            election_timeout_min: 300,
            election_timeout_max: 600,
            snapshot_policy: SnapshotPolicy::LogsSinceLast(opts.snapshot_every),
            max_in_snapshot_log_to_keep: 1000,
            ..Default::default()
        };
        let config = Arc::new(config.validate().map_err(StoreError::internal)?);
        let raft = Raft::new(opts.node_id, config, Network, log, sm)
            .await
            .map_err(StoreError::internal)?;
        if !raft.is_initialized().await.map_err(StoreError::internal)? {
            let mut members = BTreeMap::new();
            members.insert(opts.node_id, BasicNode { addr: opts.raft_addr.clone() });
            raft.initialize(members).await.map_err(StoreError::internal)?;
        }
        let expiry = Arc::downgrade(&cache);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tick.tick().await;
                match expiry.upgrade() {
                    Some(cache) => cache.expire_history(),
                    None => return,
                }
            }
        });
        Ok(Store { raft, cache, node_id: opts.node_id, db: db_ref })
    }

    /// Proposes a transaction and waits until this node has applied it. While the group has
    /// no leader (an election is running) the proposal waits for one, up to a few seconds.
    pub async fn write(&self, txn: Txn) -> Result<TxnResult, StoreError> {
        let deadline = tokio::time::Instant::now() + LEADER_WAIT;
        loop {
            match self.raft.client_write(txn.clone()).await {
                Ok(resp) => return Ok(resp.data),
                Err(e) => match e.forward_to_leader() {
                    Some(f) if f.leader_id.is_none() => self.wait_leader(deadline).await?,
                    Some(_) => return Err(StoreError::NotLeader(e.to_string())),
                    None => return Err(StoreError::Unavailable(e.to_string())),
                },
            }
        }
    }

    /// A revision for a "Most Recent" read: confirms leadership with a quorum (read index) and
    /// waits until the local state has applied it. Returns the applied revision.
    pub async fn linearizable_rev(&self) -> Result<u64, StoreError> {
        let deadline = tokio::time::Instant::now() + LEADER_WAIT;
        loop {
            match self.raft.ensure_linearizable(ReadPolicy::ReadIndex).await {
                Ok(_) => return Ok(self.cache.applied()),
                Err(e) => match e.forward_to_leader() {
                    Some(f) if f.leader_id.is_none() => self.wait_leader(deadline).await?,
                    Some(_) => return Err(StoreError::NotLeader(e.to_string())),
                    None => return Err(StoreError::Unavailable(e.to_string())),
                },
            }
        }
    }

    async fn wait_leader(&self, deadline: tokio::time::Instant) -> Result<(), StoreError> {
        let mut metrics = self.raft.metrics();
        loop {
            if metrics.borrow_watched().current_leader.is_some() {
                // Give the new leader a moment to commit its first entry.
                tokio::time::sleep(Duration::from_millis(10)).await;
                return Ok(());
            }
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() || tokio::time::timeout(left, metrics.changed()).await.is_err() {
                return Err(StoreError::Unavailable("no leader elected".into()));
            }
        }
    }

    /// Waits (at most `timeout`) until revision `rev` is applied locally.
    pub async fn wait_for(&self, rev: u64, timeout: Duration) -> Result<(), StoreError> {
        self.cache.wait_applied(rev, timeout).await
    }

    /// The watch cache: reads and watches at any revision it retains.
    pub fn cache(&self) -> &Arc<Cache> {
        &self.cache
    }

    pub fn node_id(&self) -> NodeId {
        self.node_id
    }

    /// Whether this node knows a leader (for readiness).
    pub fn has_leader(&self) -> bool {
        self.raft.metrics().borrow_watched().current_leader.is_some()
    }

    pub fn is_leader(&self) -> bool {
        self.raft.is_leader()
    }

    /// The committed and applied log indexes, for readiness and metrics.
    pub fn progress(&self) -> (u64, u64) {
        let m = self.raft.metrics().borrow_watched().clone();
        let applied = m.last_applied.map(|l| l.index()).unwrap_or(0);
        let committed = m.local_committed.map(|l| l.index()).unwrap_or(applied);
        (committed, applied)
    }

    /// Stops Raft (pending writes fail) and waits, a few seconds at most, until the data
    /// directory is released.
    pub async fn shutdown(&self) {
        let _ = self.raft.shutdown().await;
        for _ in 0..500 {
            if self.db.strong_count() == 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tracing::warn!("storage still open after shutdown");
    }
}
