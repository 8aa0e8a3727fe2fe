//! Backups: a consistent copy of the state at one revision, as a file an operator keeps, and a
//! data directory made from one, for a single node or for each member of a new cluster.
//!
//! The file: the line `apiserver backup 1\n`; a CBOR header ([`Header`]: format, revision,
//! node, time, object count); the objects, one CBOR `(key, object)` pair each, in key order; then
//! the SHA-256 of everything before it. It is written and read as a stream.
//!
//! A restored data directory holds the objects as a snapshot at the backup's revision plus
//! [`REVISION_BUMP`], with the members given and an empty log: its revisions go on above any the
//! old cluster may have reached after the backup, and everything below is compacted, so a client
//! holding a later resourceVersion of the old cluster is answered 410 Gone and lists again
//! instead of silently missing changes (what Kubernetes asks of an etcd restore).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use openraft::vote::RaftLeaderId;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::dedupe::Outcome;
use crate::error::io_err;
use crate::snapshot::{SnapshotMeta, Snapshots};
use crate::types::{LogId, NodeId, Object, TypeConfig};

const MAGIC: &[u8] = b"apiserver backup 1\n";
const DIGEST: u64 = 32;

/// How far a restored cluster's revisions start above the backup's (etcd's advice for its
/// `--bump-revision`).
pub const REVISION_BUMP: u64 = 1_000_000_000;

/// What a backup says of itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    pub format: u32,
    /// The revision the objects are at.
    pub revision: u64,
    /// The member it was taken from.
    pub node: NodeId,
    /// When, in seconds since the epoch.
    pub time: u64,
    pub objects: u64,
}

/// A backup being written: its bytes come out in pieces, digest last.
struct Writer {
    digest: Sha256,
}

impl Writer {
    /// The writer and the file's first bytes.
    fn start(header: &Header) -> io::Result<(Writer, Vec<u8>)> {
        let mut out = MAGIC.to_vec();
        ciborium::into_writer(header, &mut out).map_err(io_err)?;
        let mut digest = Sha256::new();
        digest.update(&out);
        Ok((Writer { digest }, out))
    }

    /// One object, appended to `out`.
    fn object(&mut self, key: &str, object: &Object, out: &mut Vec<u8>) -> io::Result<()> {
        let start = out.len();
        ciborium::into_writer(&(key, object), &mut *out).map_err(io_err)?;
        self.digest.update(&out[start..]);
        Ok(())
    }

    /// The file's last bytes.
    fn finish(self) -> Vec<u8> {
        self.digest.finalize().to_vec()
    }
}

/// How much of a backup goes out at once.
const PIECE: usize = 256 * 1024;

/// The file of a backup of `objects` at `header.revision`, in pieces of about [`PIECE`] bytes
/// made as they are taken.
pub fn pieces(header: Header, objects: BTreeMap<String, Object>) -> io::Result<impl Iterator<Item = io::Result<Vec<u8>>> + Send + 'static> {
    let (writer, head) = Writer::start(&header)?;
    let mut objects = objects.into_iter();
    let mut state = Some((writer, Some(head)));
    Ok(std::iter::from_fn(move || {
        let (mut writer, head) = state.take()?;
        let mut out = head.unwrap_or_default();
        for (key, object) in objects.by_ref() {
            if let Err(e) = writer.object(&key, &object, &mut out) {
                return Some(Err(e));
            }
            if out.len() >= PIECE {
                state = Some((writer, None));
                return Some(Ok(out));
            }
        }
        out.extend(writer.finish());
        Some(Ok(out))
    }))
}

/// Checks the backup at `path` against its digest and returns its header.
pub fn status(path: &Path) -> Result<Header, String> {
    let mut file = std::fs::File::open(path).map_err(|e| format!("opening {}: {e}", path.display()))?;
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    let covered = len.checked_sub(DIGEST).filter(|c| *c >= MAGIC.len() as u64).ok_or_else(|| format!("{} is too short to be a backup", path.display()))?;
    let mut digest = Sha256::new();
    std::io::copy(&mut BufReader::with_capacity(1 << 16, (&file).take(covered)), &mut digest).map_err(|e| e.to_string())?;
    let mut stored = [0u8; DIGEST as usize];
    file.seek(SeekFrom::Start(covered)).and_then(|_| file.read_exact(&mut stored)).map_err(|e| e.to_string())?;
    if digest.finalize().as_slice() != stored {
        return Err(format!("{} is damaged: its SHA-256 does not match its contents", path.display()));
    }
    let (header, _) = open(path)?;
    Ok(header)
}

/// The header and a reader positioned at the first object.
fn open(path: &Path) -> Result<(Header, BufReader<std::fs::File>), String> {
    let file = std::fs::File::open(path).map_err(|e| format!("opening {}: {e}", path.display()))?;
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let mut magic = vec![0u8; MAGIC.len()];
    reader.read_exact(&mut magic).map_err(|e| e.to_string())?;
    if magic != MAGIC {
        return Err(format!("{} is not a backup of this server", path.display()));
    }
    let header: Header = ciborium::from_reader(&mut reader).map_err(|e| format!("the backup's header: {e}"))?;
    if header.format != 1 {
        return Err(format!("{} is in format {}, which this version does not read", path.display(), header.format));
    }
    Ok((header, reader))
}

/// What a restore made.
#[derive(Debug, Clone, PartialEq)]
pub struct Restored {
    pub header: Header,
    /// The restored cluster's revision: the backup's plus [`REVISION_BUMP`].
    pub revision: u64,
}

/// Makes `dir` the data directory of member `node` of a new cluster of `members` (id and peer
/// address; this node alone when empty) holding the backup at `path`. Refuses a directory that
/// already holds state.
pub fn restore(path: &Path, dir: &Path, node: NodeId, members: &BTreeMap<NodeId, String>) -> Result<Restored, String> {
    let header = status(path)?;
    if dir.join("raft.redb").exists() || dir.join("snapshot").exists() {
        return Err(format!("{} already holds a node's state; restore into a new directory", dir.display()));
    }
    let mut nodes: BTreeMap<NodeId, openraft::BasicNode> = members.iter().map(|(id, addr)| (*id, openraft::BasicNode { addr: addr.clone() })).collect();
    if nodes.is_empty() {
        nodes.insert(node, openraft::BasicNode { addr: "127.0.0.1:0".into() });
    }
    if !nodes.contains_key(&node) {
        return Err(format!("the members do not list node {node}"));
    }
    let (_, mut reader) = open(path)?;
    let mut objects = BTreeMap::new();
    for _ in 0..header.objects {
        let (key, object): (String, Object) = ciborium::from_reader(&mut reader).map_err(|e| format!("object {} of the backup: {e}", objects.len() + 1))?;
        objects.insert(key, object);
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    // Every member gets the same last log id, as if one leader had written it.
    let revision = header.revision + REVISION_BUMP;
    let leader = *nodes.keys().next().unwrap_or(&node);
    let last = LogId::new(openraft::alias::CommittedLeaderIdOf::<TypeConfig>::new(1, leader), revision);
    let voters: BTreeSet<NodeId> = nodes.keys().copied().collect();
    let membership = openraft::Membership::new(vec![voters], nodes).map_err(|e| e.to_string())?;
    let meta = SnapshotMeta { last_log_id: Some(last), last_membership: openraft::alias::StoredMembershipOf::<TypeConfig>::new(Some(last), membership) };
    write_state(dir, meta, &objects, &[], None)?;
    Ok(Restored { header, revision })
}

/// Writes a new node state into `dir`: a snapshot of `objects` and `txns` with `meta`, and a
/// database whose log starts after it (with `vote`, if the node had one).
pub(crate) fn write_state(dir: &Path, meta: SnapshotMeta, objects: &BTreeMap<String, Object>, txns: &[(u64, u64, Outcome)], vote: Option<&[u8]>) -> Result<(), String> {
    let last = meta.last_log_id.ok_or("no log id to start from")?;
    let db = redb::Database::create(dir.join("raft.redb")).map_err(|e| e.to_string())?;
    crate::log_store::mark_restored(&db, &last, vote).map_err(|e| e.to_string())?;
    let snapshots = Snapshots::open(dir, &db).map_err(|e| e.to_string())?;
    snapshots.build(meta, objects, txns).map_err(|e| format!("writing the snapshot: {e}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn write(path: &Path, objects: &BTreeMap<String, Object>, revision: u64) {
        let header = Header { format: 1, revision, node: 2, time: 1_700_000_000, objects: objects.len() as u64 };
        let out: Vec<u8> = pieces(header, objects.clone()).unwrap().map(Result::unwrap).collect::<Vec<_>>().concat();
        std::fs::write(path, out).unwrap();
    }

    #[test]
    fn a_backup_is_verified_and_restored_above_its_revision() {
        let dir = tempfile::tempdir().unwrap();
        let objects: BTreeMap<String, Object> = (0..50).map(|i| (format!("/registry/k/{i}"), Object { rev: i + 1, data: Bytes::from(format!("{{\"i\":\"{}\"}}", "x".repeat(20_000))) })).collect();
        let file = dir.path().join("backup");
        write(&file, &objects, 60);
        let header = status(&file).unwrap();
        assert_eq!((header.revision, header.objects, header.node), (60, 50, 2));

        let members = BTreeMap::from([(1, "a:1".to_string()), (2, "b:2".to_string()), (3, "c:3".to_string())]);
        let restored = restore(&file, &dir.path().join("node-2"), 2, &members).unwrap();
        assert_eq!(restored.revision, 60 + REVISION_BUMP);
        let db = redb::Database::create(dir.path().join("node-2/raft.redb")).unwrap();
        let snapshots = Snapshots::open(&dir.path().join("node-2"), &db).unwrap();
        let snapshot = snapshots.current().unwrap().unwrap();
        assert_eq!(snapshot.meta.last_log_id.unwrap().index(), 60 + REVISION_BUMP);
        assert_eq!(snapshot.meta.last_membership.membership().voter_ids().collect::<Vec<_>>(), [1, 2, 3]);
        let body = snapshots.install(snapshot).unwrap();
        assert_eq!(body.objects.into_iter().collect::<BTreeMap<_, _>>(), objects);
        assert!(restore(&file, &dir.path().join("node-2"), 2, &members).unwrap_err().contains("already holds"));

        // One byte changed anywhere: refused.
        let mut bytes = std::fs::read(&file).unwrap();
        let at = bytes.len() / 2;
        bytes[at] ^= 1;
        std::fs::write(&file, &bytes).unwrap();
        assert!(status(&file).unwrap_err().contains("damaged"));
    }
}
