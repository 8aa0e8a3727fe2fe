//! TLS for the API server: the PKI on disk ([`certs`]), the admin kubeconfig ([`kubeconfig`]),
//! the rustls configuration ([`config`], with [`suites`] and [`sni`]) that follows its files
//! ([`reload`]), and the HTTPS listener ([`serve`], one [`connection`] at a time), which
//! attaches the identity of a verified client certificate (`access::authn::x509`) to each
//! request.
//!
//! Start-up: `ensure_pki(data_dir, &opts)` → `DynamicTls::follow(sources, flags)` →
//! `serve(listener, tls, router, options, shutdown)`; `write_admin_kubeconfig` for kubectl.

pub mod certs;
pub mod config;
pub mod connection;
pub mod kubeconfig;
pub mod reload;
pub mod serve;
pub mod sni;
pub mod suites;
pub mod v1_certs;

pub use certs::{ensure_pki, Pki, TlsOptions, ADMIN_GROUP, ADMIN_USER, CA_COMMON_NAME};
pub use config::{server_config, Material, Tls, TlsFlags};
pub use kubeconfig::{admin_kubeconfig, write_admin_kubeconfig};
pub use reload::{follow_files, DynamicTls, Sources};
pub use serve::{serve, ServeOptions};
pub use sni::{parse_sni_cert_key, SniCertKey};
