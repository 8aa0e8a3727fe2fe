//! The store's figures, read at each scrape: the Raft group under etcd's names (leadership,
//! proposals, WAL fsyncs, database size and quota, keys), the database size and the objects by
//! resource kube-apiserver reports of its storage, and this server's own Raft figures where etcd
//! has no name for them.

use prometheus::{IntCounter, IntGauge, IntGaugeVec, Registry};
use raft_store::{RaftStatus, TimingStats, FLUSH_BUCKETS, RTT_BUCKETS};

use super::family::{self, Level};

/// What the store tells at a scrape.
#[derive(Debug, Clone)]
pub struct StoreFigures {
    pub node_id: u64,
    pub raft: RaftStatus,
    /// The database file's size on disk.
    pub file_bytes: u64,
    /// The current objects' keys and bytes.
    pub live_bytes: u64,
    pub keys: u64,
    /// `--quota-backend-bytes` (0: none).
    pub quota_bytes: u64,
    /// Objects stored, by (group, resource).
    pub objects: Vec<(&'static str, &'static str, u64)>,
    /// Round trips to each other member, by node id.
    pub peer_round_trips: Vec<(u64, TimingStats)>,
}

/// etcd's WAL fsync buckets: 1 ms doubling to 8.192 s.
const FSYNC_FROM: f64 = 0.001;

pub struct Storage {
    has_leader: IntGauge,
    is_leader: IntGauge,
    leader_changes: IntCounter,
    committed: IntGauge,
    applied: IntGauge,
    db_bytes: IntGauge,
    db_in_use: IntGauge,
    quota: IntGauge,
    keys: IntGauge,
    server_id: IntGaugeVec,
    storage_size: IntGaugeVec,
    storage_objects: IntGaugeVec,
    resource_objects: IntGaugeVec,
    term: IntGauge,
    leader_id: IntGauge,
    apply_lag: IntGauge,
    lingering: IntGauge,
    proposals: IntCounter,
    flushed_entries: IntCounter,
}

impl Storage {
    pub(super) fn new(r: &Registry) -> Storage {
        let etcd = Level::None;
        Storage {
            has_leader: family::single_gauge(r, "etcd_server_has_leader", etcd, "Whether or not a leader exists. 1 is existence, 0 is not."),
            is_leader: family::single_gauge(r, "etcd_server_is_leader", etcd, "Whether or not this member is a leader. 1 if is, 0 otherwise."),
            leader_changes: family::single_counter(r, "etcd_server_leader_changes_seen_total", etcd, "The number of leader changes seen."),
            // Gauges, for all their names, as etcd declares them.
            committed: family::single_gauge(r, "etcd_server_proposals_committed_total", etcd, "The total number of consensus proposals committed."),
            applied: family::single_gauge(r, "etcd_server_proposals_applied_total", etcd, "The total number of consensus proposals applied."),
            db_bytes: family::single_gauge(r, "etcd_mvcc_db_total_size_in_bytes", etcd, "Total size of the underlying database physically allocated in bytes."),
            db_in_use: family::single_gauge(r, "etcd_mvcc_db_total_size_in_use_in_bytes", etcd, "Total size of the underlying database logically in use in bytes."),
            quota: family::single_gauge(r, "etcd_server_quota_backend_bytes", etcd, "Current backend storage quota size in bytes."),
            keys: family::single_gauge(r, "etcd_debugging_mvcc_keys_total", etcd, "Total number of keys."),
            server_id: family::gauge(r, "etcd_server_id", etcd, "Server or member ID in hexadecimal format. 1 for 'server_id' label with current ID.", &["server_id"]),
            storage_size: family::gauge(
                r,
                "apiserver_storage_size_bytes",
                Level::Stable,
                "Size of the storage database file physically allocated in bytes.",
                &["storage_cluster_id"],
            ),
            storage_objects: family::gauge(
                r,
                "apiserver_storage_objects",
                Level::Stable,
                "[DEPRECATED, consider using apiserver_resource_objects instead] Number of stored objects at the time of last check split by kind. In case of a fetching error, the value will be -1.",
                &["resource"],
            ),
            resource_objects: family::gauge(
                r,
                "apiserver_resource_objects",
                Level::Alpha,
                "Number of stored objects at the time of last check split by kind. In case of a fetching error, the value will be -1.",
                &["group", "resource"],
            ),
            term: family::single_gauge(r, "apiserver_raft_term", etcd, "Current Raft term of this node."),
            leader_id: family::single_gauge(r, "apiserver_raft_leader_id", etcd, "Node id of the leader this node knows, 0 when none."),
            apply_lag: family::single_gauge(r, "apiserver_raft_apply_lag", etcd, "Committed entries not applied yet on this node."),
            lingering: family::single_gauge(
                r,
                "apiserver_raft_log_flush_lingering",
                etcd,
                "1 while this node's log gathers appends briefly before each flush (a leader whose followers, answering, form a quorum without it).",
            ),
            proposals: family::single_counter(r, "apiserver_raft_proposals_total", etcd, "Writes proposed through this node."),
            flushed_entries: family::single_counter(r, "apiserver_raft_log_flushed_entries_total", etcd, "Raft log entries written to disk by the WAL's fsyncs."),
        }
    }

    /// Sets every figure from `f`.
    pub(super) fn set(&self, f: &StoreFigures) {
        let raft = &f.raft;
        self.has_leader.set(i64::from(raft.leader.is_some()));
        self.is_leader.set(i64::from(raft.is_leader));
        set_counter(&self.leader_changes, raft.leader_changes);
        self.committed.set(raft.committed as i64);
        self.applied.set(raft.applied as i64);
        self.db_bytes.set(f.file_bytes as i64);
        self.db_in_use.set(f.live_bytes as i64);
        self.quota.set(f.quota_bytes as i64);
        self.keys.set(f.keys as i64);
        self.server_id.reset();
        self.server_id.with_label_values(&[&format!("{:x}", f.node_id)]).set(1);
        // One storage behind this server, named as kube-apiserver names its first etcd.
        self.storage_size.with_label_values(&["etcd-0"]).set(f.file_bytes as i64);
        // Resources gone since the last scrape (a custom resource's definition deleted) vanish.
        self.storage_objects.reset();
        self.resource_objects.reset();
        for (group, resource, n) in &f.objects {
            let group_resource = if group.is_empty() { resource.to_string() } else { format!("{resource}.{group}") };
            self.storage_objects.with_label_values(&[&group_resource]).set(*n as i64);
            self.resource_objects.with_label_values(&[group, resource]).set(*n as i64);
        }
        self.term.set(raft.term as i64);
        self.leader_id.set(raft.leader.unwrap_or(0) as i64);
        self.apply_lag.set(raft.committed.saturating_sub(raft.applied) as i64);
        self.lingering.set(i64::from(raft.log_lingers));
        set_counter(&self.proposals, raft.proposals);
        set_counter(&self.flushed_entries, raft.log_flushes.entries);
    }
}

/// Brings a counter kept elsewhere up to `total`.
fn set_counter(c: &IntCounter, total: u64) {
    c.inc_by(total.saturating_sub(c.get()));
}

/// `etcd_disk_wal_fsync_duration_seconds`: the log's flushes (one fsync each), from the counts
/// the log keeps, in etcd's buckets.
pub(super) fn fsync_family(raft: &RaftStatus) -> prometheus::proto::MetricFamily {
    let f = &raft.log_flushes.timings;
    let buckets: Vec<(f64, u64)> = FLUSH_BUCKETS.iter().copied().zip(f.at_most).filter(|(bound, _)| *bound >= FSYNC_FROM).collect();
    let series = family::Series { labels: Vec::new(), buckets, count: f.count, sum: f.seconds };
    family::histogram_family("etcd_disk_wal_fsync_duration_seconds", Level::None, "The latency distributions of fsync called by WAL.", &[series])
}

/// `etcd_network_peer_round_trip_time_seconds`: the probes' round trips to each other member,
/// labelled `To` with its id in hexadecimal, as etcd labels its peers.
pub(super) fn round_trip_family(f: &StoreFigures) -> prometheus::proto::MetricFamily {
    let series: Vec<family::Series> = f
        .peer_round_trips
        .iter()
        .map(|(peer, t)| family::Series {
            labels: vec![("To", format!("{peer:x}"))],
            buckets: RTT_BUCKETS.iter().copied().zip(t.at_most).collect(),
            count: t.count,
            sum: t.seconds,
        })
        .collect();
    family::histogram_family("etcd_network_peer_round_trip_time_seconds", Level::None, "Round-Trip-Time histogram between peers", &series)
}
