//! `apiserver`: a Kubernetes API server whose storage is a Raft log.

pub mod cli;
pub mod discovery;
pub mod error;
pub mod ipalloc;
pub mod meta;
pub mod negotiate;
pub mod openapi;
pub mod patch;
pub mod query;
pub mod registry;
pub mod request;
pub mod selector;
pub mod table_form;
pub mod tls;
