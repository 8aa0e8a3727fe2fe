//! The state every handler shares: the store, and the server settings handlers consult.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use raft_store::Store;

use crate::ipalloc::ServiceIps;
use crate::nodeports::NodePorts;

/// Shared by all requests; cheap to clone. Each stage of a request reaches only its part: the
/// filter chain [`Filters`], the write handlers [`Writes`], every handler the store and settings.
#[derive(Clone)]
pub struct Ctx {
    pub store: Store,
    pub settings: Arc<Settings>,
    pub filters: Arc<Filters>,
    pub writes: Arc<Writes>,
    /// Service-account tokens: issued by TokenRequest, with the issuer's discovery documents.
    pub tokens: Arc<access::serviceaccount::Tokens>,
}

/// The filter chain's stages, in the order a request meets them.
pub struct Filters {
    /// Who a request is.
    pub authn: Arc<access::authn::Authenticator>,
    /// The audit log, when `--audit-policy-file` and `--audit-log-path` are given.
    pub audit: Option<Arc<crate::audit::Auditor>>,
    /// Impersonation and the authorizer chain.
    pub auth: access::Auth,
    /// Request classification by the FlowSchemas this replica has applied.
    pub flowcontrol: Arc<crate::flowcontrol::FlowControl>,
    /// What every answered request is counted in.
    pub metrics: Arc<crate::metrics::Metrics>,
    /// The tracer of requests, when `--tracing-config-file` turns traces on.
    pub tracer: Option<opentelemetry_sdk::trace::SdkTracer>,
}

/// What a create, update or delete consults beyond the store.
pub struct Writes {
    pub admission: admission::Admission,
    /// The Service IP ranges new Services are given addresses from.
    pub ips: Arc<ServiceIps>,
    /// The range Services' node ports are given from.
    pub node_ports: NodePorts,
}

/// Server behaviour fixed at startup.
#[derive(Debug, Clone)]
pub struct Settings {
    /// How long a "Not older than" read waits for its revision before 504.
    pub rv_wait: Duration,
    /// Interval between watch bookmarks, when asked for.
    pub bookmark_interval: Duration,
    /// Longest a watch stays open when the client sets no timeout.
    pub watch_timeout: Duration,
    /// Longest any other request may take (`--request-timeout`).
    pub request_timeout: Duration,
    /// Largest accepted request body.
    pub max_body: usize,
    /// `https://host:port` as clients reach this server.
    pub address: String,
    /// The IP published for the `kubernetes` Service (`--advertise-address`); the address's host
    /// when `None`.
    pub advertise_address: Option<std::net::IpAddr>,
    /// The post-start hooks done on this node.
    pub hooks: Arc<crate::hooks::Progress>,
    /// The CA bundle client certificates are checked against (published for extension servers).
    pub client_ca_pem: String,
    /// The authenticating proxy's CA (`--requestheader-client-ca-file`), PEM.
    pub proxy_ca_pem: Option<String>,
    /// The CA bundle that verifies this server (published to pods as `kube-root-ca.crt`).
    pub root_ca_pem: String,
    /// The client certificate and key (PEM) presented to extension API servers.
    pub proxy_client: Option<ClientCredentials>,
    /// How kubelets are reached (`--kubelet-*`).
    pub kubelet: crate::kubelet::KubeletClient,
    /// `--enable-bootstrap-token-auth`: the leader runs the bootstrap token controllers.
    pub bootstrap_tokens: bool,
    /// `--controllers`: the optional controllers turned off.
    pub disabled_controllers: Vec<String>,
    /// Set when shutdown begins.
    pub shutting_down: Arc<AtomicBool>,
}

/// A client certificate and its key (PEM); the key is never printed.
#[derive(Clone)]
pub struct ClientCredentials {
    pub cert: String,
    pub key: String,
}

impl std::fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClientCredentials { key: <redacted>, .. }")
    }
}

impl ClientCredentials {
    /// The certificate and key, as TLS configurations take them.
    pub fn pair(&self) -> (String, String) {
        (self.cert.clone(), self.key.clone())
    }
}

impl Settings {
    /// Whether the leader runs the optional controller `name`.
    pub fn controller_enabled(&self, name: &str) -> bool {
        !self.disabled_controllers.iter().any(|d| d == name)
    }

    pub fn shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::Relaxed)
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            rv_wait: Duration::from_secs(3),
            bookmark_interval: Duration::from_secs(60),
            watch_timeout: Duration::from_secs(30 * 60),
            request_timeout: Duration::from_secs(60),
            max_body: machinery::yaml::MAX_REQUEST_BYTES,
            address: String::new(),
            advertise_address: None,
            hooks: Default::default(),
            client_ca_pem: String::new(),
            proxy_ca_pem: None,
            root_ca_pem: String::new(),
            proxy_client: None,
            kubelet: Default::default(),
            bootstrap_tokens: false,
            disabled_controllers: Vec::new(),
            shutting_down: Default::default(),
        }
    }
}

impl Ctx {
    /// The revision a read should see, waiting as its semantics require.
    pub async fn read_rev(&self, at: &machinery::query::ReadAt) -> machinery::error::ApiResult<u64> {
        use machinery::query::ReadAt;
        let cache = self.store.cache();
        Ok(match at {
            ReadAt::MostRecent | ReadAt::Continue { rev: None, .. } => self.store.linearizable_rev().await?,
            ReadAt::Any => cache.applied(),
            ReadAt::NotOlderThan(rev) => {
                self.store.wait_for(*rev, self.settings.rv_wait).await?;
                cache.applied()
            }
            ReadAt::Exact(rev) | ReadAt::Continue { rev: Some(rev), .. } => {
                self.store.wait_for(*rev, self.settings.rv_wait).await?;
                *rev
            }
        })
    }
}
