//! What a run records: every client operation with its invoke and complete times and outcome,
//! every watch event, every list, and every fault window. Written as JSON lines and read back
//! by the checkers and the report.

use serde::{Deserialize, Serialize};

/// Microseconds since the run started.
pub type Micros = u64;

/// What a client asked for, on one key (a ConfigMap whose `data.v` is the register's value).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "call", rename_all = "snake_case")]
pub enum Call {
    /// A consistent ("Most Recent") GET.
    Read { key: String },
    /// A create with a value no other write uses.
    Create { key: String, value: String },
    /// A PUT carrying the resourceVersion of an earlier read of `expect`, writing `value`.
    Cas { key: String, expect: String, value: String },
    /// An unconditional DELETE.
    Delete { key: String },
}

impl Call {
    pub fn key(&self) -> &str {
        match self {
            Call::Read { key } | Call::Create { key, .. } | Call::Cas { key, .. } | Call::Delete { key } => key,
        }
    }

    pub fn is_write(&self) -> bool {
        !matches!(self, Call::Read { .. })
    }
}

/// How the server answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "ret", rename_all = "snake_case")]
pub enum Ret {
    /// A read's answer: the value, or `None` for 404.
    Read { value: Option<String> },
    /// The write was acknowledged.
    Done,
    /// 409: a create found the key, or a CAS found another version.
    Conflict,
    /// 404: an update or delete found no key.
    NotFound,
    /// No definite answer (timeout, connection lost, 5xx): a write may or may not have happened;
    /// a read tells nothing.
    Unknown { error: String },
}

/// Jepsen's three outcomes, for counting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Ok,
    Failed,
    Unknown,
}

/// One client operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Op {
    pub id: u64,
    pub client: u32,
    /// `lb` or `node-<i>`: where the request went.
    pub target: String,
    #[serde(flatten)]
    pub call: Call,
    #[serde(flatten)]
    pub ret: Ret,
    pub invoke: Micros,
    pub complete: Micros,
    /// The resourceVersion the server answered with, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rv: Option<u64>,
}

impl Op {
    pub fn outcome(&self) -> Outcome {
        match (&self.ret, self.call.is_write()) {
            (Ret::Read { .. } | Ret::Done, _) => Outcome::Ok,
            (Ret::Unknown { .. }, true) => Outcome::Unknown,
            _ => Outcome::Failed,
        }
    }
}

/// The kind of a watch event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum EventType {
    #[serde(rename = "ADDED")]
    Added,
    #[serde(rename = "MODIFIED")]
    Modified,
    #[serde(rename = "DELETED")]
    Deleted,
}

/// An object as a list or a watch event shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Item {
    pub key: String,
    pub value: Option<String>,
    pub rv: u64,
}

/// What one watcher saw, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WatchKind {
    /// A watch request was answered, delivering events after revision `from`.
    Started { from: u64 },
    Event {
        #[serde(rename = "type")]
        event: EventType,
        item: Item,
    },
    Bookmark { rv: u64 },
    /// After 410 Gone: a fresh list at `rv`; the watcher continues from there.
    Relist { rv: u64, items: Vec<Item> },
    /// The stream ended with an error (`code` when the server sent a Status).
    Error { code: Option<u16>, message: String },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchRecord {
    /// `node-<i>`: the replica this watcher talks to.
    pub watcher: String,
    pub at: Micros,
    #[serde(flatten)]
    pub kind: WatchKind,
}

/// One complete list (all pages), at the revision the server gave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListRecord {
    pub target: String,
    pub at: Micros,
    /// The list's resourceVersion (every page is at the same one).
    pub rv: u64,
    /// Whether it asked for this exact revision (`resourceVersionMatch=Exact`).
    pub exact: bool,
    pub pages: u32,
    pub items: Vec<Item>,
}

/// One fault: when it started, when it was healed, and when the cluster answered a write again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultRecord {
    pub name: String,
    pub nodes: Vec<u32>,
    pub start: Micros,
    pub heal: Micros,
    /// The first acknowledged write after the heal.
    pub recovered: Option<Micros>,
    /// For a fault that restored the cluster from a backup: what the backup held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore: Option<Restore>,
}

/// A cluster destroyed and made again from a backup. The restored cluster holds the state at
/// the backup's revision: writes acknowledged with a later one are lost by design, and nothing
/// else may be. Operations invoked from `destroyed` on run against the restored cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Restore {
    /// The backup's revision.
    pub revision: u64,
    /// When the save was asked for and when it had finished: the backup is the state at one
    /// instant between.
    pub save_started: Micros,
    pub saved: Micros,
    /// When every node had been killed.
    pub destroyed: Micros,
    /// What the restored cluster held at its first revision: key to value.
    pub held: std::collections::BTreeMap<String, String>,
}
