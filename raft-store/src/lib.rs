//! Replicated storage for the API server: an openraft group whose log lives in redb, whose
//! snapshots are files beside it, and whose state machine is the watch cache (current objects,
//! recent history, watches).
//!
//! Every mutation is one log entry holding a compare-and-set [`Txn`]; the entry's log index is
//! the revision (`resourceVersion`) of everything it writes.

mod admin;
pub mod backup;
mod cache;
mod dedupe;
mod error;
mod fanout;
mod forwarder;
mod log_size;
mod log_store;
mod network;
mod observer;
pub mod offline;
mod peer;
mod pipe;
pub mod protocol;
mod read_index;
mod round_trips;
mod service;
mod snapshot;
mod space;
mod stamp;
mod state_machine;
mod store;
mod timings;
pub mod trace;
mod types;

pub use admin::{membership, Member, MembershipChange};
pub use cache::{Cache, CacheOptions, Event, EventType, ListResult, WatchError};
pub use fanout::{FieldIndex, Selects, Watcher};
pub use error::{CorruptObject, StoreError, MAX_CORRUPT};
pub use observer::{ApplyObserver, Observers};
pub use peer::PeerTls;
pub use log_store::{FlushStats, FLUSH_BUCKETS};
pub use round_trips::RTT_BUCKETS;
pub use timings::TimingStats;
pub use store::{RaftStatus, Store, StoreOptions};
pub use types::{Action, Cond, NodeId, Object, Op, Txn, TxnResult};
