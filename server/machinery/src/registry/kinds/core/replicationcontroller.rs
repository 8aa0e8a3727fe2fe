//! ReplicationControllers: the replicated workloads' defaults, printed as ReplicaSets are.

use crate::registry::kinds::apps::{replicaset, workload};
use crate::registry::kinds::Strategy;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    default: workload::replicated,
    columns: replicaset::COLUMNS,
    cells: replicaset::cells,
    ..Strategy::NONE
};
