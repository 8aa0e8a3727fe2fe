//! A kube-rs client over one HTTP/2 connection, as client-go's: every request and watch of a
//! simulated node (or controller) is a stream of the same TLS connection, opened again when the
//! server closes it. kube-rs's own client speaks HTTP/1.1 only, a connection per watch.

use std::path::Path;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use hyper::body::Incoming;
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};
use kube::client::{Body, ConfigExt};
use tokio::sync::Mutex;
use tower::BoxError;

/// One server's address and the credentials to reach it, with the connection once made.
#[derive(Clone)]
struct Connection {
    base: http::Uri,
    server_name: rustls::pki_types::ServerName<'static>,
    tls: Arc<rustls::ClientConfig>,
    sender: Arc<Mutex<Option<SendRequest<Body>>>>,
}

impl Connection {
    async fn sender(&self) -> Result<SendRequest<Body>, BoxError> {
        let mut held = self.sender.lock().await;
        if let Some(s) = held.as_ref().filter(|s| !s.is_closed()) {
            return Ok(s.clone());
        }
        let authority = self.base.authority().ok_or("the server URL has no host")?;
        let port = authority.port_u16().unwrap_or(443);
        let tcp = tokio::net::TcpStream::connect((authority.host().trim_matches(['[', ']']), port)).await?;
        tcp.set_nodelay(true)?;
        let tls = tokio_rustls::TlsConnector::from(self.tls.clone()).connect(self.server_name.clone(), tcp).await?;
        let (sender, connection) = hyper::client::conn::http2::Builder::new(TokioExecutor::new()).handshake(TokioIo::new(tls)).await?;
        tokio::spawn(connection);
        *held = Some(sender.clone());
        Ok(sender)
    }
}

impl tower::Service<http::Request<Body>> for Connection {
    type Response = http::Response<Incoming>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Self::Response, BoxError>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut req: http::Request<Body>) -> Self::Future {
        let this = self.clone();
        Box::pin(async move {
            let path = req.uri().path_and_query().map_or("/", |p| p.as_str()).to_string();
            *req.uri_mut() = http::Uri::builder()
                .scheme(this.base.scheme().cloned().unwrap_or(http::uri::Scheme::HTTPS))
                .authority(this.base.authority().cloned().ok_or("the server URL has no host")?)
                .path_and_query(path)
                .build()?;
            let mut sender = this.sender().await?;
            sender.ready().await?;
            Ok(sender.send_request(req).await?)
        })
    }
}

/// A client of the server and user a kubeconfig names (client certificates), over one HTTP/2
/// connection opened on first use.
pub async fn client(kubeconfig: &Path) -> kube::Client {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig).unwrap_or_else(|e| panic!("{}: {e}", kubeconfig.display()));
    let config = kube::Config::from_custom_kubeconfig(kc, &Default::default()).await.expect("a kubeconfig with a server and a user");
    let mut tls = config.rustls_client_config().expect("the kubeconfig's TLS settings");
    tls.alpn_protocols = vec![b"h2".to_vec()];
    let host = config.tls_server_name.clone().or_else(|| config.cluster_url.host().map(|h| h.trim_matches(['[', ']']).to_string())).expect("a server host");
    let server_name = rustls::pki_types::ServerName::try_from(host).expect("a server name");
    let connection = Connection { base: config.cluster_url.clone(), server_name, tls: Arc::new(tls), sender: Default::default() };
    kube::Client::new(connection, config.default_namespace)
}
