//! What can be done with a stopped node's data directory: check it ([`check`]: the database's
//! pages, the snapshot's checksum, the log's continuity, every entry applied and every object
//! decoded), make it the only member of a new cluster when its peers are gone for good
//! ([`force_new_cluster`]), both by replaying the node's state as it would start (its snapshot,
//! then every entry of its log after it), and give the database file's unused pages back
//! ([`defrag`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::backup::write_state;
use crate::cache::Cache;
use crate::dedupe::Outcome;
use crate::observer::Observers;
use crate::snapshot::{SnapshotMeta, Snapshots};
use crate::types::{LogId, NodeId, Object, TypeConfig};

/// A stopped node's state, replayed.
struct Replayed {
    /// The vote, as the log stores it.
    vote: Option<Vec<u8>>,
    /// The snapshot's last log id.
    snapshot: Option<LogId>,
    /// The last log id of all.
    last: Option<LogId>,
    /// The log's entries: how many, and where they start.
    entries: usize,
    first_entry: Option<u64>,
    objects: BTreeMap<String, Object>,
    txns: Vec<(u64, u64, Outcome)>,
    /// What does not hold: a gap in the log, an object that does not decode.
    problems: Vec<String>,
}

/// Opens the stopped node's `raft.redb` in `dir`, once it has passed its checksums.
fn open_checked(dir: &Path) -> Result<redb::Database, String> {
    if !dir.join("raft.redb").exists() {
        return Err(format!("{} holds no node state (no raft.redb)", dir.display()));
    }
    let mut db = redb::Database::open(dir.join("raft.redb")).map_err(|e| format!("raft.redb: {e}"))?;
    match db.check_integrity() {
        Ok(true) => Ok(db),
        Ok(false) => Err("raft.redb failed its checksums (rolled back to its last intact commit)".into()),
        Err(e) => Err(format!("raft.redb: {e}")),
    }
}

fn replay(dir: &Path) -> Result<Replayed, String> {
    let db = open_checked(dir)?;
    let snapshots = Snapshots::open(dir, &db).map_err(|e| e.to_string())?;
    let cache = Cache::with_observers(Default::default(), Observers(Vec::new()));
    let mut snapshot = None;
    if let Some(current) = snapshots.current().map_err(|e| e.to_string())? {
        snapshot = current.meta.last_log_id;
        let body = snapshots.install(current).map_err(|e| format!("the snapshot: {e}"))?;
        cache.reset(snapshot.map_or(0, |l| l.index()), body.objects.into_iter().collect(), body.txns);
    }
    let (vote, entries) = crate::log_store::read_stopped(&db, snapshot.map_or(0, |l| l.index())).map_err(|e| format!("the log: {e}"))?;
    let mut problems = Vec::new();
    let mut last = snapshot;
    {
        let mut state = cache.write();
        for entry in &entries {
            let index = entry.log_id.index();
            let expected = last.map_or(index, |l| l.index() + 1);
            if index != expected {
                problems.push(format!("the log jumps from index {} to {index}", expected.saturating_sub(1)));
            }
            match &entry.payload {
                openraft::EntryPayload::Normal(txn) => {
                    state.apply(index, txn);
                }
                _ => state.advance(index),
            }
            last = Some(entry.log_id);
        }
    }
    let (_, objects, txns) = cache.snapshot();
    problems.extend(cache.undecodable().into_iter().map(|(key, rev, why)| format!("{key} (revision {rev}) does not decode: {why}")));
    Ok(Replayed { vote, snapshot, last, entries: entries.len(), first_entry: entries.first().map(|e| e.log_id.index()), objects, txns, problems })
}

/// What `check` found.
#[derive(Debug, Clone)]
pub struct Report {
    pub snapshot_index: Option<u64>,
    pub entries: usize,
    pub first_entry: Option<u64>,
    pub last_index: Option<u64>,
    pub objects: usize,
    pub problems: Vec<String>,
}

/// Checks the stopped node's data in `dir`; `Err` when it cannot even be read.
pub fn check(dir: &Path) -> Result<Report, String> {
    let r = replay(dir)?;
    Ok(Report {
        snapshot_index: r.snapshot.map(|l| l.index()),
        entries: r.entries,
        first_entry: r.first_entry,
        last_index: r.last.map(|l| l.index()),
        objects: r.objects.len(),
        problems: r.problems,
    })
}

/// What `defrag` did: the database file's size before and after.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Defragmented {
    pub before: u64,
    pub after: u64,
}

/// Compacts the stopped node's `raft.redb` in `dir`, as etcd's `defrag` does its database: the
/// pages the purged log and replaced objects left behind are given back and the file shrinks to
/// what it holds. A database that fails its checksums is not compacted (the error says so).
pub fn defrag(dir: &Path) -> Result<Defragmented, String> {
    let path = dir.join("raft.redb");
    let size = || std::fs::metadata(&path).map(|m| m.len()).map_err(|e| format!("{}: {e}", path.display()));
    let before = size()?;
    let mut db = open_checked(dir)?;
    while db.compact().map_err(|e| format!("compacting raft.redb: {e}"))? {}
    drop(db);
    Ok(Defragmented { before, after: size()? })
}

/// What `force_new_cluster` made of a node's state.
#[derive(Debug, Clone, PartialEq)]
pub struct Forced {
    /// The last log index the node had (its revision from now on).
    pub revision: u64,
    pub objects: usize,
    /// Where its earlier files went.
    pub aside: PathBuf,
}

/// Makes the stopped node in `dir` the only member of a new cluster (at `addr`), keeping all it
/// has: its snapshot and every entry of its log after it, applied, committed or not (an entry
/// it held but never heard committed may have been acknowledged by the lost majority; one that
/// was not makes a write whose client heard no answer take effect). Its earlier files are kept
/// aside. What the lost members had and it had not is gone.
pub fn force_new_cluster(dir: &Path, node: NodeId, addr: &str) -> Result<Forced, String> {
    let r = replay(dir)?;
    let last = r.last.ok_or("this node holds no state to keep")?;
    let seconds = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or_default();
    let aside = dir.join(format!("before-force-new-cluster-{seconds}"));
    std::fs::create_dir_all(&aside).map_err(|e| e.to_string())?;
    for name in ["raft.redb", "snapshot"] {
        if dir.join(name).exists() {
            std::fs::rename(dir.join(name), aside.join(name)).map_err(|e| format!("moving {name} aside: {e}"))?;
        }
    }
    let nodes = BTreeMap::from([(node, openraft::BasicNode { addr: addr.to_string() })]);
    let membership = openraft::Membership::new(vec![BTreeSet::from([node])], nodes).map_err(|e| e.to_string())?;
    let meta = SnapshotMeta { last_log_id: Some(last), last_membership: openraft::alias::StoredMembershipOf::<TypeConfig>::new(Some(last), membership) };
    write_state(dir, meta, &r.objects, &r.txns, r.vote.as_deref())?;
    Ok(Forced { revision: last.index(), objects: r.objects.len(), aside })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use openraft::vote::RaftLeaderId;

    #[test]
    fn check_names_an_object_that_does_not_decode_and_force_keeps_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let last = LogId::new(openraft::alias::CommittedLeaderIdOf::<TypeConfig>::new(1, 1), 7);
        let objects = BTreeMap::from([
            ("/registry/configmaps/default/good".to_string(), Object { rev: 3, data: Bytes::from_static(br#"{"metadata":{"name":"good"}}"#) }),
            ("/registry/configmaps/default/bad".to_string(), Object { rev: 5, data: Bytes::from_static(b"{\"metadata\":") }),
        ]);
        let nodes = BTreeMap::from([(1, openraft::BasicNode { addr: "a:1".into() })]);
        let membership = openraft::Membership::new(vec![BTreeSet::from([1])], nodes).unwrap();
        let meta = SnapshotMeta { last_log_id: Some(last), last_membership: openraft::alias::StoredMembershipOf::<TypeConfig>::new(Some(last), membership) };
        write_state(dir.path(), meta, &objects, &[], None).unwrap();

        let report = check(dir.path()).unwrap();
        assert_eq!((report.snapshot_index, report.entries, report.objects), (Some(7), 0, 2));
        assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
        assert!(report.problems[0].starts_with("/registry/configmaps/default/bad (revision 5) does not decode"), "{:?}", report.problems);

        let forced = force_new_cluster(dir.path(), 2, "b:2").unwrap();
        assert_eq!((forced.revision, forced.objects), (7, 2));
        assert!(forced.aside.join("raft.redb").exists());
        assert_eq!(check(dir.path()).unwrap().objects, 2);
    }
}
