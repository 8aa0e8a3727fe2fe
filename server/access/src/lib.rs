//! `access`: access control of the API server. Who a request acts as ([`user`], found by the
//! authenticators in [`authn`]), what it does ([`attributes`]), acting as someone else
//! ([`impersonation`]), whether it may ([`authz`]), the RBAC objects behind the default mode
//! ([`rbac`]), what kubelets may reach ([`node`]), service-account tokens ([`serviceaccount`]),
//! and the flags of all of it ([`options`]).
//!
//! Below it is `machinery` (the object model) and `raft-store` (the replicated state the
//! indexes are derived from); above it, admission and the API server.

pub mod attributes;
pub mod authn;
pub mod authz;
pub mod field_errors;
pub mod file_watch;
pub mod impersonation;
pub mod node;
pub mod options;
pub mod rbac;
pub mod request;
pub mod serviceaccount;
pub mod user;

use std::sync::Arc;

pub use attributes::Attributes;
pub use user::UserInfo;

/// What the request chain and admission consult: the authorizer chain and this replica's RBAC
/// index.
#[derive(Clone)]
pub struct Auth {
    pub chain: authz::Chain,
    pub rbac: Arc<rbac::RbacIndex>,
}
