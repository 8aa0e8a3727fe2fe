//! The storage layer's error type; the server maps each variant to a `metav1.Status`.

/// Why a read or write against the replicated store failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StoreError {
    /// The requested revision is older than the retained history.
    #[error("revision {requested} has been compacted (oldest available {compacted})")]
    Compacted { requested: u64, compacted: u64 },
    /// The requested revision did not arrive within the wait limit.
    #[error("Too large resource version: {requested}, current: {current}")]
    TooLargeResourceVersion { requested: u64, current: u64 },
    /// This node cannot serve the request because it is not (or no longer) the leader.
    #[error("not the leader: {0}")]
    NotLeader(String),
    /// Consensus is not available (no leader, shutting down).
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// Stored objects that cannot be decoded (at most [`MAX_CORRUPT`] of them, in key order).
    #[error("unable to transform or decode {} objects", .0.len())]
    Corrupt(Vec<CorruptObject>),
    /// An I/O or encoding failure.
    #[error("storage error: {0}")]
    Internal(String),
    /// The state has outgrown its quota: only deletes are taken (etcd's words, which clients
    /// and operators know).
    #[error("etcdserver: mvcc: database space exceeded")]
    QuotaExceeded,
    /// The data directory's file system is short of space: writes wait until it is freed.
    #[error("{0}")]
    NoSpace(String),
    /// A file of the data directory fails its checks: the node must not start from it.
    #[error("{file} is damaged: {detail}")]
    Damaged { file: String, detail: String },
}

/// How many undecodable objects one read names at most.
pub const MAX_CORRUPT: usize = 100;

/// A stored object whose bytes cannot be decoded: its key, the revision that wrote it, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct CorruptObject {
    pub key: String,
    pub rev: u64,
    pub reason: String,
}

impl StoreError {
    pub fn internal(e: impl std::fmt::Display) -> Self {
        StoreError::Internal(e.to_string())
    }
}

/// Wraps any error as the `io::Error` openraft's storage traits expect.
pub(crate) fn io_err(e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(e.to_string())
}
