//! `apiserver`: a Kubernetes API server whose storage is a Raft log.
//!
//! The crates, bottom up: `machinery` (the object model), `raft-store` (storage), `access`
//! (who a request is and what it may do), `admission`, `serving` (the filter chain, handlers and
//! everything that serves a request) and this one on top, which assembles a node ([`server`])
//! from its flags ([`cli`]) and runs what writes as a client of the router: the post-start hooks
//! ([`poststart`]) and the built-in [`controllers`], through the in-process client ([`loopback`]).

pub mod admission_chain;
pub mod check;
pub mod cli;
pub mod context;
pub mod controllers;
pub mod defrag;
pub mod flags_reference;
pub mod log_limit;
pub mod loopback;
pub mod member;
pub mod poststart;
pub mod reseed;
pub mod server;
pub mod snapshot;
