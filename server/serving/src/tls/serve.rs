//! The HTTPS listener: TLS with optional client certificates, HTTP/1.1 and HTTP/2 (ALPN),
//! the client's identity in each request's extensions, and graceful shutdown.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper::Request;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use rustls::pki_types::CertificateDer;
use rustls::server::danger::ClientCertVerifier;
use rustls::server::WebPkiClientVerifier;
use rustls::ServerConfig;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt;

use super::certs::{parse_certs, Pki};
use super::v1_certs::AcceptingV1;
use access::authn::x509::{ClientIdentity, ProxyIdentity};

/// A client that has not finished the TLS handshake by then is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// After shutdown is signalled, open requests (watches included) get this long to finish.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// Pause after a failed `accept` (e.g. out of file descriptors) before trying again.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// The server's TLS settings and the verifiers that tell which CA a client certificate is of.
#[derive(Clone)]
pub struct Tls {
    pub config: Arc<ServerConfig>,
    /// Set when there is a proxy CA: then the handshake accepted either CA, and each is asked.
    split: Option<(Arc<dyn ClientCertVerifier>, Arc<dyn ClientCertVerifier>)>,
}

fn verifier(pems: &[&str], provider: &Arc<rustls::crypto::CryptoProvider>) -> anyhow::Result<Arc<dyn ClientCertVerifier>> {
    let mut roots = rustls::RootCertStore::empty();
    let mut cas = Vec::new();
    for pem in pems {
        for cert in parse_certs(pem)? {
            roots.add(cert.clone()).context("adding a client CA certificate")?;
            cas.push(cert);
        }
    }
    let webpki = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .allow_unauthenticated()
        .build()
        .context("building the client certificate verifier")?;
    Ok(Arc::new(AcceptingV1::new(webpki, &cas, provider.signature_verification_algorithms)))
}

/// The rustls server configuration for `pki`: the serving certificate, client certificates
/// verified against the client CA (or the authenticating proxy's `proxy_ca`) but optional
/// (anonymous clients may connect, a certificate that fails verification fails the handshake),
/// ALPN `h2` and `http/1.1`, the ring provider.
pub fn server_config(pki: &Pki, proxy_ca: Option<&str>) -> anyhow::Result<Tls> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let (verifier, split) = match proxy_ca {
        None => (verifier(&[&pki.client_ca_pem], &provider)?, None),
        Some(proxy) => (
            verifier(&[&pki.client_ca_pem, proxy], &provider)?,
            Some((verifier(&[&pki.client_ca_pem], &provider)?, verifier(&[proxy], &provider)?)),
        ),
    };
    let chain = parse_certs(&pki.serving_cert_pem)?;
    let key = rustls_pemfile::private_key(&mut pki.serving_key_pem.as_bytes())
        .context("reading the serving key")?
        .context("the serving key file holds no PEM private key")?;
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .context("the serving certificate and key do not fit together")?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Tls { config: Arc::new(config), split })
}

impl Tls {
    /// Who a verified chain says the client is: a user of the client CA, a proxy of the proxy
    /// CA, or both when both CAs verify it.
    fn identities(&self, chain: Option<&[CertificateDer<'static>]>) -> (Option<ClientIdentity>, Option<ProxyIdentity>) {
        let Some((leaf, intermediates)) = chain.and_then(|c| c.split_first()) else { return (None, None) };
        let Some(identity) = ClientIdentity::from_certificate(leaf) else { return (None, None) };
        let Some((client, proxy)) = &self.split else { return (Some(identity), None) };
        let now = rustls::pki_types::UnixTime::now();
        let by = |v: &Arc<dyn ClientCertVerifier>| v.verify_client_cert(leaf, intermediates, now).is_ok();
        let proxy = by(proxy).then(|| ProxyIdentity { name: identity.user.clone() });
        (by(client).then_some(identity), proxy)
    }
}

/// Serves `app` over TLS on `listener` until `shutdown` resolves; then stops accepting, asks
/// open connections to close (HTTP/2 GOAWAY, HTTP/1.1 close after the current response) and
/// drops those still open after a few seconds. Each request carries `ConnectInfo<SocketAddr>`
/// and, when the client presented a verified certificate naming a user, a [`ClientIdentity`].
pub async fn serve(
    listener: TcpListener,
    tls: Tls,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let acceptor = TlsAcceptor::from(tls.config.clone());
    let tls = Arc::new(tls);
    let mut builder = Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new());
    builder.http2().timer(TokioTimer::new());
    let builder = Arc::new(builder);
    let (stop_tx, stop_rx) = watch::channel(());
    let mut conns = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        let (tcp, peer) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    tracing::warn!(error = %err, "accepting a connection failed");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
        };
        while conns.try_join_next().is_some() {}
        conns.spawn(connection(
            tcp,
            peer,
            acceptor.clone(),
            tls.clone(),
            builder.clone(),
            app.clone(),
            stop_rx.clone(),
        ));
    }
    drop(listener);
    stop_tx.send_replace(());
    let drained = tokio::time::timeout(SHUTDOWN_GRACE, async {
        while conns.join_next().await.is_some() {}
    });
    if drained.await.is_err() {
        tracing::info!(
            open = conns.len(),
            "closing connections still open after the shutdown grace period"
        );
        conns.shutdown().await;
    }
    Ok(())
}

/// One client connection: handshake, then HTTP until the client leaves or `stop` fires.
async fn connection(
    tcp: TcpStream,
    peer: SocketAddr,
    acceptor: TlsAcceptor,
    settings: Arc<Tls>,
    builder: Arc<Builder<TokioExecutor>>,
    app: Router,
    mut stop: watch::Receiver<()>,
) {
    let _ = tcp.set_nodelay(true);
    let tls = tokio::select! {
        _ = stop.changed() => return,
        handshake = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)) => match handshake {
            Ok(Ok(tls)) => tls,
            Ok(Err(err)) => {
                tracing::debug!(%peer, error = %err, "TLS handshake failed");
                return;
            }
            Err(_) => {
                tracing::debug!(%peer, "TLS handshake timed out");
                return;
            }
        },
    };
    let (identity, proxy) = settings.identities(tls.get_ref().1.peer_certificates());
    let service = app.map_request(move |mut req: Request<Incoming>| {
        req.extensions_mut().insert(ConnectInfo(peer));
        if let Some(identity) = &identity {
            req.extensions_mut().insert(identity.clone());
        }
        if let Some(proxy) = &proxy {
            req.extensions_mut().insert(proxy.clone());
        }
        req
    });
    let conn = builder
        .serve_connection_with_upgrades(TokioIo::new(tls), TowerToHyperService::new(service));
    tokio::pin!(conn);
    let result = tokio::select! {
        result = conn.as_mut() => result,
        _ = stop.changed() => {
            conn.as_mut().graceful_shutdown();
            conn.await
        }
    };
    if let Err(err) = result {
        tracing::debug!(%peer, error = %err, "connection ended with an error");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tls::certs::{ensure_pki, tests::temp_dir, TlsOptions};
    use axum::body::Body;
    use axum::routing::get;
    use axum::Extension;
    use bytes::Bytes;
    use http_body_util::{BodyExt, Empty};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_rustls::client::TlsStream;
    use tokio_rustls::TlsConnector;

    async fn whoami(identity: Option<Extension<ClientIdentity>>) -> String {
        match identity {
            Some(Extension(id)) => format!("user={} groups={}", id.user, id.groups.join(",")),
            None => "anonymous".to_string(),
        }
    }

    /// Connects to `addr` trusting `pki`'s CA, presenting `client` (certificate, key) if given.
    async fn connect(
        addr: SocketAddr,
        pki: &Pki,
        client: Option<(&str, &str)>,
        alpn: &[u8],
    ) -> std::io::Result<TlsStream<TcpStream>> {
        let mut roots = rustls::RootCertStore::empty();
        for cert in parse_certs(&pki.server_ca_pem).unwrap() {
            roots.add(cert).unwrap();
        }
        let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
        let mut config = match client {
            Some((cert, key)) => {
                let key = rustls_pemfile::private_key(&mut key.as_bytes())
                    .unwrap()
                    .unwrap();
                builder
                    .with_client_auth_cert(parse_certs(cert).unwrap(), key)
                    .unwrap()
            }
            None => builder.with_no_client_auth(),
        };
        config.alpn_protocols = vec![alpn.to_vec()];
        let tcp = TcpStream::connect(addr).await?;
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        TlsConnector::from(Arc::new(config))
            .connect(name, tcp)
            .await
    }

    /// Sends one HTTP/1.1 GET and returns whatever came back before the server closed.
    async fn http1_get(mut tls: TlsStream<TcpStream>, path: &str) -> String {
        let request =
            format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
        if tls.write_all(request.as_bytes()).await.is_err() {
            return String::new();
        }
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = tls.read(&mut buf).await {
            out.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&out).into_owned()
    }

    #[tokio::test]
    async fn identity_alpn_and_shutdown() {
        let dir = temp_dir("serve");
        let pki = ensure_pki(&dir, &TlsOptions::default()).unwrap();
        let stranger_dir = temp_dir("stranger");
        let stranger = ensure_pki(&stranger_dir, &TlsOptions::default()).unwrap();

        let app = Router::new().route("/whoami", get(whoami)).route(
            "/watch",
            get(|| async {
                Body::from_stream(futures::stream::pending::<Result<Bytes, std::io::Error>>())
            }),
        );
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(listener, server_config(&pki, None).unwrap(), app, async {
            let _ = stopped.await;
        }));
        let admin = Some((pki.admin_cert_pem.as_str(), pki.admin_key_pem.as_str()));

        // HTTP/1.1 with the admin certificate, then without any.
        let tls = connect(addr, &pki, admin, b"http/1.1").await.unwrap();
        assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
        let response = http1_get(tls, "/whoami").await;
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        assert!(
            response.ends_with("user=kubernetes-admin groups=system:masters"),
            "{response}"
        );
        let response = http1_get(
            connect(addr, &pki, None, b"http/1.1").await.unwrap(),
            "/whoami",
        )
        .await;
        assert!(response.ends_with("\r\n\r\nanonymous"), "{response}");

        // HTTP/2 negotiated through ALPN.
        let tls = connect(addr, &pki, admin, b"h2").await.unwrap();
        assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
        let (mut sender, conn) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
                .await
                .unwrap();
        tokio::spawn(conn);
        let response = sender
            .send_request(
                Request::get("https://localhost/whoami")
                    .body(Empty::<Bytes>::new())
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(response.version(), hyper::Version::HTTP_2);
        let body = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(body, "user=kubernetes-admin groups=system:masters");

        // A certificate from another CA fails the handshake; the server keeps serving.
        let stranger_cert = Some((
            stranger.admin_cert_pem.as_str(),
            stranger.admin_key_pem.as_str(),
        ));
        if let Ok(tls) = connect(addr, &pki, stranger_cert, b"http/1.1").await {
            assert_eq!(http1_get(tls, "/whoami").await, "");
        }
        let response = http1_get(
            connect(addr, &pki, None, b"http/1.1").await.unwrap(),
            "/whoami",
        )
        .await;
        assert!(response.ends_with("anonymous"), "{response}");

        // A never-ending response does not hold shutdown for longer than the grace period.
        let mut watch = connect(addr, &pki, admin, b"http/1.1").await.unwrap();
        watch
            .write_all(b"GET /watch HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .await
            .unwrap();
        let mut buf = [0u8; 1024];
        let n = watch.read(&mut buf).await.unwrap();
        assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
        let started = std::time::Instant::now();
        stop.send(()).unwrap();
        tokio::time::timeout(SHUTDOWN_GRACE + Duration::from_secs(3), server)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert!(started.elapsed() >= SHUTDOWN_GRACE - Duration::from_millis(100));
        assert!(
            TcpStream::connect(addr).await.is_err(),
            "still accepting after shutdown"
        );

        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::remove_dir_all(&stranger_dir).unwrap();
    }
}
