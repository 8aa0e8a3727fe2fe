//! Snapshots on disk: one file per node (`snapshot` in its data directory) holding a snapshot's
//! metadata and the state it captures, written and read as a stream, so that a snapshot never
//! sits whole in memory as bytes. A new snapshot (built here, or received from the leader) is
//! written to a temporary file beside it, synced, and renamed over it, unless the one there is
//! newer.
//!
//! The file is the CBOR-encoded metadata, prefixed by its length (8 bytes, little-endian), then
//! the CBOR-encoded body, then a trailer: the SHA-256 of all before it and the 8 bytes
//! `snapsum1`. A node checks it when it opens its snapshot and will not start from a file that
//! fails it; a file without the trailer (from earlier versions) is taken if it decodes whole. Between
//! replicas the body alone is sent, after the metadata.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use redb::{Database, ReadableDatabase, TableDefinition};
use serde::{Deserialize, Serialize, Serializer};
use sha2::{Digest, Sha256};

use crate::dedupe::Outcome;
use crate::error::{io_err, StoreError};
use crate::log_store::{decode, encode};
use crate::types::{LogId, Object, TypeConfig};

pub(crate) type SnapshotMeta = openraft::alias::SnapshotMetaOf<TypeConfig>;
pub(crate) type Snapshot = openraft::alias::SnapshotOf<TypeConfig, SnapshotFile>;

/// Where earlier versions kept the snapshot (moved to the file on open).
const SNAPSHOT_TABLE: TableDefinition<&str, &[u8]> = TableDefinition::new("snapshot");
const FILE: &str = "snapshot";
const TEMPORARY: &str = "snapshot.tmp";
/// The end of a file with a checksum: the digest, then these bytes.
const TRAILER_MAGIC: &[u8; 8] = b"snapsum1";
const TRAILER: u64 = 32 + 8;

/// What a snapshot holds besides its metadata.
#[derive(Deserialize)]
pub(crate) struct SnapshotBody {
    pub objects: Vec<(String, Object)>,
    /// Outcomes of recent proposals (revision, proposal id, outcome).
    #[serde(default)]
    pub txns: Vec<(u64, u64, Outcome)>,
}

/// The same body, encoded straight from the state it copies.
#[derive(Serialize)]
struct BodyRef<'a> {
    #[serde(serialize_with = "pairs")]
    objects: &'a BTreeMap<String, Object>,
    txns: &'a [(u64, u64, Outcome)],
}

fn pairs<S: Serializer>(objects: &&BTreeMap<String, Object>, s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(objects.iter())
}

/// A snapshot file, open for reading. A temporary one (being received) is removed when dropped
/// unless it became the node's snapshot.
pub struct SnapshotFile {
    file: File,
    path: PathBuf,
    temporary: bool,
}

impl SnapshotFile {
    /// The body's bytes, from the start, for sending to a peer; and how many there are.
    pub(crate) fn body(&self) -> io::Result<(tokio::io::Take<tokio::fs::File>, u64)> {
        let mut file = self.file.try_clone()?;
        file.seek(SeekFrom::Start(0))?;
        let offset = 8 + read_len(&mut file)?;
        let trailer = if has_trailer(&mut file)? { TRAILER } else { 0 };
        let size = file.metadata()?.len().checked_sub(offset + trailer).ok_or_else(|| io_err("snapshot file is truncated"))?;
        file.seek(SeekFrom::Start(offset))?;
        Ok((tokio::io::AsyncReadExt::take(tokio::fs::File::from_std(file), size), size))
    }
}

impl Drop for SnapshotFile {
    fn drop(&mut self) {
        if self.temporary {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// A node's snapshot file and the log id it is at.
#[derive(Clone)]
pub(crate) struct Snapshots {
    dir: PathBuf,
    /// The last log id of the snapshot on disk; held while one replaces it.
    current: Arc<Mutex<Option<LogId>>>,
    next_temporary: Arc<AtomicU64>,
}

impl Snapshots {
    /// Opens the snapshot under `dir`, moving one that `db` holds from an earlier version into
    /// the file, and removing temporary files a stopped node left behind; a snapshot that fails
    /// its checksum or cannot be read is `Damaged`.
    pub fn open(dir: &Path, db: &Database) -> Result<Snapshots, StoreError> {
        let damaged = |detail: String| StoreError::Damaged { file: dir.join(FILE).display().to_string(), detail };
        let snapshots = Snapshots::open_files(dir, db).map_err(StoreError::internal)?;
        match File::open(dir.join(FILE)) {
            Ok(mut file) => verify(&mut file).map_err(|e| damaged(e.to_string()))?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(StoreError::internal(e)),
        }
        *snapshots.current.lock().unwrap() = match snapshots.current().map_err(|e| damaged(e.to_string()))? {
            Some(s) => s.meta.last_log_id,
            None => None,
        };
        Ok(snapshots)
    }

    fn open_files(dir: &Path, db: &Database) -> io::Result<Snapshots> {
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            if entry.file_name().to_string_lossy().starts_with(TEMPORARY) {
                std::fs::remove_file(entry.path())?;
            }
        }
        let snapshots = Snapshots { dir: dir.to_path_buf(), current: Default::default(), next_temporary: Default::default() };
        snapshots.move_from(db)?;
        Ok(snapshots)
    }

    fn move_from(&self, db: &Database) -> io::Result<()> {
        let stored = {
            let read = db.begin_read().map_err(io_err)?;
            match read.open_table(SNAPSHOT_TABLE) {
                Ok(table) => match (table.get("meta").map_err(io_err)?, table.get("data").map_err(io_err)?) {
                    (Some(meta), Some(data)) => Some((decode::<SnapshotMeta>(meta.value())?, data.value().to_vec())),
                    _ => None,
                },
                Err(redb::TableError::TableDoesNotExist(_)) => return Ok(()),
                Err(e) => return Err(io_err(e)),
            }
        };
        if let Some((meta, data)) = stored {
            let temporary = self.create(&meta, |w| w.write_all(&data))?;
            self.keep(&meta, temporary)?;
        }
        let txn = db.begin_write().map_err(io_err)?;
        txn.delete_table(SNAPSHOT_TABLE).map_err(io_err)?;
        txn.commit().map_err(io_err)
    }

    /// The size of the node's snapshot file (0 without one).
    pub fn size(&self) -> u64 {
        std::fs::metadata(self.dir.join(FILE)).map(|m| m.len()).unwrap_or(0)
    }

    /// The node's snapshot, if it has one.
    pub fn current(&self) -> io::Result<Option<Snapshot>> {
        let path = self.dir.join(FILE);
        let mut file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let meta = read_meta(&mut file)?;
        Ok(Some(Snapshot { meta, snapshot: SnapshotFile { file, path, temporary: false } }))
    }

    /// Writes a snapshot of `objects` and `txns` and makes it the node's.
    pub fn build(&self, meta: SnapshotMeta, objects: &BTreeMap<String, Object>, txns: &[(u64, u64, Outcome)]) -> io::Result<Snapshot> {
        let body = BodyRef { objects, txns };
        let file = self.create(&meta, |w| ciborium::into_writer(&body, w).map_err(io_err))?;
        Ok(Snapshot { snapshot: self.keep(&meta, file)?, meta })
    }

    /// Writes a body received from a peer, as a stream of pieces, to a temporary file.
    pub async fn receive<S, E>(&self, meta: &SnapshotMeta, size: Option<u64>, mut pieces: S) -> io::Result<SnapshotFile>
    where
        S: futures::Stream<Item = Result<Vec<u8>, E>> + Unpin,
        E: std::fmt::Display,
    {
        use futures::StreamExt;
        use tokio::io::AsyncWriteExt;
        let (std_file, path) = self.temporary()?;
        // Removed on any failure below.
        let guard = SnapshotFile { file: std_file.try_clone()?, path, temporary: true };
        let mut out = tokio::io::BufWriter::new(tokio::fs::File::from_std(std_file));
        let header = header(meta)?;
        let mut digest = Sha256::new();
        digest.update(&header);
        out.write_all(&header).await?;
        let mut received = 0u64;
        while let Some(piece) = pieces.next().await {
            let piece = piece.map_err(io_err)?;
            received += piece.len() as u64;
            digest.update(&piece);
            out.write_all(&piece).await?;
        }
        if let Some(size) = size.filter(|size| *size != received) {
            return Err(io_err(format!("snapshot body of {received} bytes, {size} announced")));
        }
        out.write_all(&trailer(digest)).await?;
        out.flush().await?;
        out.get_ref().sync_all().await?;
        Ok(guard)
    }

    /// Reads a snapshot's body and makes its file the node's snapshot (if it is not already).
    pub fn install(&self, snapshot: Snapshot) -> io::Result<SnapshotBody> {
        let Snapshot { meta, snapshot: mut file } = snapshot;
        file.file.seek(SeekFrom::Start(0))?;
        let mut reader = BufReader::with_capacity(1 << 16, &file.file);
        let stored = read_meta(&mut reader)?;
        if stored.last_log_id != meta.last_log_id {
            return Err(io_err(format!("snapshot file is at {:?}, not {:?}", stored.last_log_id, meta.last_log_id)));
        }
        let body: SnapshotBody = ciborium::from_reader(reader).map_err(io_err)?;
        if file.temporary {
            self.keep(&meta, file)?;
        }
        Ok(body)
    }

    /// A new temporary file beside the snapshot.
    fn temporary(&self) -> io::Result<(File, PathBuf)> {
        let n = self.next_temporary.fetch_add(1, Ordering::Relaxed);
        let path = self.dir.join(format!("{TEMPORARY}.{n}"));
        // The state holds Secrets: readable by this user only.
        Ok((File::options().read(true).write(true).create_new(true).mode(0o600).open(&path)?, path))
    }

    /// Writes the metadata, what `body` writes and the checksum of both to a synced temporary
    /// file.
    fn create(&self, meta: &SnapshotMeta, body: impl FnOnce(&mut Hashing<BufWriter<File>>) -> io::Result<()>) -> io::Result<SnapshotFile> {
        let (file, path) = self.temporary()?;
        let snapshot = SnapshotFile { file, path, temporary: true };
        let mut out = Hashing { inner: BufWriter::with_capacity(1 << 16, snapshot.file.try_clone()?), digest: Sha256::new() };
        out.write_all(&header(meta)?)?;
        body(&mut out)?;
        let Hashing { mut inner, digest } = out;
        inner.write_all(&trailer(digest))?;
        inner.flush()?;
        drop(inner);
        snapshot.file.sync_all()?;
        Ok(snapshot)
    }

    /// Renames a complete temporary file over the node's snapshot, unless that one is newer.
    fn keep(&self, meta: &SnapshotMeta, mut file: SnapshotFile) -> io::Result<SnapshotFile> {
        let mut current = self.current.lock().unwrap();
        if *current > meta.last_log_id {
            tracing::info!(index = ?meta.last_log_id, newer = ?*current, "snapshot not kept: a newer one is on disk");
            return Ok(file);
        }
        let path = self.dir.join(FILE);
        std::fs::rename(&file.path, &path)?;
        File::open(&self.dir)?.sync_all()?;
        *current = meta.last_log_id;
        file.path = path;
        file.temporary = false;
        Ok(file)
    }
}

/// A writer that hashes what goes through it.
struct Hashing<W> {
    inner: W,
    digest: Sha256,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.digest.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

fn trailer(digest: Sha256) -> Vec<u8> {
    let mut out = digest.finalize().to_vec();
    out.extend_from_slice(TRAILER_MAGIC);
    out
}

/// Whether the file ends with a checksum trailer.
fn has_trailer(file: &mut File) -> io::Result<bool> {
    let len = file.metadata()?.len();
    if len < TRAILER {
        return Ok(false);
    }
    let at = file.stream_position()?;
    file.seek(SeekFrom::Start(len - 8))?;
    let mut magic = [0u8; 8];
    file.read_exact(&mut magic)?;
    file.seek(SeekFrom::Start(at))?;
    Ok(&magic == TRAILER_MAGIC)
}

/// Checks a snapshot file against its trailer; one without (written by an earlier version, or
/// cut short) must at least decode whole.
fn verify(file: &mut File) -> io::Result<()> {
    if !has_trailer(file)? {
        file.seek(SeekFrom::Start(0))?;
        let mut reader = BufReader::with_capacity(1 << 16, &*file);
        read_meta(&mut reader)?;
        let _: SnapshotBody = ciborium::from_reader(reader).map_err(|e| io_err(format!("it has no checksum and does not decode: {e}")))?;
        return Ok(());
    }
    let covered = file.metadata()?.len() - TRAILER;
    file.seek(SeekFrom::Start(0))?;
    let mut digest = Sha256::new();
    io::copy(&mut (&*file).take(covered), &mut digest)?;
    let mut stored = [0u8; 32];
    file.read_exact(&mut stored)?;
    if digest.finalize().as_slice() != stored {
        return Err(io_err("its SHA-256 checksum does not match its contents"));
    }
    Ok(())
}

fn header(meta: &SnapshotMeta) -> io::Result<Vec<u8>> {
    let meta = encode(meta)?;
    let mut out = (meta.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(&meta);
    Ok(out)
}

fn read_len(r: &mut impl Read) -> io::Result<u64> {
    let mut len = [0u8; 8];
    r.read_exact(&mut len)?;
    Ok(u64::from_le_bytes(len))
}

fn read_meta(r: &mut impl Read) -> io::Result<SnapshotMeta> {
    let len = read_len(r)?;
    if len > 1 << 20 {
        return Err(io_err(format!("snapshot metadata of {len} bytes")));
    }
    let mut meta = vec![0; len as usize];
    r.read_exact(&mut meta)?;
    decode(&meta)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use openraft::vote::RaftLeaderId;

    fn meta(index: u64) -> SnapshotMeta {
        let leader = openraft::alias::CommittedLeaderIdOf::<TypeConfig>::new(1, 1);
        SnapshotMeta { last_log_id: Some(LogId::new(leader, index)), last_membership: Default::default() }
    }

    fn objects(n: u64) -> BTreeMap<String, Object> {
        (0..n).map(|i| (format!("/k/{i}"), Object { rev: i + 1, data: Bytes::from(format!("{{\"i\":{i}}}")) })).collect()
    }

    fn files(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.retain(|n| n.starts_with(FILE));
        names.sort();
        names
    }

    fn open(dir: &Path) -> Snapshots {
        let db = Database::create(dir.join("raft.redb")).unwrap();
        Snapshots::open(dir, &db).unwrap()
    }

    /// Sends a snapshot's body from `from` as a peer would, in pieces of 7 bytes.
    async fn send(from: &Snapshots, to: &Snapshots, announce: impl FnOnce(u64) -> u64) -> io::Result<SnapshotFile> {
        use tokio::io::AsyncReadExt;
        let current = from.current()?.unwrap();
        let (mut body, size) = current.snapshot.body()?;
        let mut bytes = Vec::new();
        body.read_to_end(&mut bytes).await?;
        assert_eq!(bytes.len() as u64, size);
        let pieces: Vec<Result<Vec<u8>, String>> = bytes.chunks(7).map(|c| Ok(c.to_vec())).collect();
        to.receive(&current.meta, Some(announce(size)), futures::stream::iter(pieces)).await
    }

    #[test]
    fn a_built_snapshot_is_read_back_after_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let objects = objects(1000);
        open(dir.path()).build(meta(1000), &objects, &[(7, 8, Outcome::Applied(1000))]).unwrap();
        let again = open(dir.path());
        let current = again.current().unwrap().unwrap();
        assert_eq!(current.meta, meta(1000));
        let body = again.install(current).unwrap();
        assert_eq!(body.objects.into_iter().collect::<BTreeMap<_, _>>(), objects);
        assert_eq!(body.txns, vec![(7, 8, Outcome::Applied(1000))]);
        assert_eq!(files(dir.path()), vec![FILE.to_string()]);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join(FILE)).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "the snapshot holds Secrets");
    }

    #[tokio::test]
    async fn a_received_body_becomes_the_snapshot_once_installed() {
        let (leader, follower) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (from, to) = (open(leader.path()), open(follower.path()));
        from.build(meta(50), &objects(50), &[]).unwrap();
        let file = send(&from, &to, |size| size).await.unwrap();
        assert!(to.current().unwrap().is_none(), "kept before it was installed");
        let body = to.install(Snapshot { meta: meta(50), snapshot: file }).unwrap();
        assert_eq!(body.objects.len(), 50);
        assert_eq!(to.current().unwrap().unwrap().meta, meta(50));
        assert_eq!(files(follower.path()), vec![FILE.to_string()]);
    }

    #[tokio::test]
    async fn a_body_shorter_than_announced_is_refused_and_leaves_nothing() {
        let (leader, follower) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (from, to) = (open(leader.path()), open(follower.path()));
        from.build(meta(50), &objects(50), &[]).unwrap();
        let err = send(&from, &to, |size| size + 1).await.err().expect("a short body was accepted");
        assert!(err.to_string().contains("announced"), "{err}");
        assert!(files(follower.path()).is_empty(), "left behind: {:?}", files(follower.path()));
        assert!(to.current().unwrap().is_none());
    }

    #[test]
    fn a_damaged_or_torn_snapshot_stops_the_open_and_one_without_a_checksum_is_taken() {
        let dir = tempfile::tempdir().unwrap();
        open(dir.path()).build(meta(30), &objects(30), &[]).unwrap();
        let path = dir.path().join(FILE);
        let mut bytes = std::fs::read(&path).unwrap();
        let at = bytes.windows(6).position(|w| w == b"{\"i\":7").unwrap() + 5;
        bytes[at] ^= 0x01;
        std::fs::write(&path, &bytes).unwrap();
        let db = Database::create(dir.path().join("raft.redb")).unwrap();
        match Snapshots::open(dir.path(), &db) {
            Err(StoreError::Damaged { file, detail }) => {
                assert!(file.ends_with("/snapshot"), "{file}");
                assert!(detail.contains("checksum"), "{detail}");
            }
            other => panic!("opened a damaged snapshot: {:?}", other.map(|_| ())),
        }
        // As earlier versions wrote it: no trailer, taken as it is.
        bytes[at] ^= 0x01;
        bytes.truncate(bytes.len() - TRAILER as usize);
        std::fs::write(&path, &bytes).unwrap();
        let snapshots = Snapshots::open(dir.path(), &db).unwrap();
        let body = snapshots.install(snapshots.current().unwrap().unwrap()).unwrap();
        assert_eq!(body.objects.len(), 30);
        drop(snapshots);
        // Cut short (a torn write): no trailer, and no whole body either.
        bytes.truncate(bytes.len() / 2);
        std::fs::write(&path, &bytes).unwrap();
        assert!(matches!(Snapshots::open(dir.path(), &db), Err(StoreError::Damaged { .. })), "a torn snapshot was opened");
    }

    #[test]
    fn an_older_snapshot_does_not_replace_a_newer_one() {
        let dir = tempfile::tempdir().unwrap();
        let snapshots = open(dir.path());
        snapshots.build(meta(20), &objects(20), &[]).unwrap();
        let older = snapshots.build(meta(10), &objects(10), &[]).unwrap();
        assert_eq!(older.meta, meta(10), "the builder still gets what it built");
        assert_eq!(snapshots.current().unwrap().unwrap().meta, meta(20));
        drop(older);
        assert_eq!(files(dir.path()), vec![FILE.to_string()]);
    }

    #[test]
    fn a_snapshot_an_earlier_version_kept_in_the_database_moves_to_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let objects = objects(30);
        {
            let db = Database::create(dir.path().join("raft.redb")).unwrap();
            let body = encode(&BodyRef { objects: &objects, txns: &[] }).unwrap();
            let txn = db.begin_write().unwrap();
            {
                let mut table = txn.open_table(SNAPSHOT_TABLE).unwrap();
                table.insert("meta", encode(&meta(30)).unwrap().as_slice()).unwrap();
                table.insert("data", body.as_slice()).unwrap();
            }
            txn.commit().unwrap();
        }
        let snapshots = open(dir.path());
        let current = snapshots.current().unwrap().expect("the snapshot was not moved");
        assert_eq!(current.meta, meta(30));
        assert_eq!(snapshots.install(current).unwrap().objects.into_iter().collect::<BTreeMap<_, _>>(), objects);
        let db = Database::create(dir.path().join("raft.redb")).unwrap();
        let read = db.begin_read().unwrap();
        assert!(matches!(read.open_table(SNAPSHOT_TABLE), Err(redb::TableError::TableDoesNotExist(_))));
    }
}
