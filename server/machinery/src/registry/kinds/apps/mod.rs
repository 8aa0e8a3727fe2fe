//! `apps/v1`: one file per kind (and one for what several of its kinds share).

pub mod controllerrevision;
pub mod daemonset;
pub mod deployment;
pub mod replicaset;
pub mod statefulset;
pub mod workload;
