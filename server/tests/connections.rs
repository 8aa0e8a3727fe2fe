//! Connections as an operator and a hostile client meet them: a stopping node that keeps
//! serving through its shutdown delay, slow and idle connections closed, HTTP/2's stream limit,
//! a rapid-reset flood and an endless header block cut off while other clients are served, and
//! request lines and headers as long as Go's server reads them.

use crate::common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use common::tls_client::{handshake, http2, Hello};
use common::{client_from, TestServer};
use http_body_util::{BodyExt, Full};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test]
async fn a_stopping_node_serves_through_its_shutdown_delay_with_readyz_failing() {
    let mut server = TestServer::start_with(&["--shutdown-delay-duration", "4s"]).await;
    let kill = std::process::Command::new("kill").args(["-TERM", &server.pid().to_string()]).status().unwrap();
    assert!(kill.success());
    let stopped_at = Instant::now();
    tokio::time::sleep(Duration::from_millis(500)).await;

    // A load balancer's check sees the node going; a new client is still served in full.
    let ready = server.get("/readyz").await;
    assert_eq!(ready.status, 500, "{}", ready.text());
    assert!(ready.text().contains("[-]shutdown failed"), "{}", ready.text());
    assert_eq!(server.get("/livez").await.status, 200);
    let fresh = client_from(&server.kubeconfig_path(), false).await.unwrap();
    let created = Api::<ConfigMap>::namespaced(fresh, "default").create(&PostParams::default(), &common::configmap("during-delay", &[])).await;
    assert!(created.is_ok(), "{created:?}");

    let status = server.wait_exit(Duration::from_secs(15)).expect("the node exits after its delay");
    assert!(status.success(), "{status}");
    assert!(stopped_at.elapsed() >= Duration::from_secs(4), "exited after {:?}, before the delay", stopped_at.elapsed());
}

#[tokio::test]
async fn slow_headers_and_idle_connections_are_closed_and_a_quiet_watch_is_not() {
    let server = TestServer::start().await;
    let port = server.port();
    let admin = (std::fs::read_to_string(server.data_dir().join("pki/admin.crt")).unwrap(), std::fs::read_to_string(server.data_dir().join("pki/admin.key")).unwrap());
    let h1 = Hello { alpn: Some(b"http/1.1"), ..Default::default() };
    let h2 = Hello { alpn: Some(b"h2"), client_cert: Some((&admin.0, &admin.1)), ..Default::default() };

    // HTTP/1.1 headers that never end: the connection is closed after 32 s, not before.
    let slow = async {
        let (mut stream, _) = handshake(port, &h1).await.unwrap();
        stream.write_all(b"GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\n").await.unwrap();
        let started = Instant::now();
        let mut buf = [0u8; 512];
        let read = tokio::time::timeout(Duration::from_secs(60), stream.read(&mut buf)).await.expect("the slow client was not cut off");
        let elapsed = started.elapsed();
        assert!(elapsed >= Duration::from_secs(30), "cut off after {elapsed:?}");
        assert!(matches!(read, Ok(0) | Err(_)) || buf.starts_with(b"HTTP/1.1 408"), "{read:?}");
    };

    // HTTP/1.1 kept alive after an answer: closed once the next request's headers are 32 s late.
    let kept_alive = async {
        let (mut stream, _) = handshake(port, &h1).await.unwrap();
        stream.write_all(b"GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").await.unwrap();
        let (mut buf, mut answer) = ([0u8; 4096], Vec::new());
        while !answer.ends_with(b"\r\n\r\nok") {
            let n = stream.read(&mut buf).await.unwrap();
            assert!(n > 0, "{}", String::from_utf8_lossy(&answer));
            answer.extend_from_slice(&buf[..n]);
        }
        assert!(answer.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&answer));
        let started = Instant::now();
        let read = tokio::time::timeout(Duration::from_secs(60), stream.read(&mut buf)).await.expect("the idle connection stayed open");
        let elapsed = started.elapsed();
        assert!(elapsed >= Duration::from_secs(30), "closed after {elapsed:?}");
        assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    };

    // HTTP/2: a connection with nothing open is sent away after 90 s of silence; one that holds
    // a watch nobody writes to stays.
    let idle = async {
        let (stream, _) = handshake(port, &h2).await.unwrap();
        let (mut sender, conn) = hyper::client::conn::http2::handshake(hyper_util::rt::TokioExecutor::new(), hyper_util::rt::TokioIo::new(stream)).await.unwrap();
        let closed = tokio::spawn(async move {
            let _ = conn.await;
            Instant::now()
        });
        let resp = sender.send_request(http::Request::get("https://127.0.0.1/readyz").body(Full::new(Bytes::new())).unwrap()).await.unwrap();
        assert_eq!(resp.status(), 200);
        let _ = resp.into_body().collect().await.unwrap();
        let started = Instant::now();

        let (stream, _) = handshake(port, &h2).await.unwrap();
        let mut watcher = http2(stream).await;
        let watch = watcher
            .send_request(http::Request::get("https://127.0.0.1/api/v1/namespaces/kube-public/configmaps?watch=true&fieldSelector=metadata.name%3Dnobody&timeoutSeconds=600").body(Full::new(Bytes::new())).unwrap())
            .await
            .unwrap();
        assert_eq!(watch.status(), 200);

        let closed_at = tokio::time::timeout(Duration::from_secs(150), closed).await.expect("the idle connection stayed open").unwrap();
        let idle_for = closed_at - started;
        assert!(idle_for >= Duration::from_secs(85) && idle_for <= Duration::from_secs(115), "closed after {idle_for:?} idle");
        // The watch's connection still takes requests.
        watcher.ready().await.expect("the watch's connection was closed");
        let resp = watcher.send_request(http::Request::get("https://127.0.0.1/readyz").body(Full::new(Bytes::new())).unwrap()).await.unwrap();
        assert_eq!(resp.status(), 200);
    };
    tokio::join!(slow, kept_alive, idle);
}

/// HTTP/2 frames as bytes: length, type, flags, stream, payload.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut out = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// Whether the frames in `bytes` include a GOAWAY.
fn goaway(bytes: &[u8]) -> bool {
    frames(bytes).any(|(kind, _)| kind == 0x7)
}

/// The frames in `bytes` (type and payload), as far as they are whole.
fn frames(bytes: &[u8]) -> impl Iterator<Item = (u8, &[u8])> {
    let mut at = 0;
    std::iter::from_fn(move || {
        if at + 9 > bytes.len() {
            return None;
        }
        let len = (usize::from(bytes[at]) << 16) | (usize::from(bytes[at + 1]) << 8) | usize::from(bytes[at + 2]);
        let (kind, payload) = (bytes[at + 3], at + 9);
        let end = (payload + len).min(bytes.len());
        at = payload + len;
        Some((kind, &bytes[payload..end]))
    })
}

/// Whether the frames in `bytes` include a GOAWAY with ENHANCE_YOUR_CALM.
fn calmed(bytes: &[u8]) -> bool {
    frames(bytes).any(|(kind, payload)| kind == 0x7 && payload.len() >= 8 && payload[4..8] == [0, 0, 0, 0xb])
}

#[tokio::test]
async fn http2_streams_are_bounded_and_rapid_reset_and_continuation_floods_are_cut_off() {
    let server = TestServer::start_with(&["--http2-max-streams-per-connection", "7"]).await;
    let port = server.port();
    let h2 = Hello { alpn: Some(b"h2"), ..Default::default() };

    // The limit is announced in the server's SETTINGS.
    let (stream, _) = handshake(port, &h2).await.unwrap();
    let (mut sender, conn) = h2::client::handshake(stream).await.unwrap();
    tokio::spawn(conn);
    let (resp, _) = sender.send_request(http::Request::get("https://127.0.0.1/readyz").body(()).unwrap(), true).unwrap();
    assert_eq!(resp.await.unwrap().status(), 200);
    assert_eq!(sender.current_max_send_streams(), 7);

    // Flooders open streams and reset them at once, connection after connection.
    let flooding = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let mut flooders = Vec::new();
    for _ in 0..2 {
        let flooding = flooding.clone();
        flooders.push(tokio::spawn(async move {
            let (mut calm, mut connections) = (0, 0);
            while flooding.load(std::sync::atomic::Ordering::Relaxed) {
                let Ok((mut stream, _)) = handshake(port, &Hello { alpn: Some(b"h2"), ..Default::default() }).await else { continue };
                connections += 1;
                let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
                out.extend(frame(0x4, 0, 0, &[]));
                // GET / (static table: :method GET, :scheme https, :path /), then RST_STREAM CANCEL.
                for i in 0..500u32 {
                    out.extend(frame(0x1, 0x5, 2 * i + 1, &[0x82, 0x87, 0x84]));
                    out.extend(frame(0x3, 0, 2 * i + 1, &[0, 0, 0, 0x8]));
                }
                let _ = stream.write_all(&out).await;
                let mut got = Vec::new();
                let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut got)).await;
                if calmed(&got) {
                    calm += 1;
                }
            }
            (calm, connections)
        }));
    }

    // Meanwhile another client is served as usual.
    let client = server.client();
    let configmaps: Api<ConfigMap> = Api::namespaced(client, "default");
    let mut took = Vec::new();
    for _ in 0..40 {
        let started = Instant::now();
        configmaps.list(&Default::default()).await.expect("a list during the flood");
        took.push(started.elapsed());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    flooding.store(false, std::sync::atomic::Ordering::Relaxed);
    let mut calm = 0;
    for flooder in flooders {
        let (c, connections) = flooder.await.unwrap();
        assert!(connections > 0);
        calm += c;
    }
    took.sort();
    let median = took[took.len() / 2];
    assert!(calm > 0, "no flooding connection was sent GOAWAY (ENHANCE_YOUR_CALM)");
    assert!(median < Duration::from_millis(500), "lists took {median:?} (median) during the flood");

    // A header block that never ends: CONTINUATION frames after CONTINUATION frames.
    let (mut stream, _) = handshake(port, &Hello { alpn: Some(b"h2"), ..Default::default() }).await.unwrap();
    let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    out.extend(frame(0x4, 0, 0, &[]));
    out.extend(frame(0x1, 0x1, 1, &[0x82, 0x87, 0x84]));
    for _ in 0..20_000 {
        out.extend(frame(0x9, 0, 1, &[0x40, 0x01, b'x', 0x01, b'y']));
    }
    let _ = stream.write_all(&out).await;
    let mut got = Vec::new();
    let ended = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut got)).await;
    assert!(ended.is_ok(), "the server kept reading an endless header block");
    assert!(goaway(&got), "the endless header block was not answered with GOAWAY");
    assert_eq!(server.get("/readyz").await.status, 200);
}

#[tokio::test]
async fn request_lines_and_headers_up_to_the_size_go_takes_are_served() {
    let server = TestServer::start().await;
    // About 47 KB of label selector: past HTTP/2's common 16 KiB header list limit, as kubectl
    // sends it (over HTTP/2).
    let selector = format!("a in ({})", (0..8000).map(|i| format!("v{i}")).collect::<Vec<_>>().join(","));
    let out = server.kubectl(&["get", "configmaps", "-l", &selector]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // And over HTTP/1.1: a 200 KiB header beside a long request line.
    let h1 = common::tls_client::Hello { alpn: Some(b"http/1.1"), ..Default::default() };
    let (stream, _) = handshake(server.port(), &h1).await.unwrap();
    let path = format!("/readyz?{}", "x".repeat(60_000));
    let padding = "p".repeat(200 * 1024);
    let (status, _) = common::tls_client::http1(stream, "GET", &path, &[("x-padding", &padding)], "").await.unwrap();
    assert_eq!(status, 200);
}
