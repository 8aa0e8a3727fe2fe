//! Calls to services outside the server (webhooks, OIDC issuers): an endpoint read from a
//! kubeconfig file or given by URL, and one JSON POST or GET over HTTPS (or plain HTTP when the
//! URL says so) with a deadline.

pub mod client_config;
pub mod expiring;
mod insecure;
pub mod kubeconfig;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{header, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

/// The largest answer read from a webhook.
const MAX_RESPONSE: usize = 3 * 1024 * 1024;

/// A webhook's address and the credentials it is called with.
pub struct Endpoint {
    uri: Uri,
    host: String,
    port: u16,
    /// `None` for a plain-HTTP URL.
    tls: Option<(Arc<rustls::ClientConfig>, ServerName<'static>)>,
    token: Option<String>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token is never printed.
        f.debug_struct("Endpoint").field("uri", &self.uri).finish_non_exhaustive()
    }
}

/// Why a call did not produce an answer.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("the webhook did not answer within {0:?}")]
    Timeout(Duration),
    #[error("calling the webhook: {0}")]
    Transport(String),
}

impl Endpoint {
    /// An endpoint at `server` (an `https://` or `http://` URL), trusting `ca` (PEM; this
    /// machine's roots when absent), presenting `client` (certificate and key PEM) and `token`.
    pub fn new(server: &str, ca: Option<&str>, client: Option<(String, String)>, token: Option<String>, tls_server_name: Option<&str>) -> Result<Endpoint, String> {
        let uri: Uri = server.parse().map_err(|e| format!("server URL {server:?}: {e}"))?;
        let host = uri.host().ok_or_else(|| format!("server URL {server:?} has no host"))?.to_string();
        let (tls, default_port) = match uri.scheme_str() {
            Some("https") => {
                let config = kubeconfig::tls_config(ca, client)?;
                (Some((config, kubeconfig::server_name(&host, tls_server_name)?)), 443)
            }
            Some("http") => (None, 80),
            _ => return Err(format!("server URL {server:?}: the scheme must be https or http")),
        };
        let port = uri.port_u16().unwrap_or(default_port);
        Ok(Endpoint { uri, host, port, tls, token })
    }

    /// The same endpoint, not verifying the server's certificate (`insecureSkipTLSVerify`),
    /// presenting `client`.
    pub fn without_verification(mut self, client: Option<(String, String)>) -> Result<Endpoint, String> {
        if let Some((config, _)) = &mut self.tls {
            *config = kubeconfig::tls_config_verifying(None, client, false)?;
        }
        Ok(self)
    }

    /// The URL called.
    pub fn url(&self) -> String {
        self.uri.to_string()
    }

    /// POSTs `body` (JSON) and returns the status and body of the answer, all within `timeout`.
    pub async fn post_json(&self, body: Vec<u8>, timeout: Duration) -> Result<(StatusCode, Bytes), CallError> {
        self.within(timeout, self.call(Some(body))).await
    }

    /// GETs the URL and returns the status and body of the answer, all within `timeout`.
    pub async fn get(&self, timeout: Duration) -> Result<(StatusCode, Bytes), CallError> {
        self.within(timeout, self.call(None)).await
    }

    async fn within(
        &self,
        timeout: Duration,
        call: impl std::future::Future<Output = Result<(StatusCode, Bytes), CallError>>,
    ) -> Result<(StatusCode, Bytes), CallError> {
        match tokio::time::timeout(timeout, call).await {
            Ok(result) => result,
            Err(_) => Err(CallError::Timeout(timeout)),
        }
    }

    /// A POST of `body`, or a GET without one.
    async fn call(&self, body: Option<Vec<u8>>) -> Result<(StatusCode, Bytes), CallError> {
        let path = self.uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
        let mut request = match body {
            Some(_) => Request::post(path).header(header::CONTENT_TYPE, "application/json"),
            None => Request::get(path),
        }
        .header(header::ACCEPT, "application/json");
        if let Some(token) = &self.token {
            request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let request = request.body(Full::new(Bytes::from(body.unwrap_or_default()))).map_err(|e| CallError::Transport(e.to_string()))?;
        let response = self.send(request).await?;
        let status = response.status();
        let body = Limited::new(response.into_body(), MAX_RESPONSE)
            .collect()
            .await
            .map_err(|e| CallError::Transport(format!("reading the answer: {e}")))?
            .to_bytes();
        Ok((status, body))
    }

    /// Sends `request` (its path as given, its `Host` this endpoint's) on a new connection and
    /// returns the answer as it starts; its body streams from the connection.
    pub async fn send(&self, mut request: Request<Full<Bytes>>) -> Result<http::Response<hyper::body::Incoming>, CallError> {
        let host = self.host.trim_start_matches('[').trim_end_matches(']');
        let tcp = TcpStream::connect((host, self.port)).await.map_err(|e| CallError::Transport(format!("connecting to {}: {e}", self.uri)))?;
        let _ = tcp.set_nodelay(true);
        let authority = match self.uri.port_u16() {
            Some(p) => format!("{}:{p}", self.host),
            None => self.host.clone(),
        };
        request.headers_mut().insert(header::HOST, http::HeaderValue::from_str(&authority).map_err(|e| CallError::Transport(e.to_string()))?);
        match &self.tls {
            Some((config, name)) => {
                let tls = tokio_rustls::TlsConnector::from(config.clone())
                    .connect(name.clone(), tcp)
                    .await
                    .map_err(|e| CallError::Transport(format!("TLS handshake with {}: {e}", self.uri)))?;
                exchange(tls, request).await
            }
            None => exchange(tcp, request).await,
        }
    }
}

async fn exchange<S>(io: S, request: Request<Full<Bytes>>) -> Result<http::Response<hyper::body::Incoming>, CallError>
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let transport = |e: hyper::Error| CallError::Transport(e.to_string());
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io)).await.map_err(transport)?;
    // Upgrades kept: a kubelet's exec stream goes on over the connection.
    tokio::spawn(async move {
        let _ = conn.with_upgrades().await;
    });
    sender.send_request(request).await.map_err(transport)
}
