//! Connections between replicas: gRPC channels over mutual TLS from the cluster CA, one per
//! peer, shared by the Raft network and by write forwarding; and the CBOR encoding of the
//! openraft messages they carry.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use proto::raft::raft_client::RaftClient;
use proto::raft::{ForwardRequest, ForwardResponse, RaftPayload, ReadIndexRequest, ReadIndexResponse};
use serde::de::DeserializeOwned;
use serde::Serialize;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};

use crate::pipe::Pipes;
use crate::protocol::{Protocols, Stamp};
use crate::types::NodeId;

/// Certificates of the peer transport, all PEM: every node presents `cert` (signed by `ca`),
/// and accepts only peers whose certificate `ca` signed.
#[derive(Clone)]
pub struct PeerTls {
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
}

impl std::fmt::Debug for PeerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeerTls").field("ca_pem", &self.ca_pem).field("cert_pem", &self.cert_pem).field("key_pem", &"<redacted>").finish()
    }
}

impl PeerTls {
    /// The listener's configuration: this node's certificate, peers' certificates required and
    /// verified against the CA, HTTP/2 (gRPC).
    pub fn server_config(&self) -> Result<Arc<rustls::ServerConfig>, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let certs = |pem: &str| rustls_pemfile::certs(&mut pem.as_bytes()).collect::<Result<Vec<_>, _>>().map_err(|e| e.to_string());
        let mut roots = rustls::RootCertStore::empty();
        for ca in certs(&self.ca_pem)? {
            roots.add(ca).map_err(|e| format!("the peer CA: {e}"))?;
        }
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone()).build().map_err(|e| format!("the peer CA: {e}"))?;
        let key = rustls_pemfile::private_key(&mut self.key_pem.as_bytes()).map_err(|e| e.to_string())?.ok_or("the peer key file holds no PEM private key")?;
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_client_cert_verifier(verifier)
            .with_single_cert(certs(&self.cert_pem)?, key)
            .map_err(|e| format!("the peer certificate and key: {e}"))?;
        config.alpn_protocols = vec![b"h2".to_vec()];
        Ok(Arc::new(config))
    }

    fn client(&self, host: &str) -> ClientTlsConfig {
        ClientTlsConfig::new()
            .ca_certificate(Certificate::from_pem(&self.ca_pem))
            .identity(Identity::from_pem(&self.cert_pem, &self.key_pem))
            .domain_name(host)
    }
}

/// A client of a peer's service; each call says which peer protocol this build speaks.
pub(crate) type Client = RaftClient<InterceptedService<Channel, Stamp>>;

/// A lazily connected channel to every peer, by node id. Clones (one per request handler's
/// store handle) share the certificates and the channels.
#[derive(Clone)]
pub struct Peers {
    /// Replaced when the certificate files change; new connections use the new ones.
    tls: Arc<RwLock<Option<Arc<PeerTls>>>>,
    channels: Arc<Mutex<HashMap<(NodeId, String), Channel>>>,
    /// Standing streams for single appends, forwarded writes and read indexes.
    pub(crate) appends: Pipes<RaftPayload, RaftPayload>,
    pub(crate) forwards: Pipes<ForwardRequest, ForwardResponse>,
    pub(crate) read_indexes: Pipes<ReadIndexRequest, ReadIndexResponse>,
    /// What each peer speaks, as its probes answered.
    pub(crate) protocols: Arc<Protocols>,
}

impl Peers {
    pub fn new(tls: Option<PeerTls>) -> Self {
        Peers {
            tls: Arc::new(RwLock::new(tls.map(Arc::new))),
            channels: Default::default(),
            appends: Default::default(),
            forwards: Default::default(),
            read_indexes: Default::default(),
            protocols: Default::default(),
        }
    }

    /// The certificates peers present and check, if the transport uses TLS.
    pub fn tls(&self) -> Option<Arc<PeerTls>> {
        self.tls.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// New certificates (checked first): the listener's next handshakes and the channels opened
    /// from now on use them; connections open now stay as they are.
    pub fn set_tls(&self, tls: PeerTls) -> Result<(), String> {
        tls.server_config()?;
        *self.tls.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(tls));
        self.channels.lock().unwrap_or_else(|e| e.into_inner()).clear();
        Ok(())
    }

    /// A client to the peer `id` at `addr` (`host:port`).
    pub(crate) fn client(&self, id: NodeId, addr: &str) -> Result<Client, String> {
        let mut channels = self.channels.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(ch) = channels.get(&(id, addr.to_string())) {
            return Ok(RaftClient::with_interceptor(ch.clone(), Stamp).max_decoding_message_size(MAX_MESSAGE));
        }
        let tls = self.tls();
        let scheme = if tls.is_some() { "https" } else { "http" };
        let mut endpoint = Endpoint::from_shared(format!("{scheme}://{addr}"))
            .map_err(|e| e.to_string())?
            .connect_timeout(Duration::from_secs(1))
            .tcp_nodelay(true)
            .http2_keep_alive_interval(Duration::from_secs(10));
        if let Some(tls) = &tls {
            let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h).trim_matches(['[', ']']);
            endpoint = endpoint.tls_config(tls.client(host)).map_err(|e| e.to_string())?;
        }
        let ch = endpoint.connect_lazy();
        channels.insert((id, addr.to_string()), ch.clone());
        Ok(RaftClient::with_interceptor(ch, Stamp).max_decoding_message_size(MAX_MESSAGE))
    }
}

/// How long one forwarded batch of writes or read-index request may take before it is tried
/// again (on whichever node leads by then; a repeated write applies once).
pub(crate) const PEER_CALL: Duration = Duration::from_secs(2);

/// One call to the leader, given at most `PEER_CALL`; a timeout or a transport error becomes
/// its message.
pub(crate) async fn ask_leader<T>(call: impl std::future::Future<Output = Result<tonic::Response<T>, tonic::Status>>) -> Result<T, String> {
    match tokio::time::timeout(PEER_CALL, call).await {
        Err(_) => Err("the leader did not answer in time".into()),
        Ok(Err(status)) => Err(status.message().to_string()),
        Ok(Ok(resp)) => Ok(resp.into_inner()),
    }
}

/// The largest gRPC message between peers (an append with a full batch of 3 MiB objects).
pub(crate) const MAX_MESSAGE: usize = 256 << 20;

pub(crate) fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    ciborium::into_writer(value, &mut out).map_err(|e| e.to_string())?;
    Ok(out)
}

pub(crate) fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    ciborium::from_reader(bytes).map_err(|e| e.to_string())
}
