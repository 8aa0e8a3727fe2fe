//! The fault-injection suite: a real cluster of separate hosts (network namespaces), client
//! workloads, faults on a schedule, a recorded history, checkers and a report.

pub mod check;
pub mod history;
pub mod report;
pub mod cluster;
pub mod net;
pub mod record;
pub mod workload;
pub mod faults;
pub mod schedule;
pub mod run;
