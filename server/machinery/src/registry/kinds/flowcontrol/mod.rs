//! `flowcontrol.apiserver.k8s.io/v1`: one file per kind (and one for what several of its kinds share).

pub mod flowschema;
pub mod prioritylevelconfiguration;
