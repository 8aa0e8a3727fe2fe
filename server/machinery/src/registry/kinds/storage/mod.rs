//! `storage.k8s.io/v1`: one file per kind.

pub mod csidriver;
pub mod csinode;
pub mod csistoragecapacity;
pub mod storageclass;
pub mod volumeattachment;
pub mod volumeattributesclass;
