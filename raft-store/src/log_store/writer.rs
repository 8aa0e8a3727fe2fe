//! The log's writer thread: it folds queued jobs (appends, metadata, truncations, purges) into
//! redb transactions, one fsync each, and completes them in order; the committed log id rides
//! along with a batch, and a purge's entries go a slice per batch. A batch waits while the file
//! system is short of space (`space`).

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use openraft::storage::IOFlushed;
use redb::{Database, ReadableTable};
use tracing_opentelemetry::OpenTelemetrySpanExt;

use super::{Shared, KEY_COMMITTED, KEY_PURGED, LOG, META};
use crate::error::io_err;
use crate::space::{self, Space};
use crate::timings::{TimingStats, Timings};
use crate::types::TypeConfig;

/// Most jobs the writer folds into one transaction.
const MAX_BATCH: usize = 1024;

/// Most purged entries the writer deletes in one transaction. A snapshot purges the tens of
/// thousands of entries before it; deleted at once they held every append behind them for
/// about 190 ms, in slices each batch waits about 4 ms more.
pub(super) const PURGE_SLICE: u64 = 1024;

/// How long a newer committed log id may wait for a batch to ride along with, before it is
/// written on its own.
pub(super) const COMMITTED_LINGER: Duration = Duration::from_millis(10);

/// How long a leader's writer gathers appends before flushing (see `linger_switch`).
const LEADER_LINGER: Duration = Duration::from_millis(1);

pub(super) enum Job {
    /// Entries with their log indexes, the callback once they are flushed, and the spans of
    /// the traced ones among them (ended by the flush).
    Append(Vec<(u64, Vec<u8>)>, IOFlushed<TypeConfig>, Vec<tracing::Span>),
    Meta(&'static str, Vec<u8>, tokio::sync::oneshot::Sender<io::Result<()>>),
    TruncateFrom(u64, tokio::sync::oneshot::Sender<io::Result<()>>),
    /// Record the last purged log id; the writer then deletes the entries up to its index, a
    /// slice per batch.
    Purge(u64, Vec<u8>),
}

/// Upper bounds of the flush time buckets, in seconds: 0.25 ms doubling to 8.192 s (etcd's WAL
/// fsync histogram starts at 1 ms; a flush here often takes less).
pub const FLUSH_BUCKETS: [f64; crate::timings::BUCKETS] =
    [0.00025, 0.0005, 0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1.024, 2.048, 4.096, 8.192];

/// Counts the log's disk flushes since the node started, for metrics.
#[derive(Debug)]
pub struct Flushes {
    timings: Timings,
    pub(super) entries: AtomicU64,
}

impl Default for Flushes {
    fn default() -> Self {
        Flushes { timings: Timings::new(FLUSH_BUCKETS), entries: AtomicU64::new(0) }
    }
}

/// A reading of [`Flushes`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FlushStats {
    /// Transactions committed (each with one fsync), their times and buckets.
    pub timings: TimingStats,
    /// Log entries those transactions wrote.
    pub entries: u64,
}

impl Flushes {
    pub fn read(&self) -> FlushStats {
        FlushStats { timings: self.timings.read(), entries: self.entries.load(Ordering::Relaxed) }
    }

    fn record(&self, took: Duration) {
        self.timings.record(took);
    }
}

/// Commits queued jobs in batches: one redb transaction and one fsync per batch, then
/// completes every job of the batch in order. The newest committed log id rides along with a
/// batch, or is written alone once the log has been idle for `COMMITTED_LINGER`. With the
/// linger switch on, a batch waits up to `LEADER_LINGER` for more appends only when the previous
/// one held several: appends are then queueing, and waiting saves flushes; a lone client's
/// append would only wait.
pub(super) fn run(db: Arc<Database>, rx: mpsc::Receiver<Job>, shared: std::sync::Weak<Shared>, space: Arc<Space>) {
    let mut last_appends = 0;
    // The index up to which purged entries are still to be deleted.
    let mut purge_to = None;
    loop {
        let idle = if purge_to.is_some() { Duration::ZERO } else { COMMITTED_LINGER };
        let mut batch = match rx.recv_timeout(idle) {
            Ok(first) => vec![first],
            Err(mpsc::RecvTimeoutError::Timeout) => Vec::new(),
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        };
        let Some(shared) = shared.upgrade() else { return };
        // Taken before the queue is drained: the appends of the entries it covers were queued
        // before it was set, so they are in this batch or an earlier one.
        let mut committed = shared.committed.lock().unwrap().take();
        let queueing = last_appends > 1 && shared.linger.load(Ordering::Relaxed);
        let until = (!batch.is_empty() && queueing).then(|| Instant::now() + LEADER_LINGER);
        while batch.len() < MAX_BATCH {
            let next = match until {
                Some(until) => rx.recv_timeout(until.saturating_duration_since(Instant::now())).ok(),
                None => rx.try_recv().ok(),
            };
            match next {
                Some(job) => batch.push(job),
                None => break,
            }
        }
        if batch.len() == MAX_BATCH {
            // The queue may hold more of those appends; the id waits for a later batch (unless
            // a newer one has been set meanwhile).
            if let Some(id) = committed.take() {
                shared.committed.lock().unwrap().get_or_insert(id);
            }
        }
        if batch.is_empty() && committed.is_none() && purge_to.is_none() {
            continue;
        }
        last_appends = batch.iter().filter(|job| matches!(job, Job::Append(..))).count();
        // A purge this batch records is deleted from here on only once the record is on disk:
        // were its slices deleted after a failed commit, a crash would leave a hole after the
        // last purged id on disk.
        let target = batch.iter().filter_map(|job| if let Job::Purge(to, _) = job { Some(*to) } else { None }).fold(purge_to, |a, b| a.max(Some(b)));
        // Held, not failed, while the file system is short of space (see `space`).
        let bytes = batch_bytes(&batch);
        while !space.allows(bytes) {
            std::thread::sleep(space::RETRY);
        }
        let started = Instant::now();
        let result = commit_batch(&db, &batch, committed.as_deref(), target);
        if let Ok(done) = &result {
            purge_to = target.filter(|_| !done.purged_all);
            let _ = shared.bytes.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| Some((b + done.added).saturating_sub(done.removed)));
        }
        let took = started.elapsed();
        tracing::debug!(jobs = batch.len(), micros = took.as_micros() as u64, "log flushed");
        shared.flushes.record(took);
        let mut appended = Vec::new();
        let batch_len = batch.len();
        for job in batch {
            let res = result.as_ref().map(|_| ()).map_err(io_err);
            match job {
                Job::Append(entries, cb, spans) => {
                    appended.extend(entries.iter().map(|(i, _)| *i));
                    for span in &spans {
                        span.set_attribute("raft.flush.jobs", batch_len as i64);
                        span.set_attribute("raft.flush.seconds", took.as_secs_f64());
                    }
                    cb.io_completed(res);
                }
                Job::Meta(_, _, done) | Job::TruncateFrom(_, done) => {
                    let _ = done.send(res);
                }
                Job::Purge(..) => {}
            }
        }
        if result.is_ok() {
            shared.flushes.entries.fetch_add(appended.len() as u64, Ordering::Relaxed);
            let mut pending = shared.pending.lock().unwrap();
            for i in appended {
                pending.remove(&i);
            }
        }
    }
}

/// About how many bytes `batch` adds to the log.
fn batch_bytes(batch: &[Job]) -> u64 {
    batch
        .iter()
        .map(|job| match job {
            Job::Append(entries, ..) => entries.iter().map(|(_, e)| e.len() as u64 + 16).sum(),
            Job::Meta(_, value, _) | Job::Purge(_, value) => value.len() as u64 + 16,
            Job::TruncateFrom(..) => 0,
        })
        .sum()
}

/// What a committed batch did to the log.
struct Committed {
    /// No purged entry is left.
    purged_all: bool,
    /// Bytes of entries (keys and values) written and deleted.
    added: u64,
    removed: u64,
}

/// The bytes an entry takes in the log's table: its value and its key.
fn entry_bytes(value: &[u8]) -> u64 {
    value.len() as u64 + 8
}

/// Commits `batch` in one transaction, with the committed log id and a slice of the purged
/// entries up to `purge_to`.
fn commit_batch(db: &Database, batch: &[Job], committed: Option<&[u8]>, purge_to: Option<u64>) -> Result<Committed, String> {
    let txn = db.begin_write().map_err(|e| e.to_string())?;
    let mut done = Committed { purged_all: true, added: 0, removed: 0 };
    {
        let mut log = txn.open_table(LOG).map_err(|e| e.to_string())?;
        let mut meta = txn.open_table(META).map_err(|e| e.to_string())?;
        if let Some(committed) = committed {
            meta.insert(KEY_COMMITTED, committed).map_err(|e| e.to_string())?;
        }
        for job in batch {
            match job {
                Job::Append(entries, ..) => {
                    for (i, bytes) in entries {
                        done.added += entry_bytes(bytes);
                        if let Some(old) = log.insert(*i, bytes.as_slice()).map_err(|e| e.to_string())? {
                            done.removed += entry_bytes(old.value());
                        }
                    }
                }
                Job::Meta(key, value, _) => {
                    meta.insert(*key, value.as_slice()).map_err(|e| e.to_string())?;
                }
                Job::TruncateFrom(index, _) => {
                    log.retain_in(*index.., |_, value| {
                        done.removed += entry_bytes(value);
                        false
                    })
                    .map_err(|e| e.to_string())?;
                }
                // Recorded before the entries go: should a crash interrupt the deletion, what
                // is left below it is never read, and the next purge deletes it.
                Job::Purge(_, purged) => {
                    meta.insert(KEY_PURGED, purged.as_slice()).map_err(|e| e.to_string())?;
                }
            }
        }
        if let Some(to) = purge_to {
            let first = log.first().map_err(|e| e.to_string())?.map(|(k, _)| k.value());
            done.purged_all = match first {
                Some(first) if first <= to => {
                    let end = to.min(first.saturating_add(PURGE_SLICE - 1));
                    log.retain_in(..=end, |_, value| {
                        done.removed += entry_bytes(value);
                        false
                    })
                    .map_err(|e| e.to_string())?;
                    end == to
                }
                _ => true,
            };
        }
    }
    // `sleep(ms)` makes the flush slow, `return` makes it fail.
    fail::fail_point!("raft-log-fsync", |_| Err("injected fsync failure".to_string()));
    txn.commit().map_err(|e| e.to_string())?;
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flushes_count_into_cumulative_buckets_and_a_slower_one_into_none() {
        let f = Flushes::default();
        for micros in [100, 600, 20_000, 10_000_000] {
            f.record(Duration::from_micros(micros));
        }
        let s = f.read().timings;
        assert_eq!(s.count, 4);
        assert_eq!(s.seconds, 10.0207);
        // ≤0.25 ms, ≤0.5, ≤1, ... ≤16 ms, ≤32 ms, ... ≤8.192 s; the 10 s flush only in +Inf.
        assert_eq!(s.at_most, [1, 1, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3]);
    }
}
