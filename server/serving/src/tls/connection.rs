//! One client connection: the TLS handshake, the client's identity on each request, HTTP/1.1 or
//! HTTP/2 until the client leaves, and the ways the server ends it: shutdown, an idle connection
//! (no request open and nothing sent either way for 90 s, Go's `IdleTimeout`), and
//! `--goaway-chance` (an HTTP/2 request answered, then GOAWAY, so that the client reconnects and
//! a load balancer may send it elsewhere).

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper::Request;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{watch, Notify};
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt;

use super::config::Tls;

/// A client that has not finished the TLS handshake by then is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// A connection with no request open and no bytes either way this long is closed.
const IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// How often a connection looks whether it has been idle (it closes within this much after the
/// timeout).
const IDLE_CHECK: Duration = Duration::from_secs(10);

/// What every connection shares.
pub struct Connection {
    builder: Builder<TokioExecutor>,
    app: Router,
    goaway_chance: f64,
}

impl Connection {
    pub fn new(builder: Builder<TokioExecutor>, app: Router, goaway_chance: f64) -> Connection {
        Connection { builder, app, goaway_chance }
    }
}

/// A connection's activity: bytes moved, and requests whose response has not ended.
#[derive(Default)]
struct Activity {
    io: AtomicU64,
    open: AtomicUsize,
    goaway: Notify,
}

/// Serves one connection until the client leaves, it idles, a GOAWAY is drawn, or `stop` fires.
pub async fn connection(tcp: TcpStream, peer: SocketAddr, tls: Arc<Tls>, shared: Arc<Connection>, mut stop: watch::Receiver<()>) {
    let _ = tcp.set_nodelay(true);
    // A handshake under way when shutdown begins is finished: the request it carries is served.
    let stream = match tokio::time::timeout(HANDSHAKE_TIMEOUT, TlsAcceptor::from(tls.config.clone()).accept(tcp)).await {
        Ok(Ok(stream)) => stream,
        Ok(Err(err)) => {
            tracing::debug!(%peer, error = %err, "TLS handshake failed");
            return;
        }
        Err(_) => {
            tracing::debug!(%peer, "TLS handshake timed out");
            return;
        }
    };
    let (identity, proxy) = tls.identities(stream.get_ref().1.peer_certificates());
    let activity = Arc::new(Activity::default());
    let counted = activity.clone();
    let (app, chance) = (shared.app.clone(), shared.goaway_chance);
    let service = tower::service_fn(move |mut req: Request<Incoming>| {
        req.extensions_mut().insert(ConnectInfo(peer));
        if let Some(identity) = &identity {
            req.extensions_mut().insert(identity.clone());
        }
        if let Some(proxy) = &proxy {
            req.extensions_mut().insert(proxy.clone());
        }
        if chance > 0.0 && req.version() == http::Version::HTTP_2 && rand::random::<f64>() < chance {
            counted.goaway.notify_one();
        }
        // Open from here until the response body is done with, or the request is dropped.
        let open = Open::new(counted.clone());
        let answer = app.clone().oneshot(req);
        async move {
            let resp = answer.await?;
            Ok::<_, std::convert::Infallible>(resp.map(|body| crate::body::holding(body, open)))
        }
    });
    let io = TokioIo::new(Counted { inner: stream, activity: activity.clone() });
    let conn = shared.builder.serve_connection_with_upgrades(io, TowerToHyperService::new(service));
    tokio::pin!(conn);
    let mut idle_checks = tokio::time::interval_at(tokio::time::Instant::now() + IDLE_CHECK, IDLE_CHECK);
    let (mut last_io, mut quiet) = (0, 0);
    let result = loop {
        tokio::select! {
            result = conn.as_mut() => break result,
            _ = stop.changed() => {}
            () = activity.goaway.notified() => {}
            _ = idle_checks.tick() => {
                let io = activity.io.load(Ordering::Relaxed);
                quiet = if io == last_io && activity.open.load(Ordering::Relaxed) == 0 { quiet + 1 } else { 0 };
                last_io = io;
                if quiet * IDLE_CHECK < IDLE_TIMEOUT {
                    continue;
                }
            }
        }
        // Closed once the requests already taken are answered.
        conn.as_mut().graceful_shutdown();
        break conn.as_mut().await;
    };
    if let Err(err) = result {
        tracing::debug!(%peer, error = %err, "connection ended with an error");
    }
}

/// The connection's stream, counting the reads and writes that move bytes.
struct Counted<S> {
    inner: S,
    activity: Arc<Activity>,
}

impl<S: AsyncRead + Unpin> AsyncRead for Counted<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let poll = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.io.fetch_add(1, Ordering::Relaxed);
        }
        poll
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Counted<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(poll, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.io.fetch_add(1, Ordering::Relaxed);
        }
        poll
    }

    fn poll_write_vectored(mut self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[std::io::IoSlice<'_>]) -> Poll<std::io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(poll, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.io.fetch_add(1, Ordering::Relaxed);
        }
        poll
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// One request counted as open for as long as this lives.
struct Open(Arc<Activity>);

impl Open {
    fn new(activity: Arc<Activity>) -> Open {
        activity.open.fetch_add(1, Ordering::Relaxed);
        Open(activity)
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::Relaxed);
    }
}
