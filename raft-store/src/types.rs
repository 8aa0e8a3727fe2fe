//! The Raft type configuration and the one kind of log entry: a compare-and-set transaction.

use std::fmt;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

openraft::declare_raft_types!(
    /// Raft types of the API server's replicated log.
    pub TypeConfig:
        D = Txn,
        R = TxnResult,
        NodeId = u64,
        Node = openraft::BasicNode,
);

pub type NodeId = u64;
pub type Raft = openraft::Raft<TypeConfig, crate::state_machine::StateMachine>;
pub type LogId = openraft::alias::LogIdOf<TypeConfig>;
/// A leader's id: its term and node, ordered by term, then node (openraft allows several
/// leaders in one term, each elected by a greater id).
pub type LeaderId = openraft::alias::LeaderIdOf<TypeConfig>;
pub type Entry = openraft::alias::EntryOf<TypeConfig>;

/// What must hold for an operation to proceed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Cond {
    /// No condition.
    Any,
    /// The key must not exist (create).
    Absent,
    /// The key must exist, at any revision.
    Exists,
    /// The key must exist at exactly this modification revision (optimistic concurrency).
    Rev(u64),
}

/// What an operation does once its condition holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Action {
    /// Store this JSON object; the apply step stamps `metadata.resourceVersion`.
    Put(Bytes),
    /// Remove the key.
    Delete,
    /// Only check the condition.
    Check,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Op {
    pub key: String,
    pub cond: Cond,
    pub action: Action,
}

/// One log entry: all conditions are checked, then all actions applied, atomically.
/// At most one key per watched resource should change in one transaction, so that every
/// watch event carries a distinct revision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Txn {
    pub ops: Vec<Op>,
    /// Set by the store when proposing; a retried proposal keeps it, so that it applies once.
    #[serde(default)]
    pub id: u64,
    /// The W3C `traceparent` of the span that proposed it, when its request is traced (see
    /// `trace`); absent otherwise, and in entries written before traces existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
}

impl Txn {
    pub fn new(ops: Vec<Op>) -> Self {
        Txn { ops, id: 0, trace: None }
    }
}

impl fmt::Display for Txn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Txn[")?;
        for (i, op) in self.ops.iter().enumerate() {
            let verb = match op.action {
                Action::Put(_) => "put",
                Action::Delete => "delete",
                Action::Check => "check",
            };
            if i > 0 {
                write!(f, ", ")?;
            }
            write!(f, "{verb} {} if {:?}", op.key, op.cond)?;
        }
        write!(f, "]")
    }
}

/// A stored object: its JSON (with `metadata.resourceVersion` stamped) and the revision that
/// last modified it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Object {
    pub rev: u64,
    pub data: Bytes,
}

/// The outcome of applying one [`Txn`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum TxnResult {
    /// All conditions held. `objects[i]` is the stored object of op `i` (for a delete: its last
    /// state, stamped with the deletion revision; for a check: the current object).
    Ok { rev: u64, objects: Vec<Option<Object>> },
    /// Op `op`'s condition failed; `current` is what the key held.
    Failed { op: usize, current: Option<Object> },
    /// The entry was not a transaction (blank or membership).
    None,
}
