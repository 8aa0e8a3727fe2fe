//! `apiserver`: a Kubernetes API server whose storage is a Raft log.
//!
//! The request path, top to bottom: [`tls`] accepts connections and identifies client
//! certificates, [`app`] runs the filter chain (authentication and authorization from `access`)
//! and routes, `access::request` classifies resource requests, [`handlers`] run one verb each
//! using the registry of kinds from `machinery` and the admission stage from `admission`, and
//! the store from `raft-store` proposes writes to Raft and serves reads and watches from its
//! watch cache. The server's own [`controllers`] and post-start hooks ([`poststart`]) write
//! through the same path, as clients ([`loopback`]).

pub mod aggregator;
pub mod app;
pub mod audit;
pub mod cli;
pub mod compression;
pub mod context;
pub mod controllers;
pub mod discovery;
#[cfg(feature = "failpoints")]
pub mod failpoints;
pub mod flags_reference;
pub mod flowcontrol;
pub mod handlers;
pub mod health;
pub mod ipalloc;
pub mod member;
pub mod loopback;
pub mod metrics;
pub mod poststart;
pub mod server;
pub mod status_response;
pub mod tls;
