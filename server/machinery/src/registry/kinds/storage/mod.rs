//! `storage.k8s.io/v1`: one file per kind with behaviour of its own.

pub mod storageclass;
pub mod volumeattachment;
