//! The HTTPS listener: accepts connections with the TLS configuration in force, serves each
//! ([`super::connection`]) and shuts down as kube-apiserver does: on the signal `/readyz` fails
//! at once (the caller's part), new connections are still served for `--shutdown-delay-duration`
//! so that load balancers notice, then the listener closes and open connections are asked to
//! close (HTTP/2 GOAWAY, HTTP/1.1 close after the current response); those still open a few
//! seconds later are dropped.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::connection::{connection, Connection};
use super::reload::DynamicTls;

/// After the listener closes, open requests (watches included) get this long to finish.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// Pause after a failed `accept` (e.g. out of file descriptors) before trying again.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);
/// An HTTP/1.1 client has this long to send a request's headers, counted from the end of the
/// previous response on a kept-alive connection (kube-apiserver's `ReadHeaderTimeout`).
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(32);
/// A request line and headers of up to a mebibyte, as Go's server (`MaxHeaderBytes`) takes them,
/// in HTTP/1.1 and HTTP/2 alike. (A request target longer than 64 KiB is still refused: the HTTP
/// library holds it in a type that cannot be longer.)
const MAX_HEADER_BYTES: usize = 1 << 20;
/// HTTP/2 frames and per-stream receive windows of 256 KiB, as kube-apiserver sizes them (most
/// objects fit one frame).
const HTTP2_FRAME: u32 = 256 * 1024;
/// Streams reset by the client before the server took them, at once, beyond which the client is
/// sent GOAWAY (ENHANCE_YOUR_CALM): the rapid-reset attack (CVE-2023-44487).
const HTTP2_PENDING_RESETS: usize = 20;

/// How connections are served: kube-apiserver's serving flags.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// `--shutdown-delay-duration`.
    pub shutdown_delay: Duration,
    /// `--http2-max-streams-per-connection` (0: 100, as kube-apiserver).
    pub http2_max_streams: u32,
    /// `--goaway-chance`.
    pub goaway_chance: f64,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions { shutdown_delay: Duration::ZERO, http2_max_streams: 0, goaway_chance: 0.0 }
    }
}

fn builder(options: &ServeOptions) -> Builder<TokioExecutor> {
    let streams = match options.http2_max_streams {
        0 => 100,
        n => n,
    };
    let mut builder = Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new()).header_read_timeout(HEADER_READ_TIMEOUT).max_buf_size(MAX_HEADER_BYTES);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(streams)
        .max_frame_size(HTTP2_FRAME)
        .initial_stream_window_size(HTTP2_FRAME)
        .initial_connection_window_size(HTTP2_FRAME.saturating_mul(streams))
        .max_pending_accept_reset_streams(HTTP2_PENDING_RESETS)
        .max_header_list_size(MAX_HEADER_BYTES as u32);
    builder
}

/// Serves `app` over TLS on `listener` until `shutdown` resolves and the shutdown delay has
/// passed. Each request carries `ConnectInfo<SocketAddr>` and, when the client presented a
/// verified certificate naming a user, a `ClientIdentity`.
pub async fn serve(
    listener: TcpListener,
    tls: Arc<DynamicTls>,
    app: Router,
    options: ServeOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let shared = Arc::new(Connection::new(builder(&options), app, options.goaway_chance));
    let (stop_tx, stop_rx) = watch::channel(());
    let mut conns = JoinSet::new();
    let stop_accepting = async move {
        shutdown.await;
        tokio::time::sleep(options.shutdown_delay).await;
    };
    tokio::pin!(stop_accepting);
    loop {
        let (tcp, peer) = tokio::select! {
            () = &mut stop_accepting => break,
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
        conns.spawn(connection(tcp, peer, tls.current(), shared.clone(), stop_rx.clone()));
    }
    drop(listener);
    stop_tx.send_replace(());
    let drained = tokio::time::timeout(SHUTDOWN_GRACE, async {
        while conns.join_next().await.is_some() {}
    });
    if drained.await.is_err() {
        tracing::info!(open = conns.len(), "closing connections still open after the shutdown grace period");
        conns.shutdown().await;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;
    use crate::tls::certs::{ensure_pki, parse_certs, tests::temp_dir, Pki, TlsOptions};
    use hyper::Request;
    use hyper_util::rt::TokioIo;
    use tokio::net::TcpStream;
    use access::authn::x509::ClientIdentity;
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
        let tls = TlsOptions::default().sources(&dir, None, Vec::new()).load(&Default::default()).unwrap();
        let server = tokio::spawn(serve(listener, DynamicTls::fixed(tls), app, ServeOptions::default(), async {
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
