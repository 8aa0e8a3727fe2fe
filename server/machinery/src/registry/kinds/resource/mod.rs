//! `resource.k8s.io/v1`: one file per kind.

pub mod deviceclass;
pub mod resourceclaim;
pub mod resourceclaimtemplate;
pub mod resourceslice;
