//! `apiserver`: a Kubernetes API server whose storage is a Raft log.
//!
//! The request path, top to bottom: [`tls`] accepts connections and identifies client
//! certificates, [`app`] runs the filter chain and routes, [`request`] classifies resource
//! requests, [`handlers`] run one verb each using the [`registry`], and the store from
//! `raft-store` proposes writes to Raft and serves reads and watches from its watch cache.

pub mod admission;
pub mod aggregator;
pub mod app;
pub mod audit;
pub mod auth;
pub mod cbor;
pub mod cli;
pub mod compression;
pub mod context;
pub mod controllers;
pub mod crd;
pub mod discovery;
pub mod error;
pub mod expr;
#[cfg(feature = "failpoints")]
pub mod failpoints;
pub mod fieldmanager;
pub mod file_watch;
pub mod flowcontrol;
pub mod gc;
pub mod go_duration;
pub mod handlers;
pub mod health;
pub mod identity_lease;
pub mod ip_repair;
pub mod ipalloc;
pub mod leading;
pub mod member;
pub mod meta;
pub mod metadata_form;
pub mod metrics;
pub mod negotiate;
pub mod openapi;
pub mod pod_gc;
pub mod poststart;
pub mod patch;
pub mod protobuf;
pub mod query;
pub mod registry;
pub mod request;
pub mod selector;
pub mod server;
pub mod table_form;
#[cfg(test)]
mod test_values;
pub mod tls;
pub mod webhook;
