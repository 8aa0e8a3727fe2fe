//! `batch/v1`: one file per kind (and one for what several of its kinds share).

pub mod cronjob;
pub mod job;
mod schedule;
