//! `serving`: the API server's serving layer, below its controllers.
//!
//! The request path, top to bottom: [`tls`] accepts connections and identifies client
//! certificates, [`app`] runs the filter chain (authentication and authorization from `access`)
//! and routes, `access::request` classifies resource requests, [`handlers`] run one verb each
//! using the registry of kinds from `machinery` and the admission stage from `admission`, and
//! the store from `raft-store` proposes writes to Raft and serves reads and watches from its
//! watch cache. Discovery, aggregation ([`aggregator`]), priority and fairness ([`flowcontrol`]),
//! [`audit`], [`metrics`] and [`health`] sit beside the chain. Nothing here knows the server's
//! own controllers: they are clients of the router, one crate up.

pub mod aggregator;
pub mod app;
pub mod audit;
pub mod backup;
pub mod body;
pub mod compression;
pub mod context;
pub mod discovery;
#[cfg(feature = "failpoints")]
pub mod failpoints;
pub mod flowcontrol;
pub mod framing;
pub mod handlers;
pub mod health;
pub mod hooks;
pub mod ipalloc;
pub mod kubelet;
pub mod metrics;
pub mod nodeports;
pub mod status_response;
pub mod tls;
pub mod traces;
