//! API Priority and Fairness: the FlowSchemas and PriorityLevelConfigurations every cluster has
//! ([`bootstrap`]), the classification of every request by them ([`classify`]), and the schema
//! status the leader keeps ([`status`]).

pub mod bootstrap;
pub mod classify;
pub mod status;

pub use classify::{Classification, FlowControl};

/// Seats the server shares among priority levels (kube-apiserver's default
/// `--max-requests-inflight` 400 plus `--max-mutating-requests-inflight` 200).
pub const SERVER_CONCURRENCY_LIMIT: u64 = 600;
