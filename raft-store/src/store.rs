//! The store handle the API server uses: open a node's data directory, propose transactions
//! through Raft, and read linearizably or at a revision from the watch cache.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use openraft::{BasicNode, Config, ReadPolicy, SnapshotPolicy};
use openraft::async_runtime::WatchReceiver;
use redb::Database;

use crate::cache::{Cache, CacheOptions};
use crate::error::StoreError;
use crate::log_size;
use crate::log_store::{FlushStats, Flushes, LogStore, VotedFor};
use crate::network::Network;
use crate::observer::Observers;
use crate::forwarder::{self, Batcher};
use crate::trace;
use tracing::Instrument;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use crate::peer::{PeerTls, Peers};
use crate::round_trips::{self, RoundTrips};
use crate::timings::TimingStats;
use crate::space::Space;
use crate::service;
use crate::snapshot::Snapshots;
use crate::state_machine::StateMachine;
use crate::types::{Action, Cond, NodeId, Op, Raft, Txn, TxnResult, TypeConfig};

/// How long a request waits for a leader to be elected.
const LEADER_WAIT: Duration = Duration::from_secs(5);

/// A follower counts toward the quorum that lets the leader's log linger while it has
/// acknowledged an append or heartbeat within this many heartbeat intervals.
const ANSWERED_LATELY: u32 = 5;

/// How to open a node.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    pub node_id: NodeId,
    /// This node's Raft address, as peers reach it (`host:port`).
    pub raft_addr: String,
    /// The voters a new cluster starts with, by id (this node among them); empty for a
    /// single-node group of this node alone. Unused when joining an existing cluster.
    pub initial_members: BTreeMap<NodeId, String>,
    /// Join a cluster this node is a member of instead of initializing one: the leader brings
    /// it up to date.
    pub join_existing: bool,
    /// Mutual TLS between peers; `None` only for a single node, which sends no RPCs.
    pub peer_tls: Option<PeerTls>,
    pub cache: CacheOptions,
    /// Derived state fed by the apply path (see [`ApplyObserver`](crate::ApplyObserver)).
    pub observers: Observers,
    /// Build a snapshot (and purge the log before it) after this many entries.
    pub snapshot_every: u64,
    /// How often the leader sends heartbeats.
    pub heartbeat: Duration,
    /// The shortest time without a leader before a follower stands for election (the longest
    /// is twice this).
    pub election_timeout: Duration,
    /// The state's size (keys and objects) past which writes other than deletes are refused;
    /// 0 for no limit.
    pub quota_bytes: u64,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            node_id: 1,
            raft_addr: "127.0.0.1:0".into(),
            initial_members: BTreeMap::new(),
            join_existing: false,
            peer_tls: None,
            cache: CacheOptions::default(),
            observers: Observers::default(),
            snapshot_every: 50_000,
            heartbeat: Duration::from_millis(100),
            election_timeout: Duration::from_millis(300),
            quota_bytes: 0,
        }
    }
}

/// redb's page cache. Reads are served from the watch cache, so redb only needs enough to
/// append to the log and to read back recent entries for followers.
const REDB_CACHE_BYTES: usize = 32 << 20;

/// Opens the redb file (the log and its metadata) and checks every page of it against its
/// checksum: a node must not start from a file that lost or changed what it acknowledged. The
/// last handle of a previous `Store` in this process releases the file lock just after it is
/// dropped, so a reopen right after `shutdown` may briefly find it held.
async fn open_db(path: &Path) -> Result<Database, StoreError> {
    let damaged = |detail: String| StoreError::Damaged { file: path.display().to_string(), detail };
    let mut attempts = 0;
    let mut db = loop {
        match Database::builder().set_cache_size(REDB_CACHE_BYTES).create(path) {
            Err(redb::DatabaseError::DatabaseAlreadyOpen) if attempts < 100 => {
                attempts += 1;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(redb::DatabaseError::Storage(redb::StorageError::Corrupted(detail))) => return Err(damaged(detail)),
            other => break other.map_err(StoreError::internal)?,
        }
    };
    let started = std::time::Instant::now();
    match db.check_integrity() {
        Ok(true) => {}
        Ok(false) => return Err(damaged("pages failed their checksums and the file was rolled back to its last intact commit, which may lack entries this node acknowledged".into())),
        Err(redb::DatabaseError::Storage(redb::StorageError::Corrupted(detail))) => return Err(damaged(detail)),
        Err(e) => return Err(StoreError::internal(e)),
    }
    tracing::info!(took = ?started.elapsed(), "raft.redb checked");
    Ok(db)
}

/// A replica of the store; clones share it.
#[derive(Clone)]
pub struct Store {
    raft: Raft,
    cache: Arc<Cache>,
    node_id: NodeId,
    peers: Peers,
    /// Writes forwarded to the leader, and read indexes asked of it, in batches.
    writes: Batcher<Txn, service::Forwarded>,
    read_indexes: Batcher<forwarder::Asker, u64>,
    /// The leader of this node's newest vote, which its read-index requests vouch for.
    voted_for: Arc<VotedFor>,
    /// Writes proposed through this node.
    proposals: Arc<AtomicU64>,
    /// Leaders this node has seen come.
    leader_changes: Arc<AtomicU64>,
    flushes: Arc<Flushes>,
    /// Round trips to the other members.
    round_trips: Arc<RoundTrips>,
    /// Set while this node's log gathers its flushes (see `LogStore::linger_switch`).
    linger: Arc<AtomicBool>,
    db: std::sync::Weak<Database>,
    /// Where `db` lives.
    db_path: PathBuf,
    snapshots: Snapshots,
    /// The data directory's free space; writes are refused while it is short.
    space: Arc<Space>,
    /// See [`StoreOptions::quota_bytes`].
    quota_bytes: u64,
}

/// A node's view of its Raft group.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RaftStatus {
    pub term: u64,
    pub leader: Option<NodeId>,
    pub is_leader: bool,
    pub committed: u64,
    pub applied: u64,
    /// Writes proposed through this node since it started.
    pub proposals: u64,
    /// Leaders this node has seen come since it started (each new one, as etcd counts them).
    pub leader_changes: u64,
    /// The log's disk flushes since this node started.
    pub log_flushes: FlushStats,
    /// Whether the log gathers appends before it flushes: on a leader whose followers, answering
    /// lately, form a quorum without it.
    pub log_lingers: bool,
}

/// Where a request that only the leader can answer goes, from an openraft error.
enum Route {
    /// No leader is known yet: wait for an election.
    Wait,
    /// Ask the leader at this address.
    Leader(NodeId, String),
}

impl Route {
    fn of(f: Option<&openraft::errors::ForwardToLeader<TypeConfig>>) -> Option<Route> {
        let f = f?;
        Some(match (f.leader_id, f.leader_node.as_ref()) {
            (Some(id), Some(node)) => Route::Leader(id, node.addr.clone()),
            _ => Route::Wait,
        })
    }
}

impl Store {
    /// Opens (or creates) the node's state under `dir` and starts Raft. A new single node
    /// initializes itself as the only voter.
    pub async fn open(dir: &Path, opts: StoreOptions) -> Result<Store, StoreError> {
        std::fs::create_dir_all(dir).map_err(StoreError::internal)?;
        let db = Arc::new(open_db(&dir.join("raft.redb")).await?);
        let db_ref = Arc::downgrade(&db);
        let space = Arc::new(Space::new(dir));
        let log = LogStore::open(db.clone(), space.clone()).map_err(StoreError::internal)?;
        let flushes = log.flushes();
        let log_bytes = log.bytes();
        let linger = log.linger_switch();
        let voted_for = log.voted_for();
        let cache = Arc::new(Cache::with_observers(opts.cache, opts.observers.clone()));
        let snapshots = Snapshots::open(dir, &db)?;
        let sm = StateMachine::new(cache.clone(), snapshots.clone(), space.clone());
        let keep = (opts.snapshot_every / 10).min(1000);
        let config = Config {
            cluster_name: "apiserver".into(),
            heartbeat_interval: opts.heartbeat.as_millis() as u64,
            election_timeout_min: opts.election_timeout.as_millis() as u64,
            election_timeout_max: 2 * opts.election_timeout.as_millis() as u64,
            snapshot_policy: SnapshotPolicy::LogsSinceLast(opts.snapshot_every),
            // Entries kept behind a snapshot for followers that lag a little; one further
            // behind gets the snapshot.
            max_in_snapshot_log_to_keep: keep,
            // A member whose data directory was lost rejoins with an empty log; the leader then
            // starts its replication over instead of treating the shorter log as a fatal error.
            allow_log_reversion: Some(true),
            // A leader that restarts holds an election like any other node instead of resuming
            // in its old term. Resumed, it would answer read indexes from the committed id it
            // wrote last (a hint written with the next batch, so possibly behind what it had
            // acknowledged), and with the flushes of its own log off the commit path it may
            // have lost entries its followers hold under its own leader id, which it would then
            // write again with other contents.
            enable_leader_restore: Some(false),
            // A follower whose timer fires first asks whether the others would vote for it, and
            // stands (raising its term) only if a majority would. A replica that missed the
            // leader's heartbeats for a moment (starved of CPU, cut off, restarted) then cannot
            // depose a leader that the others still hear from: its higher term would make the
            // leader step down at its next append (etcd's --pre-vote, on by default).
            enable_pre_vote: Some(true),
            ..Default::default()
        };
        let config = Arc::new(config.validate().map_err(StoreError::internal)?);
        let peers = Peers::new(opts.peer_tls.clone());
        let raft = Raft::new(opts.node_id, config, Network { peers: peers.clone() }, log, sm)
            .await
            .map_err(StoreError::internal)?;
        // A new cluster is initialized by exactly one member, the one with the lowest id: the
        // first log entry carries the id of the node that wrote it, so entries written by several
        // members would conflict. The others learn the membership from its leader. A single node
        // is a group of itself.
        let mut members: BTreeMap<NodeId, BasicNode> =
            opts.initial_members.iter().map(|(id, addr)| (*id, BasicNode { addr: addr.clone() })).collect();
        if members.is_empty() {
            members.insert(opts.node_id, BasicNode { addr: opts.raft_addr.clone() });
        }
        let founder = members.keys().next() == Some(&opts.node_id);
        if founder && !opts.join_existing && !raft.is_initialized().await.map_err(StoreError::internal)? {
            raft.initialize(members).await.map_err(StoreError::internal)?;
        }
        // Whether this node leads a group whose other voters, counting only those that answered
        // lately, form a quorum without it; checked a few times a second, as it only tunes how
        // the log batches its flushes. With a voter down the leader's own flush is on the commit
        // path again, and then it must not wait.
        // The same look counts the leaders this node has seen come, for the metrics.
        let metrics = raft.metrics();
        let me = opts.node_id;
        let switch = linger.clone();
        let leader_changes = Arc::new(AtomicU64::new(0));
        let changes = leader_changes.clone();
        let answered_lately = opts.heartbeat * ANSWERED_LATELY;
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(100));
            let mut last_leader = None;
            while Arc::strong_count(&switch) > 1 {
                tick.tick().await;
                let m = metrics.borrow_watched();
                if m.current_leader.is_some() && m.current_leader != last_leader {
                    changes.fetch_add(1, Ordering::Relaxed);
                }
                last_leader = m.current_leader;
                let answered = |v: &NodeId| {
                    let acked = m.heartbeat.as_ref().and_then(|h| h.get(v).cloned().flatten());
                    acked.is_some_and(|at| openraft::Instant::elapsed(&*at) < answered_lately)
                };
                let (voters, others) =
                    m.membership_config.membership().voter_ids().fold((0, 0), |(n, o), v| (n + 1, o + usize::from(v != me && answered(&v))));
                switch.store(m.current_leader == Some(me) && others > voters / 2, Ordering::Relaxed);
            }
        });
        log_size::start(raft.clone(), &log_bytes, snapshots.clone(), keep);
        let round_trips = Arc::new(RoundTrips::default());
        round_trips::start(round_trips.clone(), peers.clone(), raft.clone(), opts.node_id);
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
        Ok(Store {
            raft,
            cache,
            node_id: opts.node_id,
            writes: forwarder::writes(peers.clone()),
            read_indexes: forwarder::read_indexes(peers.clone()),
            voted_for,
            peers,
            proposals: Default::default(),
            leader_changes,
            flushes,
            round_trips,
            linger,
            db: db_ref,
            db_path: dir.join("raft.redb"),
            snapshots,
            space,
            quota_bytes: opts.quota_bytes,
        })
    }

    /// Proposes a transaction and waits until this node has applied it. A follower forwards it
    /// to the leader and then waits for its own state machine to reach the entry, so that a
    /// client reads its own write on any replica. While the group has no leader (an election is
    /// running) the proposal waits for one, up to a few seconds.
    pub async fn write(&self, txn: Txn) -> Result<TxnResult, StoreError> {
        let span = trace::child(storage_span(&txn));
        self.propose(txn).instrument(span).await
    }

    async fn propose(&self, mut txn: Txn) -> Result<TxnResult, StoreError> {
        // A node whose log cannot grow refuses at once: the entry would wait in its writer.
        if let Some(why) = self.space.refusal() {
            return Err(StoreError::NoSpace(why));
        }
        // Past the quota only deletes go through, as etcd lets them under its space alarm.
        if self.over_quota() && !txn.ops.iter().all(|op| matches!(op.action, Action::Delete | Action::Check)) {
            return Err(StoreError::QuotaExceeded);
        }
        self.proposals.fetch_add(1, Ordering::Relaxed);
        // Every attempt below carries this id, so that the proposal applies at most once.
        txn.id = rand::random::<u64>().max(1);
        tracing::debug!(proposal = txn.id, "write proposed");
        let deadline = tokio::time::Instant::now() + LEADER_WAIT;
        loop {
            let route = match self.other_leader() {
                Some(route) => route,
                None => {
                    let span = trace::child("raft.propose");
                    txn.trace = trace::traceparent(&span);
                    match self.raft.client_write(txn.clone()).await {
                        Ok(resp) => {
                            tracing::debug!(proposal = txn.id, index = resp.log_id.index(), "write applied");
                            span.set_attribute("raft.index", resp.log_id.index() as i64);
                            return Ok(resp.data);
                        }
                        Err(e) => Route::of(e.forward_to_leader()).ok_or_else(|| StoreError::Unavailable(e.to_string()))?,
                    }
                }
            };
            match route {
                Route::Leader(id, addr) if id != self.node_id => {
                    // One span from the forward to this node's own apply of the entry.
                    let span = trace::child("raft.forward");
                    span.set_attribute("raft.leader", id as i64);
                    txn.trace = trace::traceparent(&span);
                    match self.writes.ask(id, &addr, txn.clone(), deadline).await {
                        Ok((index, result)) => {
                            tracing::debug!(proposal = txn.id, index, leader = id, "forwarded write answered");
                            span.set_attribute("raft.index", index as i64);
                            span.add_event("answered by the leader", Vec::new());
                            self.cache.wait_applied(index, LEADER_WAIT).await?;
                            tracing::debug!(proposal = txn.id, index, "forwarded write applied here");
                            return Ok(result);
                        }
                        Err(e) => self.retry_later(deadline, e).await?,
                    }
                }
                _ => self.wait_leader(deadline).await?,
            }
        }
    }

    /// A revision for a "Most Recent" read: the read index confirmed by a quorum (asked of the
    /// leader when this node follows), once the local state has applied it. Returns the
    /// applied revision.
    pub async fn linearizable_rev(&self) -> Result<u64, StoreError> {
        // The deliberately broken mode the fault-injection suite must catch: serve "Most
        // Recent" reads from local state without asking a quorum.
        fail::fail_point!("read-index-skip", |_| Ok(self.cache.applied()));
        if self.sole_voter_established() {
            return Ok(self.cache.applied());
        }
        let deadline = tokio::time::Instant::now() + LEADER_WAIT;
        loop {
            let route = match self.other_leader() {
                Some(route) => route,
                None => match self.raft.get_read_linearizer(ReadPolicy::ReadIndex).await {
                    Ok(linearizer) => return self.applied_through(linearizer.read_log_id().index()).await,
                    Err(e) => Route::of(e.forward_to_leader()).ok_or_else(|| StoreError::Unavailable(e.to_string()))?,
                },
            };
            match route {
                Route::Leader(id, addr) if id != self.node_id => match self.read_indexes.ask(id, &addr, (self.node_id, self.voted_for.get()), deadline).await {
                    Ok(index) => return self.applied_through(index).await,
                    Err(e) => self.retry_later(deadline, e).await?,
                },
                _ => self.wait_leader(deadline).await?,
            }
        }
    }

    /// The applied revision once it reaches the read index `index`. Waits on the cache, which
    /// the state machine advances as it applies, rather than on the Raft core's metrics, which
    /// a busy core publishes late.
    async fn applied_through(&self, index: u64) -> Result<u64, StoreError> {
        self.cache.wait_applied(index, LEADER_WAIT).await?;
        Ok(self.cache.applied())
    }

    /// Whether this node leads a group in which it is the only voter and has applied an entry
    /// of its own term. Then no other node can commit anything, every acknowledged write has
    /// been applied here (a write is acknowledged after its apply), and so has every entry of
    /// earlier terms: the applied revision is a linearizable read index without a round
    /// through the Raft core, whose queue a flood of proposals makes long. Adding voters takes
    /// a joint configuration, which this leader appends (its metrics show it from then on) and
    /// under which no other node can be elected without this node's vote.
    fn sole_voter_established(&self) -> bool {
        let metrics = self.raft.metrics();
        let m = metrics.borrow_watched();
        let membership = m.membership_config.membership();
        m.state == openraft::ServerState::Leader
            && membership.get_joint_config().len() == 1
            && membership.voter_ids().eq([self.node_id])
            && m.last_applied.as_ref().is_some_and(|applied| applied.committed_leader_id().term == m.current_term)
    }

    /// The leader, when this node knows another node leads: a follower then goes to it at once
    /// rather than through its own Raft core, which is busy with the leader's appends. Should
    /// the leadership have moved meanwhile, the call fails and the caller tries again.
    fn other_leader(&self) -> Option<Route> {
        let metrics = self.raft.metrics();
        let m = metrics.borrow_watched();
        let id = m.current_leader.filter(|id| *id != self.node_id)?;
        let node = m.membership_config.membership().get_node(&id)?;
        Some(Route::Leader(id, node.addr.clone()))
    }

    /// After a failed call to the leader: wait a moment (leadership may be moving), unless the
    /// deadline has passed.
    async fn retry_later(&self, deadline: tokio::time::Instant, why: String) -> Result<(), StoreError> {
        if tokio::time::Instant::now() >= deadline {
            return Err(StoreError::Unavailable(format!("the leader did not answer: {why}")));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        Ok(())
    }

    /// New peer certificates for the connections made from now on (see `Peers::set_tls`).
    pub fn set_peer_tls(&self, tls: PeerTls) -> Result<(), String> {
        self.peers.set_tls(tls)
    }

    /// Serves the peer service (Raft RPCs, forwarded writes, read index) on `listener` until
    /// `shutdown` completes.
    pub async fn serve_peers(
        &self,
        listener: tokio::net::TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<(), StoreError> {
        service::serve(self.raft.clone(), self.peers.clone(), self.snapshots.clone(), listener, shutdown).await.map_err(StoreError::Internal)
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

    /// A backup of the state at the newest committed revision (read as a "Most Recent" read
    /// is): its header and the pieces of its file (see `backup`), made as they are taken. The
    /// objects are the cache's own, not copies.
    pub async fn backup(&self) -> Result<(crate::backup::Header, impl Iterator<Item = std::io::Result<Vec<u8>>> + Send + 'static), StoreError> {
        self.linearizable_rev().await?;
        let (revision, objects, _) = self.cache.snapshot();
        let time = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or_default();
        let header = crate::backup::Header { format: 1, revision, node: self.node_id, time, objects: objects.len() as u64 };
        let pieces = crate::backup::pieces(header.clone(), objects).map_err(StoreError::internal)?;
        Ok((header, pieces))
    }

    /// `--quota-backend-bytes` (0: none).
    pub fn quota_bytes(&self) -> u64 {
        self.quota_bytes
    }

    /// The size of the database file on disk.
    pub fn file_bytes(&self) -> u64 {
        self.db_path.metadata().map_or(0, |m| m.len())
    }

    /// Whether the state has outgrown `--quota-backend-bytes` (until deletes bring it back under).
    pub fn over_quota(&self) -> bool {
        self.quota_bytes > 0 && self.cache.bytes() >= self.quota_bytes
    }

    /// Why this node refuses writes for want of space, while it does.
    pub fn space_shortage(&self) -> Option<String> {
        self.space.refusal()
    }

    /// Whether this node knows a leader (for readiness).
    pub fn has_leader(&self) -> bool {
        self.raft.metrics().borrow_watched().current_leader.is_some()
    }

    pub fn is_leader(&self) -> bool {
        self.raft.is_leader()
    }

    /// The committed and applied log indexes, for readiness.
    pub fn progress(&self) -> (u64, u64) {
        let s = self.status();
        (s.committed, s.applied)
    }

    /// This node's view of the group, for metrics.
    pub fn status(&self) -> RaftStatus {
        let m = self.raft.metrics().borrow_watched().clone();
        let applied = m.last_applied.map(|l| l.index()).unwrap_or(0);
        RaftStatus {
            term: m.current_term,
            leader: m.current_leader,
            is_leader: m.current_leader == Some(self.node_id),
            committed: m.local_committed.map(|l| l.index()).unwrap_or(applied),
            applied,
            proposals: self.proposals.load(Ordering::Relaxed),
            leader_changes: self.leader_changes.load(Ordering::Relaxed),
            log_flushes: self.flushes.read(),
            log_lingers: self.linger.load(Ordering::Relaxed),
        }
    }

    /// The round trips measured to each other member since this node started, by node id.
    pub fn peer_round_trips(&self) -> Vec<(NodeId, TimingStats)> {
        self.round_trips.read()
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

/// The name of a write's storage span in a traced request: kube-apiserver's storage spans' names
/// (written for etcd), by what the transaction's first operation does, so that a trace reads as
/// kube-apiserver's does.
fn storage_span(txn: &Txn) -> &'static str {
    match txn.ops.first() {
        Some(Op { action: Action::Put(_), cond: Cond::Absent, .. }) => "Create etcd3",
        Some(Op { action: Action::Delete, .. }) => "Delete etcd3",
        _ => "GuaranteedUpdate etcd3",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Action, Cond, Op};

    #[tokio::test]
    async fn a_lone_voter_reads_without_its_core_once_it_applied_its_own_entry() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), StoreOptions::default()).await.unwrap();
        let put = Txn::new(vec![Op { key: "/k".into(), cond: Cond::Absent, action: Action::Put(bytes::Bytes::from_static(b"{}")) }]);
        store.write(put).await.unwrap();
        assert!(store.sole_voter_established());
        let applied = store.cache.applied();
        assert_eq!(store.linearizable_rev().await.unwrap(), applied);
        store.shutdown().await;
    }
}

