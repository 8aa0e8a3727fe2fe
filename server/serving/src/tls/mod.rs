//! TLS for the API server: the PKI on disk ([`certs`]), the admin kubeconfig ([`kubeconfig`]),
//! and the HTTPS listener ([`serve`]), which attaches the identity of a verified client
//! certificate (`access::authn::x509`) to each request.
//!
//! Start-up: `ensure_pki(data_dir, &opts)` → `server_config(&pki, proxy_ca)` →
//! `serve(listener, tls, router, shutdown)`; `write_admin_kubeconfig` for kubectl.

pub mod certs;
pub mod kubeconfig;
pub mod serve;
pub mod v1_certs;

pub use certs::{ensure_pki, Pki, TlsOptions, ADMIN_GROUP, ADMIN_USER, CA_COMMON_NAME};
pub use kubeconfig::{admin_kubeconfig, write_admin_kubeconfig};
pub use serve::{serve, server_config, Tls};
