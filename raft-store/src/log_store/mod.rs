//! The Raft log and vote in redb. Appends return at once and a single writer thread (`writer.rs`) commits
//! them (with fsync) in batches, so concurrent proposals share one disk flush; the committed log
//! id, only a hint for the next start, rides along with a batch instead of costing a flush. A
//! leader whose followers form a quorum without it gathers appends a little longer per flush
//! while they arrive together; a lone append is flushed at once.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::io;
use std::ops::{Bound, RangeBounds};
use std::sync::mpsc;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex};

use openraft::entry::RaftEntry;
use openraft::storage::{IOFlushed, LogState, RaftLogReader, RaftLogStorage};
use openraft::OptionalSend;
use redb::{Database, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition};
use serde::{de::DeserializeOwned, Serialize};

use crate::error::io_err;
use crate::space::Space;
use crate::types::{Entry, LeaderId, LogId, Txn, TypeConfig};
use tracing_opentelemetry::OpenTelemetrySpanExt;

mod writer;

use writer::Job;
pub use writer::{FlushStats, Flushes, FLUSH_BUCKETS};

type Vote = openraft::alias::VoteOf<TypeConfig>;

const LOG: TableDefinition<u64, &[u8]> = TableDefinition::new("log");
pub(crate) const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");

const KEY_VOTE: &str = "vote";
const KEY_COMMITTED: &str = "committed";
const KEY_PURGED: &str = "last_purged";
const KEY_FORMAT: &str = "format";

/// The layout of the log's database this version writes and reads. A database without one
/// recorded (written before formats were) has this layout and is stamped with it; a newer one
/// is refused rather than misread.
pub const FORMAT: u32 = 1;

/// Stamps a database without a format with [`FORMAT`]; refuses a newer one.
fn stamp_format(meta: &mut redb::Table<&str, &[u8]>) -> io::Result<()> {
    let recorded = meta.get(KEY_FORMAT).map_err(io_err)?.map(|v| decode::<u32>(v.value()));
    match recorded {
        None => {
            // A vote recorded without a format: a database an earlier version wrote.
            if meta.get(KEY_VOTE).map_err(io_err)?.is_some() {
                tracing::info!(format = FORMAT, "raft.redb was written before data formats were recorded; it has format {FORMAT}'s layout and is stamped with it");
            }
            meta.insert(KEY_FORMAT, encode(&FORMAT)?.as_slice()).map_err(io_err)?;
            Ok(())
        }
        Some(Ok(format)) if format <= FORMAT => Ok(()),
        Some(Ok(format)) => Err(io_err(format!(
            "raft.redb is in format {format}, newer than this version reads ({FORMAT}): run the version that wrote it, or a newer one"
        ))),
        Some(Err(e)) => Err(e),
    }
}

pub(crate) fn encode<T: Serialize>(v: &T) -> io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    ciborium::into_writer(v, &mut buf).map_err(io_err)?;
    Ok(buf)
}

pub(crate) fn decode<T: DeserializeOwned>(b: &[u8]) -> io::Result<T> {
    ciborium::from_reader(b).map_err(io_err)
}

struct Shared {
    db: Arc<Database>,
    /// Entries appended but not yet committed to redb; readers look here first.
    pending: Mutex<BTreeMap<u64, Entry>>,
    writer: Mutex<mpsc::Sender<Job>>,
    state: Mutex<Tail>,
    /// The newest committed log id (encoded) not yet written. It is only a hint for the next
    /// start, so it is written with the next batch instead of costing a flush of its own.
    committed: Mutex<Option<Vec<u8>>>,
    flushes: Arc<Flushes>,
    /// The bytes of the entries in the log's table (keys and values), kept by the writer.
    bytes: Arc<AtomicU64>,
    /// Set while this node leads a group in which the other voters form a quorum.
    linger: Arc<AtomicBool>,
    /// The leader of the newest vote, raised before the vote is saved (see `LogStore::voted_for`).
    voted_for: Arc<VotedFor>,
}

#[derive(Clone, Copy)]
struct Tail {
    last_purged: Option<LogId>,
    last_log: Option<LogId>,
    vote: Option<Vote>,
}

/// The leader id (term and node) of this node's newest vote. Raised before a vote is saved,
/// so before this node grants it or follows the leader it names: while it reads `id`, no leader
/// with a greater id (openraft orders leader ids by term, then node) has this node's vote.
#[derive(Debug)]
pub struct VotedFor(Mutex<Option<LeaderId>>);

impl VotedFor {
    pub fn get(&self) -> Option<LeaderId> {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn raise(&self, to: LeaderId) {
        let mut id = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *id = (*id).max(Some(to));
    }
}

/// Records in a new database that the log up to `last` is gone (a snapshot beside it holds
/// what it held), so that the log starts after it; with the vote of the node's earlier
/// database, if it had one (encoded as the log writes it).
pub(crate) fn mark_restored(db: &Database, last: &LogId, vote: Option<&[u8]>) -> io::Result<()> {
    let txn = db.begin_write().map_err(io_err)?;
    {
        txn.open_table(LOG).map_err(io_err)?;
        let mut meta = txn.open_table(META).map_err(io_err)?;
        stamp_format(&mut meta)?;
        let bytes = encode(last)?;
        meta.insert(KEY_PURGED, bytes.as_slice()).map_err(io_err)?;
        meta.insert(KEY_COMMITTED, bytes.as_slice()).map_err(io_err)?;
        if let Some(vote) = vote {
            meta.insert(KEY_VOTE, vote).map_err(io_err)?;
        }
    }
    txn.commit().map_err(io_err)
}

/// A stopped node's vote (encoded) and its log entries after index `after`, in order.
pub(crate) fn read_stopped(db: &Database, after: u64) -> io::Result<(Option<Vec<u8>>, Vec<Entry>)> {
    let read = db.begin_read().map_err(io_err)?;
    let vote = match read.open_table(META) {
        Ok(meta) => meta.get(KEY_VOTE).map_err(io_err)?.map(|v| v.value().to_vec()),
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok((None, Vec::new())),
        Err(e) => return Err(io_err(e)),
    };
    let log = read.open_table(LOG).map_err(io_err)?;
    let mut entries = Vec::new();
    for item in log.range(after.saturating_add(1)..).map_err(io_err)? {
        let (_, v) = item.map_err(io_err)?;
        entries.push(decode::<Entry>(v.value())?);
    }
    Ok((vote, entries))
}

/// Handle to the log; clones share it.
#[derive(Clone)]
pub struct LogStore {
    shared: Arc<Shared>,
}

impl LogStore {
    pub fn open(db: Arc<Database>, space: Arc<Space>) -> io::Result<Self> {
        let txn = db.begin_write().map_err(io_err)?;
        {
            txn.open_table(LOG).map_err(io_err)?;
            stamp_format(&mut txn.open_table(META).map_err(io_err)?)?;
        }
        txn.commit().map_err(io_err)?;

        let read = db.begin_read().map_err(io_err)?;
        let meta = read.open_table(META).map_err(io_err)?;
        let get_meta = |k: &str| -> io::Result<Option<Vec<u8>>> {
            Ok(meta.get(k).map_err(io_err)?.map(|v| v.value().to_vec()))
        };
        let vote: Option<Vote> = get_meta(KEY_VOTE)?.map(|b| decode(&b)).transpose()?;
        let last_purged: Option<LogId> = get_meta(KEY_PURGED)?.map(|b| decode(&b)).transpose()?;
        let log = read.open_table(LOG).map_err(io_err)?;
        // Entries up to `last_purged` may be left over from a purge a crash interrupted.
        let last_log = match log.last().map_err(io_err)? {
            Some((_, v)) => Some(decode::<Entry>(v.value())?.log_id()).max(last_purged),
            None => last_purged,
        };
        let bytes = log.stats().map_err(io_err)?.stored_bytes();
        drop(log);
        drop(meta);
        drop(read);

        let (tx, rx) = mpsc::channel();
        let shared = Arc::new(Shared {
            db: db.clone(),
            pending: Mutex::new(BTreeMap::new()),
            writer: Mutex::new(tx),
            state: Mutex::new(Tail { last_purged, last_log, vote }),
            committed: Mutex::new(None),
            flushes: Default::default(),
            bytes: Arc::new(AtomicU64::new(bytes)),
            linger: Default::default(),
            voted_for: Arc::new(VotedFor(Mutex::new(vote.map(|v| *v.leader_id())))),
        });
        let weak = Arc::downgrade(&shared);
        std::thread::Builder::new()
            .name("raft-log-writer".into())
            .spawn(move || writer::run(db, rx, weak, space))
            .map_err(io_err)?;
        Ok(LogStore { shared })
    }

    /// The flush counters; they outlive the log.
    pub fn flushes(&self) -> Arc<Flushes> {
        self.shared.flushes.clone()
    }

    /// The bytes the log's entries take, as the writer keeps them.
    pub fn bytes(&self) -> Arc<AtomicU64> {
        self.shared.bytes.clone()
    }

    /// The switch that makes the writer gather appends for `LEADER_LINGER` before it flushes.
    /// Meant for a leader whose followers, all answering, form a quorum on their own: its flush
    /// is then off the commit path, and fewer, larger flushes leave it more CPU for serving.
    pub fn linger_switch(&self) -> Arc<AtomicBool> {
        self.shared.linger.clone()
    }

    /// The leader of this node's newest vote (see [`VotedFor`]).
    pub fn voted_for(&self) -> Arc<VotedFor> {
        self.shared.voted_for.clone()
    }

    fn send(&self, job: Job) -> io::Result<()> {
        self.shared.writer.lock().unwrap().send(job).map_err(|_| io_err("log writer stopped"))
    }

    async fn put_meta(&self, key: &'static str, value: Vec<u8>) -> io::Result<()> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.send(Job::Meta(key, value, tx))?;
        rx.await.map_err(|_| io_err("log writer stopped"))?
    }

    fn read_meta<T: DeserializeOwned>(&self, key: &str) -> io::Result<Option<T>> {
        let read = self.shared.db.begin_read().map_err(io_err)?;
        let meta = read.open_table(META).map_err(io_err)?;
        let v = meta.get(key).map_err(io_err)?;
        v.map(|v| decode(v.value())).transpose()
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, io::Error> {
        // Pending first: an entry that leaves `pending` is already committed to redb, so the
        // read transaction opened afterwards sees it.
        let mut out: BTreeMap<u64, Entry> = {
            let pending = self.shared.pending.lock().unwrap();
            pending.range(range.clone()).map(|(k, v)| (*k, v.clone())).collect()
        };
        let start = match range.start_bound() {
            Bound::Included(s) => *s,
            Bound::Excluded(s) => s + 1,
            Bound::Unbounded => 0,
        };
        let end = match range.end_bound() {
            Bound::Included(e) => Some(e + 1),
            Bound::Excluded(e) => Some(*e),
            Bound::Unbounded => None,
        };
        let read = self.shared.db.begin_read().map_err(io_err)?;
        let log = read.open_table(LOG).map_err(io_err)?;
        let iter = match end {
            Some(end) => log.range(start..end),
            None => log.range(start..),
        }
        .map_err(io_err)?;
        for item in iter {
            let (k, v) = item.map_err(io_err)?;
            let index = k.value();
            if let std::collections::btree_map::Entry::Vacant(slot) = out.entry(index) {
                slot.insert(decode(v.value())?);
            }
        }
        Ok(out.into_values().collect())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote>, io::Error> {
        Ok(self.shared.state.lock().unwrap().vote)
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = Self;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, io::Error> {
        let t = *self.shared.state.lock().unwrap();
        Ok(LogState { last_purged_log_id: t.last_purged, last_log_id: t.last_log })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote) -> Result<(), io::Error> {
        self.shared.voted_for.raise(*vote.leader_id());
        self.put_meta(KEY_VOTE, encode(vote)?).await?;
        self.shared.state.lock().unwrap().vote = Some(*vote);
        Ok(())
    }

    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), io::Error> {
        // Entries are committed only once they are flushed, so whichever batch carries this
        // id also holds (or follows) the entries it covers.
        *self.shared.committed.lock().unwrap() = Some(encode(&committed)?);
        Ok(())
    }

    async fn read_committed(&mut self) -> Result<Option<LogId>, io::Error> {
        Ok(self.read_meta::<Option<LogId>>(KEY_COMMITTED)?.flatten())
    }

    async fn append<I>(&mut self, entries: I, callback: IOFlushed<TypeConfig>) -> Result<(), io::Error>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut encoded = Vec::new();
        let mut last = None;
        // A traced write's entry: one span from here until its flush is on disk.
        let mut spans = Vec::new();
        {
            let mut pending = self.shared.pending.lock().unwrap();
            for entry in entries {
                let id = entry.log_id();
                if let openraft::EntryPayload::Normal(Txn { trace: Some(parent), .. }) = &entry.payload {
                    let span = crate::trace::continued(parent, "raft.append");
                    span.set_attribute("raft.index", id.index() as i64);
                    spans.push(span);
                }
                encoded.push((id.index(), encode(&entry)?));
                pending.insert(id.index(), entry);
                last = Some(id);
            }
        }
        if let Some(last) = last {
            self.shared.state.lock().unwrap().last_log = Some(last);
        }
        self.send(Job::Append(encoded, callback, spans))
    }

    async fn truncate_after(&mut self, last_log_id: Option<LogId>) -> Result<(), io::Error> {
        let from = last_log_id.map(|l| l.index() + 1).unwrap_or(0);
        {
            let mut pending = self.shared.pending.lock().unwrap();
            pending.retain(|k, _| *k < from);
            let mut t = self.shared.state.lock().unwrap();
            t.last_log = last_log_id.or(t.last_purged);
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.send(Job::TruncateFrom(from, tx))?;
        rx.await.map_err(|_| io_err("log writer stopped"))?
    }

    /// Returns at once: openraft reads no entry up to `log_id` from now on, and nothing needs
    /// the purge on disk (should it not get there, the entries are still there, after the last
    /// purged id still recorded). The writer deletes them a slice per batch, between appends.
    async fn purge(&mut self, log_id: LogId) -> Result<(), io::Error> {
        let purged = encode(&Some(log_id))?;
        {
            let mut t = self.shared.state.lock().unwrap();
            t.last_purged = Some(log_id);
            if t.last_log < Some(log_id) {
                t.last_log = Some(log_id);
            }
        }
        self.send(Job::Purge(log_id.index(), purged))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;
    use std::time::Duration;

    use super::writer::{COMMITTED_LINGER, PURGE_SLICE};
    use super::*;
    use openraft::type_config::TypeConfigExt;
    use openraft::vote::RaftLeaderId;

    fn log_id(term: u64, index: u64) -> LogId {
        LogId::new(openraft::alias::CommittedLeaderIdOf::<TypeConfig>::new(term, 1), index)
    }

    #[test]
    fn a_database_is_stamped_with_its_format_and_a_newer_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(Database::create(dir.path().join("raft.redb")).unwrap());
        drop(LogStore::open(db.clone(), Arc::new(Space::new(dir.path()))).unwrap());
        let read = db.begin_read().unwrap();
        let stamped = read.open_table(META).unwrap().get(KEY_FORMAT).unwrap().map(|v| decode::<u32>(v.value()).unwrap());
        assert_eq!(stamped, Some(FORMAT));
        drop(read);
        let txn = db.begin_write().unwrap();
        txn.open_table(META).unwrap().insert(KEY_FORMAT, encode(&(FORMAT + 1)).unwrap().as_slice()).unwrap();
        txn.commit().unwrap();
        let err = LogStore::open(db, Arc::new(Space::new(dir.path()))).err().expect("a newer format was opened");
        assert!(err.to_string().contains(&format!("format {}, newer than this version reads", FORMAT + 1)), "{err}");
    }

    #[tokio::test]
    async fn the_leader_a_vote_names_is_known_before_it_is_saved_and_after_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(Database::create(dir.path().join("raft.redb")).unwrap());
        let mut log = LogStore::open(db.clone(), Arc::new(Space::new(&std::env::temp_dir()))).unwrap();
        let voted_for = log.voted_for();
        assert_eq!(voted_for.get(), None);
        let vote = Vote::new(3, 2);
        log.save_vote(&vote).await.unwrap();
        assert_eq!(voted_for.get(), Some(LeaderId { term: 3, node_id: 2 }));
        // Votes only rise: a lesser one (never saved by openraft) leaves the greater.
        voted_for.raise(LeaderId { term: 3, node_id: 1 });
        assert_eq!(voted_for.get(), Some(LeaderId { term: 3, node_id: 2 }));
        drop(log);
        let reopened = LogStore::open(db, Arc::new(Space::new(&std::env::temp_dir()))).unwrap();
        assert_eq!(reopened.voted_for().get(), Some(LeaderId { term: 3, node_id: 2 }));
    }

    #[tokio::test]
    async fn a_committed_id_is_written_once_the_log_is_idle() {
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(Database::create(dir.path().join("raft.redb")).unwrap());
        let mut log = LogStore::open(db, Arc::new(Space::new(&std::env::temp_dir()))).unwrap();
        log.save_committed(Some(log_id(1, 7))).await.unwrap();
        // No append follows: the id is written on its own after the linger.
        let mut written = None;
        for _ in 0..200 {
            tokio::time::sleep(COMMITTED_LINGER).await;
            written = log.read_committed().await.unwrap();
            if written.is_some() {
                break;
            }
        }
        assert_eq!(written, Some(log_id(1, 7)));
    }

    /// Appends entry `index` and returns a receiver of its flush.
    async fn append_one(log: &mut LogStore, index: u64) -> openraft::alias::OneshotReceiverOf<TypeConfig, io::Result<()>> {
        let (tx, rx) = TypeConfig::oneshot();
        let entry = Entry::new_blank(log_id(1, index));
        log.append([entry], IOFlushed::signal(tx)).await.unwrap();
        rx
    }

    /// Appends two entries 200 µs apart (after `burst` appends sent at once, all flushed) and
    /// answers whether the two shared one flush.
    async fn two_apart_share_a_flush(log: &mut LogStore, next: &mut u64, burst: u64) -> bool {
        let mut flushed = Vec::new();
        for _ in 0..burst {
            *next += 1;
            flushed.push(append_one(log, *next).await);
        }
        for f in flushed {
            f.await.unwrap().unwrap();
        }
        let flushes = log.flushes();
        let before = flushes.read().timings.count;
        *next += 1;
        let first = append_one(log, *next).await;
        // tokio timers tick in whole milliseconds, longer than the linger; a thread sleep is exact.
        std::thread::sleep(Duration::from_micros(200));
        *next += 1;
        let second = append_one(log, *next).await;
        first.await.unwrap().unwrap();
        second.await.unwrap().unwrap();
        flushes.read().timings.count - before == 1
    }

    #[tokio::test]
    async fn a_lingering_writer_gathers_appends_only_while_they_queue() {
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(Database::create(dir.path().join("raft.redb")).unwrap());
        let mut log = LogStore::open(db, Arc::new(Space::new(&std::env::temp_dir()))).unwrap();
        log.linger_switch().store(true, Ordering::Relaxed);
        let mut next = 0;
        // A stalled thread can miss a window either way, so a few tries of each. After a burst
        // (appends queueing) the writer lingers: without it the second append always needs a
        // flush of its own.
        let mut shared = false;
        for _ in 0..5 {
            if two_apart_share_a_flush(&mut log, &mut next, 8).await {
                shared = true;
                break;
            }
        }
        assert!(shared, "after a burst, appends 200 µs apart never shared a flush");
        // After a lone append the writer flushes the next one at once; lingering, the second
        // would always join it.
        let mut apart = false;
        for _ in 0..5 {
            if !two_apart_share_a_flush(&mut log, &mut next, 1).await {
                apart = true;
                break;
            }
        }
        assert!(apart, "a lone append waited for the next one");
        assert_eq!(log.try_get_log_entries(1..=next).await.unwrap().len() as u64, next);
    }

    /// The index of the oldest entry on disk.
    fn first_on_disk(db: &Database) -> Option<u64> {
        let read = db.begin_read().unwrap();
        let log = read.open_table(LOG).unwrap();
        log.first().unwrap().map(|(k, _)| k.value())
    }

    #[tokio::test]
    async fn a_purge_is_deleted_a_slice_per_batch_and_the_log_reopens_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(Database::create(dir.path().join("raft.redb")).unwrap());
        let mut log = LogStore::open(db.clone(), Arc::new(Space::new(&std::env::temp_dir()))).unwrap();
        let last = 3 * PURGE_SLICE;
        let mut flushed = Vec::new();
        for i in 1..=last {
            flushed.push(append_one(&mut log, i).await);
        }
        for f in flushed {
            f.await.unwrap().unwrap();
        }
        let upto = 2 * PURGE_SLICE + 10;
        let before = log.flushes().read().timings.count;
        log.purge(log_id(1, upto)).await.unwrap();
        let state = log.get_log_state().await.unwrap();
        assert_eq!((state.last_purged_log_id, state.last_log_id), (Some(log_id(1, upto)), Some(log_id(1, last))));
        append_one(&mut log, last + 1).await.await.unwrap().unwrap();
        for _ in 0..500 {
            if first_on_disk(&db) == Some(upto + 1) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(first_on_disk(&db), Some(upto + 1));
        // Three slices, each its own transaction (the append shares one of them, or has its own).
        assert!(log.flushes().read().timings.count - before >= 3, "the purge was not sliced");
        assert_eq!(log.try_get_log_entries(upto + 1..=last + 1).await.unwrap().len() as u64, last + 1 - upto);
        drop(log);
        // Reopened, the log starts after the purged id.
        let mut log = LogStore::open(db, Arc::new(Space::new(&std::env::temp_dir()))).unwrap();
        let state = log.get_log_state().await.unwrap();
        assert_eq!((state.last_purged_log_id, state.last_log_id), (Some(log_id(1, upto)), Some(log_id(1, last + 1))));
    }
}
