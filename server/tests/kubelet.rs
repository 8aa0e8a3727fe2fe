//! The subresources that reach a kubelet: a real HTTPS server plays a node's kubelet (its own
//! CA, verifying this server's kubelet client certificate) with `/containerLogs` and a
//! WebSocket `/exec`, and kubectl's `logs` and `exec`, the node's proxy, the pod's proxy and a
//! Service's proxy go through this server to it (or to the pod's own server).

use crate::common;

use std::sync::{Arc, Mutex};

use base64::Engine;
use bytes::Bytes;
use common::webhook_server::tls_server_config;
use common::TestServer;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::json;
use tokio::io::AsyncWriteExt;

/// What the kubelet saw: each request's path and query, and whether its caller presented a
/// client certificate of the kubelet client CA.
type Seen = Arc<Mutex<Vec<(String, bool)>>>;

/// A kubelet on a free port of `ip`: its CA (PEM), port and what it saw.
async fn kubelet(client_ca: &str, ip: &str) -> (String, u16, Seen) {
    let (config, ca) = tls_server_config("kubelet-ca", &[], Some(client_ca));
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind((ip, 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen: Seen = Arc::default();
    let s = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { continue };
            let (acceptor, s) = (acceptor.clone(), s.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else { return };
                let authenticated = tls.get_ref().1.peer_certificates().is_some_and(|c| !c.is_empty());
                let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    s.lock().unwrap().push((req.uri().to_string(), authenticated));
                    async move { Ok::<_, std::convert::Infallible>(answer(req)) }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new()).serve_connection_with_upgrades(TokioIo::new(tls), service).await;
            });
        }
    });
    (ca, port, seen)
}

/// An address of this host other than loopback, as a pod's IP must be for the API server to
/// proxy to it (kube-apiserver refuses loopback and link-local addresses).
fn host_address() -> String {
    let out = std::process::Command::new("ip").args(["-o", "-4", "addr", "show", "scope", "global"]).output().expect("run ip");
    let text = String::from_utf8_lossy(&out.stdout);
    let cidr = text.split_whitespace().skip_while(|w| *w != "inet").nth(1).expect("this host has a global IPv4 address");
    cidr.split('/').next().unwrap().to_string()
}

/// `/containerLogs/...` answers two lines; `/exec/...` upgrades to a WebSocket of Kubernetes'
/// channel protocol and writes `hi` to stdout, then a successful status.
fn answer(mut req: hyper::Request<hyper::body::Incoming>) -> hyper::Response<Full<Bytes>> {
    let path = req.uri().path().to_string();
    if path.starts_with("/containerLogs/kubelet/web/app") {
        return hyper::Response::new(Full::new(Bytes::from_static(b"line one\nline two\n")));
    }
    let key = req.headers().get("sec-websocket-key").and_then(|k| k.to_str().ok()).map(str::to_string);
    let offered = req.headers().get("sec-websocket-protocol").and_then(|p| p.to_str().ok()).unwrap_or_default().to_string();
    let (true, Some(key)) = (path.starts_with("/exec/kubelet/web/app"), key) else {
        return hyper::Response::builder().status(404).body(Full::new(Bytes::new())).unwrap();
    };
    let protocol = offered.split(',').map(str::trim).find(|p| *p == "v5.channel.k8s.io").unwrap_or("v4.channel.k8s.io").to_string();
    let upgrade = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        let Ok(io) = upgrade.await else { return };
        let mut io = TokioIo::new(io);
        let mut frames = Vec::new();
        frames.extend(frame(0x2, &[&[1u8][..], b"hi\n"].concat()));
        frames.extend(frame(0x2, &[&[3u8][..], br#"{"metadata":{},"status":"Success"}"#].concat()));
        frames.extend(frame(0x8, &1000u16.to_be_bytes()));
        let _ = io.write_all(&frames).await;
        let _ = io.flush().await;
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    });
    let digest = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, format!("{key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11").as_bytes());
    hyper::Response::builder()
        .status(101)
        .header("connection", "Upgrade")
        .header("upgrade", "websocket")
        .header("sec-websocket-accept", base64::engine::general_purpose::STANDARD.encode(digest.as_ref()))
        .header("sec-websocket-protocol", protocol)
        .body(Full::new(Bytes::new()))
        .unwrap()
}

/// One unmasked WebSocket frame (a server's) of `opcode` carrying `payload`.
fn frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![0x80 | opcode];
    match payload.len() {
        n if n < 126 => out.push(n as u8),
        n => {
            out.push(126);
            out.extend((n as u16).to_be_bytes());
        }
    }
    out.extend(payload);
    out
}

/// A client certificate (and key) of a CA of its own, and that CA (all PEM).
fn client_certificate(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf, String) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(rcgen::DnType::CommonName, "kubelet-client-ca");
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::from_ca_cert_pem(&ca.pem(), ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(rcgen::DnType::CommonName, "kube-apiserver-kubelet-client");
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let cert = params.signed_by(&key, &issuer).unwrap();
    let (cert_path, key_path) = (dir.join("kubelet-client.crt"), dir.join("kubelet-client.key"));
    std::fs::write(&cert_path, cert.pem()).unwrap();
    std::fs::write(&key_path, key.serialize_pem()).unwrap();
    (cert_path, key_path, ca.pem())
}

// kubectl blocks its thread while the kubelet, on this runtime, answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_logs_and_exec_reach_the_pods_kubelet() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key, client_ca) = client_certificate(dir.path());
    let (kubelet_ca, port, seen) = kubelet(&client_ca, "127.0.0.1").await;
    // The pod's own server (what its proxy reaches), on an address a pod may have.
    let pod_ip = host_address();
    let (_, pod_port, _) = kubelet(&client_ca, &pod_ip).await;
    let ca_path = dir.path().join("kubelet-ca.crt");
    std::fs::write(&ca_path, &kubelet_ca).unwrap();
    let server = TestServer::start_with(&[
        "--kubelet-client-certificate",
        cert.to_str().unwrap(),
        "--kubelet-client-key",
        key.to_str().unwrap(),
        "--kubelet-certificate-authority",
        ca_path.to_str().unwrap(),
    ])
    .await;
    let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-a"},
        "status": {"addresses": [{"type": "InternalIP", "address": "127.0.0.1"}], "daemonEndpoints": {"kubeletEndpoint": {"Port": port}}}});
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "kubelet"},
        "spec": {"nodeName": "node-a", "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}]}});
    let unplaced = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pending", "namespace": "kubelet"},
        "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}, {"name": "side", "image": "registry.k8s.io/pause:3.10"}]}});
    server.kubectl_ok(&["create", "namespace", "kubelet"]);
    for obj in [node, pod, unplaced] {
        let path = dir.path().join("obj.json");
        std::fs::write(&path, obj.to_string()).unwrap();
        server.kubectl_ok(&["create", "-f", path.to_str().unwrap()]);
    }

    assert_eq!(server.kubectl_ok(&["logs", "-n", "kubelet", "web", "--tail", "2"]), "line one\nline two\n");
    let (path, authenticated) = seen.lock().unwrap().last().cloned().unwrap();
    assert_eq!(path, "/containerLogs/kubelet/web/app?tailLines=2");
    assert!(authenticated, "the kubelet saw no client certificate");

    assert_eq!(server.kubectl_ok(&["exec", "-n", "kubelet", "web", "--", "echo", "hi"]), "hi\n");
    let (path, _) = seen.lock().unwrap().last().cloned().unwrap();
    assert!(path.starts_with("/exec/kubelet/web/app?") && path.contains("command=echo&command=hi"), "{path}");

    // The node's proxy reaches any path of its kubelet.
    let reply = server.get("/api/v1/nodes/node-a/proxy/containerLogs/kubelet/web/app").await;
    assert_eq!((reply.status, reply.text()), (200, "line one\nline two\n".to_string()));

    // A pod's proxy reaches its IP, here over HTTPS on the port the name gives; never a
    // loopback address.
    let status = |ip: &str| json!({"status": {"podIP": ip, "podIPs": [{"ip": ip}]}}).to_string();
    server.kubectl_ok(&["patch", "pod", "web", "-n", "kubelet", "--subresource=status", "--type=merge", "-p", &status("127.0.0.1")]);
    let pod_proxy = format!("/api/v1/namespaces/kubelet/pods/https:web:{pod_port}/proxy/containerLogs/kubelet/web/app");
    assert_eq!(server.get(&pod_proxy).await.expect_status(400, "BadRequest")["message"], "address not allowed");
    server.kubectl_ok(&["patch", "pod", "web", "-n", "kubelet", "--subresource=status", "--type=merge", "-p", &status(&pod_ip)]);
    let reply = server.get(&pod_proxy).await;
    assert_eq!((reply.status, reply.text()), (200, "line one\nline two\n".to_string()));
    let reply = server.get("/api/v1/namespaces/kubelet/pods/https:web:1:2/proxy/").await;
    assert_eq!(reply.expect_status(400, "BadRequest")["message"], "invalid pod request \"https:web:1:2\"");

    // A Service's proxy reaches one of its endpoints that is a pod with that IP, by the
    // Service port's number or name.
    let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "kubelet"},
        "spec": {"ports": [{"name": "tls", "port": 443}]}});
    let endpoints = json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web", "namespace": "kubelet"},
        "subsets": [{"addresses": [{"ip": pod_ip, "targetRef": {"kind": "Pod", "namespace": "kubelet", "name": "web"}}], "ports": [{"name": "tls", "port": pod_port}]}]});
    let path = dir.path().join("obj.json");
    std::fs::write(&path, service.to_string()).unwrap();
    server.kubectl_ok(&["create", "-f", path.to_str().unwrap()]);
    let reply = server.get("/api/v1/namespaces/kubelet/services/https:web:443/proxy/containerLogs/kubelet/web/app").await;
    assert_eq!(reply.expect_status(404, "NotFound")["message"], "endpoints \"web\" not found");
    std::fs::write(&path, endpoints.to_string()).unwrap();
    server.kubectl_ok(&["create", "-f", path.to_str().unwrap()]);
    for target in ["https:web:443", "https:web:tls"] {
        let reply = server.get(&format!("/api/v1/namespaces/kubelet/services/{target}/proxy/containerLogs/kubelet/web/app")).await;
        assert_eq!((reply.status, reply.text()), (200, "line one\nline two\n".to_string()), "{target}");
    }
    let reply = server.get("/api/v1/namespaces/kubelet/services/https:web:80/proxy/").await;
    assert_eq!(reply.expect_status(503, "ServiceUnavailable")["message"], "no service port 80 found for service \"web\"");
    let reply = server.get("/api/v1/namespaces/kubelet/services/https:web:other/proxy/").await;
    assert_eq!(reply.expect_status(503, "ServiceUnavailable")["message"], "no endpoints available for service \"https:web:other\"");

    // Kubernetes' refusals: a pod on no node, a container not named when there are several,
    // a container the pod does not have.
    let out = server.kubectl(&["logs", "-n", "kubelet", "pending", "-c", "app"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("pod pending does not have a host assigned"), "{out:?}");
    let reply = server.get("/api/v1/namespaces/kubelet/pods/web/log?container=db").await;
    assert_eq!(reply.expect_status(400, "BadRequest")["message"], "container db is not valid for pod web");
}
