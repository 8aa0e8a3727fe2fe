//! TLS as an operator configures it: the serving certificate, the client CA and the
//! request-header CA replaced on disk under traffic and taken up without a restart;
//! `--tls-min-version`, `--tls-cipher-suites` and `--tls-sni-cert-key`.

use crate::common;

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::tls_client::{handshake, whoami, Hello, TestCa};
use common::TestServer;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use rustls::crypto::ring::cipher_suite;

/// Writes `pem` to `path` as an operator's tooling does: a new file renamed over the old.
fn replace(path: &Path, pem: &str) {
    let tmp = path.with_extension("new");
    std::fs::write(&tmp, pem).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// Until `check` holds, for at most 10 s.
async fn until(what: &str, mut check: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !check().await {
        assert!(Instant::now() < deadline, "{what}: not within 10 s");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn certificates_and_cas_rotate_under_traffic_without_a_restart() {
    let cluster_ca = TestCa::new("cluster-ca");
    let (client_a, client_b) = (TestCa::new("client-ca-a"), TestCa::new("client-ca-b"));
    let (proxy_a, proxy_b) = (TestCa::new("proxy-ca-a"), TestCa::new("proxy-ca-b"));
    let mut server = TestServer::new(&[]);
    let files = server.dir().to_path_buf();
    // The cluster CA is the operator's: the admin's certificate and the admin kubeconfig's trust come from it.
    std::fs::create_dir_all(server.data_dir().join("pki")).unwrap();
    std::fs::write(server.data_dir().join("pki/ca.crt"), &cluster_ca.cert_pem).unwrap();
    std::fs::write(server.data_dir().join("pki/ca.key"), &cluster_ca.key_pem).unwrap();
    let (serving_crt, serving_key, client_ca, proxy_ca) = (files.join("serving.crt"), files.join("serving.key"), files.join("client-ca.crt"), files.join("proxy-ca.crt"));
    let (cert, key) = cluster_ca.serving(&["127.0.0.1", "localhost"]);
    std::fs::write(&serving_crt, &cert).unwrap();
    std::fs::write(&serving_key, &key).unwrap();
    std::fs::write(&client_ca, format!("{}{}", cluster_ca.cert_pem, client_a.cert_pem)).unwrap();
    std::fs::write(&proxy_ca, &proxy_a.cert_pem).unwrap();
    for (flag, path) in [("--tls-cert-file", &serving_crt), ("--tls-private-key-file", &serving_key), ("--client-ca-file", &client_ca), ("--requestheader-client-ca-file", &proxy_ca)] {
        server.set_flag(flag, path.to_str().unwrap());
    }
    server.set_flag("--requestheader-username-headers", "X-Remote-User");
    server.launch();
    server.wait_ready().await.unwrap();
    let port = server.port();
    let pid = server.pid();

    // Traffic throughout: the admin's client on its open connection, and new connections.
    let running = Arc::new(AtomicBool::new(true));
    let (served, failed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let traffic = {
        let (running, served, failed, kubeconfig) = (running.clone(), served.clone(), failed.clone(), server.kubeconfig_path());
        let open = server.client();
        tokio::spawn(async move {
            while running.load(Ordering::Relaxed) {
                let fresh = common::client_from(&kubeconfig, false).await.unwrap();
                for client in [open.clone(), fresh] {
                    match Api::<ConfigMap>::namespaced(client, "default").list(&Default::default()).await {
                        Ok(_) => served.fetch_add(1, Ordering::Relaxed),
                        Err(e) => {
                            eprintln!("failed during rotation: {e}");
                            failed.fetch_add(1, Ordering::Relaxed)
                        }
                    };
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };

    let plain = Hello::default();
    let (_, first) = handshake(port, &plain).await.unwrap();
    let alice = client_a.client("alice");
    let bob = client_b.client("bob");
    let as_alice = Hello { client_cert: Some((&alice.0, &alice.1)), ..Default::default() };
    let as_bob = Hello { client_cert: Some((&bob.0, &bob.1)), ..Default::default() };
    assert_eq!(whoami(port, &as_alice, &[]).await.unwrap(), "alice");
    assert!(whoami(port, &as_bob, &[]).await.is_err(), "a client CA not yet trusted verified bob");
    let proxy_one = proxy_a.client("front-proxy");
    let proxy_two = proxy_b.client("front-proxy");
    let via_proxy_one = Hello { client_cert: Some((&proxy_one.0, &proxy_one.1)), ..Default::default() };
    let via_proxy_two = Hello { client_cert: Some((&proxy_two.0, &proxy_two.1)), ..Default::default() };
    assert_eq!(whoami(port, &via_proxy_one, &[("x-remote-user", "carol")]).await.unwrap(), "carol");

    // A new serving certificate: new connections are shown it.
    let (cert, key) = cluster_ca.serving(&["127.0.0.1", "localhost"]);
    replace(&serving_key, &key);
    replace(&serving_crt, &cert);
    until("the new serving certificate", async || handshake(port, &plain).await.unwrap().1 != first).await;
    let (_, now) = handshake(port, &plain).await.unwrap();
    assert_eq!(now.as_ref(), rustls_pemfile::certs(&mut cert.as_bytes()).next().unwrap().unwrap().as_ref());

    // The client CA: bob's CA in, alice's out.
    replace(&client_ca, &format!("{}{}", cluster_ca.cert_pem, client_b.cert_pem));
    until("bob verified by the new client CA", async || whoami(port, &as_bob, &[]).await.is_ok_and(|u| u == "bob")).await;
    assert!(whoami(port, &as_alice, &[]).await.is_err(), "alice's CA is no longer trusted");

    // The request-header CA.
    replace(&proxy_ca, &proxy_b.cert_pem);
    until("the new proxy CA", async || whoami(port, &via_proxy_two, &[("x-remote-user", "dave")]).await.is_ok_and(|u| u == "dave")).await;
    assert_ne!(whoami(port, &via_proxy_one, &[("x-remote-user", "carol")]).await.ok().as_deref(), Some("carol"), "the old proxy CA still vouches");

    // A key that does not fit its certificate is refused; what was in force stays.
    replace(&serving_key, &cluster_ca.serving(&["127.0.0.1"]).1);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(handshake(port, &plain).await.unwrap().1, now);
    assert!(server.log().contains("changed certificates not loaded"), "{}", server.log());

    running.store(false, Ordering::Relaxed);
    traffic.await.unwrap();
    assert!(served.load(Ordering::Relaxed) > 10, "too little traffic");
    assert_eq!(failed.load(Ordering::Relaxed), 0, "requests failed during the rotation");
    assert_eq!(server.pid(), pid, "the server restarted");
}

#[tokio::test]
async fn tls_versions_suites_and_names_are_as_the_flags_say() {
    let sni_ca = TestCa::new("sni-ca");
    let files = tempfile::tempdir().unwrap();
    let (named, wildcard) = (sni_ca.serving(&["api.example.test"]), sni_ca.serving(&["other.example.test"]));
    for (name, pem) in [("named.crt", &named.0), ("named.key", &named.1), ("wild.crt", &wildcard.0), ("wild.key", &wildcard.1)] {
        std::fs::write(files.path().join(name), pem).unwrap();
    }
    let path = |name: &str| files.path().join(name).to_str().unwrap().to_string();
    let server = TestServer::start_with(&[
        "--tls-cipher-suites",
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        "--tls-sni-cert-key",
        &format!("{},{}", path("named.crt"), path("named.key")),
        "--tls-sni-cert-key",
        &format!("{},{}:*.apps.example.test", path("wild.crt"), path("wild.key")),
    ])
    .await;
    let port = server.port();
    let leaf = |pem: &str| rustls_pemfile::certs(&mut pem.as_bytes()).next().unwrap().unwrap();
    let tls12 = &[&rustls::version::TLS12][..];

    // TLS 1.2 with the suite allowed, not with another.
    let allowed = Hello { versions: Some(tls12), suites: Some(vec![cipher_suite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]), ..Default::default() };
    assert!(handshake(port, &allowed).await.is_ok());
    let other = Hello { versions: Some(tls12), suites: Some(vec![cipher_suite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384]), ..Default::default() };
    assert!(handshake(port, &other).await.is_err(), "a TLS 1.2 suite left out was negotiated");

    // Certificates by the name asked for: the certificate's own name, a wildcard pattern, else the default.
    let by_name = |name| Hello { server_name: Some(name), ..Default::default() };
    assert_eq!(handshake(port, &by_name("api.example.test")).await.unwrap().1, leaf(&named.0));
    assert_eq!(handshake(port, &by_name("web.apps.example.test")).await.unwrap().1, leaf(&wildcard.0));
    let default = handshake(port, &by_name("localhost")).await.unwrap().1;
    assert_eq!(default, leaf(&std::fs::read_to_string(server.data_dir().join("pki/apiserver.crt")).unwrap()));
    assert_ne!(default, leaf(&wildcard.0));

    // TLS 1.3 only: a TLS 1.2 client is refused.
    let modern = TestServer::start_with(&["--tls-min-version", "VersionTLS13"]).await;
    assert!(handshake(modern.port(), &Hello { versions: Some(tls12), ..Default::default() }).await.is_err());
    assert!(handshake(modern.port(), &Hello::default()).await.is_ok());

    // Names Kubernetes does not know, and suites this server does not have, stop the start.
    for (flag, value, says) in [
        ("--tls-min-version", "VersionTLS9", "unknown tls version \"VersionTLS9\""),
        ("--tls-cipher-suites", "TLS_NOPE", "Cipher suite TLS_NOPE not supported or doesn't exist"),
        ("--tls-cipher-suites", "TLS_RSA_WITH_RC4_128_SHA", "not implemented by this server"),
        ("--goaway-chance", "0.5", "--goaway-chance can not be less than 0 or greater than 0.02"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_apiserver"))
            .args(["--data-dir", dir.path().to_str().unwrap(), "--secure-port", "0", flag, value])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(says), "{flag} {value}: {stderr}");
    }
}
