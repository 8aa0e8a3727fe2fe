//! `apiserver`: a Kubernetes API server whose storage is a Raft log.
//!
//! The request path, top to bottom: [`tls`] accepts connections and identifies client
//! certificates, [`filters`] authenticate and classify the request, [`handlers`] run one verb
//! each against the [`registry`] and the [`storage`] layer, which proposes writes to Raft and
//! reads from the watch cache kept by `raft-store`.

pub mod cli;
pub mod discovery;
pub mod error;
pub mod negotiate;
pub mod openapi;
pub mod patch;
pub mod registry;
pub mod selector;
pub mod table_form;
pub mod tls;
