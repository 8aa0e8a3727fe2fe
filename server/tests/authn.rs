//! Authentication against the real binary: static bearer tokens with kubectl (`auth whoami`),
//! a token no method accepts, anonymous access on and off, TokenReview, and a malformed token
//! file stopping the server.

use crate::common;

use std::path::{Path, PathBuf};

use common::TestServer;
use serde_json::json;

fn token_file(dir: &Path) -> PathBuf {
    let path = dir.join("tokens.csv");
    std::fs::write(&path, "s3cret-alice,alice,uid-alice,\"dev,ops\"\ns3cret-bob,bob,uid-bob\n").unwrap();
    path
}

#[tokio::test(flavor = "multi_thread")]
async fn static_tokens_identify_their_users() {
    let files = tempfile::tempdir().unwrap();
    let tokens = token_file(files.path());
    let s = TestServer::start_with(&["--token-auth-file", tokens.to_str().unwrap()]).await;

    let alice = s.token_kubeconfig("alice", "s3cret-alice");
    let out = s.kubectl_as(&alice, &["auth", "whoami"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("alice") && text.contains("uid-alice") && text.contains("[dev ops system:authenticated]"), "{text}");
    // Authenticated is not authorized: RBAC decides what alice may do.
    let out = s.kubectl_as(&alice, &["get", "secrets"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("User \"alice\" cannot list resource \"secrets\""), "{err}");

    // A token no method knows is 401, although anonymous access is on.
    let stranger = s.token_kubeconfig("stranger", "not-a-token");
    let out = s.kubectl_as(&stranger, &["auth", "whoami"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("Unauthorized"), "{err}");
    let anonymous = s.anonymous_client().await;
    let version = common::send(&anonymous, http::Request::get("/version").body(vec![]).unwrap()).await;
    assert_eq!(version.status, 200);

    // TokenReview answers for a token, without acting as it.
    let review = |token: &str| {
        let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}});
        http::Request::post("/apis/authentication.k8s.io/v1/tokenreviews").header("content-type", "application/json").body(body.to_string().into_bytes()).unwrap()
    };
    let answer = s.request(review("s3cret-bob")).await;
    assert_eq!(answer.status, 201, "{}", answer.text());
    let status = &answer.json()["status"];
    assert_eq!(status["authenticated"], true);
    assert_eq!(status["user"], json!({"username": "bob", "uid": "uid-bob", "groups": ["system:authenticated"]}));
    let answer = s.request(review("wrong")).await.json();
    assert!(answer["status"]["authenticated"].is_null(), "{answer}");
    s.request(review("")).await.expect_status(400, "BadRequest");
    // Bob may not ask: creating token reviews needs its own permission.
    let bob = s.client_for(&s.token_kubeconfig("bob", "s3cret-bob")).await;
    common::send(&bob, review("s3cret-alice")).await.expect_status(403, "Forbidden");
}

#[tokio::test(flavor = "multi_thread")]
async fn anonymous_access_can_be_turned_off() {
    let s = TestServer::start_with(&["--anonymous-auth=false"]).await;
    let anonymous = s.anonymous_client().await;
    let reply = common::send(&anonymous, http::Request::get("/version").body(vec![]).unwrap()).await;
    reply.expect_status(401, "Unauthorized");
    // The admin's certificate still works.
    assert_eq!(s.get("/version").await.status, 200);
}

#[test]
fn a_malformed_token_file_stops_the_server_naming_the_line() {
    let files = tempfile::tempdir().unwrap();
    let path = files.path().join("tokens.csv");
    std::fs::write(&path, "good,alice,1\nbad,bob\n").unwrap();
    let mut s = TestServer::new(&["--token-auth-file", path.to_str().unwrap()]);
    let err = tokio::runtime::Runtime::new().unwrap().block_on(async {
        s.launch();
        s.wait_ready().await.unwrap_err()
    });
    assert!(err.contains("line 2: must have at least 3 columns (token, user name, user uid), found 2"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_webhook_vouches_for_tokens_and_is_cached() {
    use common::webhook_server::WebhookServer;
    use std::sync::Arc;
    use std::time::Duration;
    let webhook = WebhookServer::start(Arc::new(|review: &serde_json::Value| {
        let answer = match review["spec"]["token"].as_str() {
            Some("carol-token") => json!({"authenticated": true, "user": {"username": "carol", "uid": "c-1", "groups": ["ops"], "extra": {"team": ["blue"]}}}),
            _ => json!({"authenticated": false, "error": "unknown token"}),
        };
        (Duration::ZERO, 200, json!({"apiVersion": review["apiVersion"], "kind": "TokenReview", "status": answer}))
    }))
    .await;
    let files = tempfile::tempdir().unwrap();
    let config = files.path().join("webhook.kubeconfig");
    webhook.write_kubeconfig(&config);
    let s = TestServer::start_with(&["--authentication-token-webhook-config-file", config.to_str().unwrap(), "--authentication-token-webhook-version", "v1"]).await;

    let carol = s.token_kubeconfig("carol", "carol-token");
    let out = s.kubectl_as(&carol, &["auth", "whoami", "-o", "json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let who: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let info = &who["status"]["userInfo"];
    assert_eq!((info["username"].as_str(), info["uid"].as_str()), (Some("carol"), Some("c-1")));
    assert_eq!(info["groups"], json!(["ops", "system:authenticated"]));
    assert_eq!(info["extra"]["team"], json!(["blue"]));
    let sent = webhook.received();
    assert_eq!(sent[0]["apiVersion"], "authentication.k8s.io/v1");
    assert_eq!(sent[0]["spec"]["audiences"], json!(["https://kubernetes.default.svc.cluster.local"]));
    // Asked again, the answer comes from the cache.
    assert!(s.kubectl_as(&carol, &["auth", "whoami"]).status.success());
    assert_eq!(webhook.received().len(), 1, "the webhook was asked again");

    let mallory = s.token_kubeconfig("mallory", "guess");
    let out = s.kubectl_as(&mallory, &["auth", "whoami"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("Unauthorized"), "{}", String::from_utf8_lossy(&out.stderr));
    // TokenReview relays the webhook's reason.
    let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": "guess"}});
    let review = s.request(http::Request::post("/apis/authentication.k8s.io/v1/tokenreviews").header("content-type", "application/json").body(body.to_string().into_bytes()).unwrap()).await.json();
    assert!(review["status"]["error"].as_str().unwrap().contains("unknown token"), "{review}");
    // An answer in another TokenReview version than the one sent is no answer.
    webhook.answer_with(Arc::new(|_: &serde_json::Value| {
        let status = json!({"authenticated": true, "user": {"username": "dave"}});
        (Duration::ZERO, 200, json!({"apiVersion": "authentication.k8s.io/v1beta1", "kind": "TokenReview", "status": status}))
    }));
    let dave = s.token_kubeconfig("dave", "dave-token");
    let out = s.kubectl_as(&dave, &["auth", "whoami"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("Unauthorized"), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A TLS client of the server presenting `cert`/`key`.
fn tls_client(s: &TestServer, cert: &str, key: &str) -> std::sync::Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    let ca = std::fs::read_to_string(s.data_dir().join("pki/ca.crt")).unwrap();
    for c in rustls_pemfile::certs(&mut ca.as_bytes()) {
        roots.add(c.unwrap()).unwrap();
    }
    let chain = rustls_pemfile::certs(&mut cert.as_bytes()).collect::<Result<Vec<_>, _>>().unwrap();
    let key = rustls_pemfile::private_key(&mut key.as_bytes()).unwrap().unwrap();
    let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_client_auth_cert(chain, key)
        .unwrap();
    std::sync::Arc::new(config)
}

/// One request over a fresh TLS connection; returns the status, content type and body.
async fn send_over(tls: std::sync::Arc<rustls::ClientConfig>, port: u16, req: http::Request<http_body_util::Full<bytes::Bytes>>) -> (u16, String, Vec<u8>) {
    use http_body_util::BodyExt;
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let stream = tokio_rustls::TlsConnector::from(tls).connect(name, tcp).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await.unwrap();
    tokio::spawn(conn);
    let resp = sender.send_request(req).await.unwrap();
    let status = resp.status().as_u16();
    let content_type = resp.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    (status, content_type, resp.into_body().collect().await.unwrap().to_bytes().to_vec())
}

/// An authenticating proxy: plain HTTP on loopback, each request forwarded to the server with
/// the proxy's client certificate and the identity headers it adds. Returns its port.
async fn start_proxy(s: &TestServer, tls: std::sync::Arc<rustls::ClientConfig>) -> u16 {
    use http_body_util::{BodyExt, Full};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let upstream = s.port();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { continue };
            let tls = tls.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let tls = tls.clone();
                    async move {
                        let (parts, body) = req.into_parts();
                        let body = body.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                        let mut forward = http::Request::builder().method(parts.method).uri(parts.uri.path_and_query().map(|p| p.as_str()).unwrap_or("/"));
                        for (name, value) in &parts.headers {
                            if !name.as_str().starts_with("x-remote-") {
                                forward = forward.header(name, value);
                            }
                        }
                        let forward = forward
                            .header("x-remote-user", "proxied-alice")
                            .header("x-remote-group", "dev")
                            .header("x-remote-extra-scopes", "read")
                            .body(Full::new(body))
                            .unwrap();
                        let (status, content_type, body) = send_over(tls, upstream, forward).await;
                        let response = hyper::Response::builder().status(status).header("content-type", content_type).body(Full::new(bytes::Bytes::from(body))).unwrap();
                        Ok::<_, std::convert::Infallible>(response)
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new().serve_connection(hyper_util::rt::TokioIo::new(tcp), service).await;
            });
        }
    });
    port
}

#[tokio::test(flavor = "multi_thread")]
async fn an_authenticating_proxy_names_the_user_in_headers() {
    use http_body_util::Full;
    let files = tempfile::tempdir().unwrap();
    let (ca, leaves) = common::user_cert::proxy_pki(&["front-proxy", "other-proxy"]);
    let ((cert, key), (other_cert, other_key)) = (&leaves[0], &leaves[1]);
    let ca_file = files.path().join("proxy-ca.crt");
    std::fs::write(&ca_file, &ca).unwrap();
    let s = TestServer::start_with(&[
        "--requestheader-client-ca-file",
        ca_file.to_str().unwrap(),
        "--requestheader-username-headers",
        "X-Remote-User",
        "--requestheader-group-headers",
        "X-Remote-Group",
        "--requestheader-extra-headers-prefix",
        "X-Remote-Extra-",
        "--requestheader-allowed-names",
        "front-proxy",
    ])
    .await;

    // kubectl through the proxy sees the identity the proxy vouches for.
    let port = start_proxy(&s, tls_client(&s, cert, key)).await;
    let kubeconfig = files.path().join("proxy.kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!("apiVersion: v1\nkind: Config\nclusters:\n- name: p\n  cluster:\n    server: http://127.0.0.1:{port}\nusers:\n- name: u\n  user: {{}}\ncontexts:\n- name: p\n  context:\n    cluster: p\n    user: u\ncurrent-context: p\n"),
    )
    .unwrap();
    let out = s.kubectl_as(&kubeconfig, &["auth", "whoami", "-o", "json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let who: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let info = &who["status"]["userInfo"];
    assert_eq!(info["username"], "proxied-alice");
    assert_eq!(info["groups"], json!(["dev", "system:authenticated"]));
    assert_eq!(info["extra"]["scopes"], json!(["read"]));

    // The same headers from a client of the client CA are ignored (and stripped).
    let whoami = || {
        let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}).to_string();
        http::Request::post("/apis/authentication.k8s.io/v1/selfsubjectreviews")
            .header("host", "127.0.0.1")
            .header("content-type", "application/json")
            .header("x-remote-user", "mallory")
            .body(Full::new(bytes::Bytes::from(body)))
            .unwrap()
    };
    let admin = s.kubeconfig_path();
    let admin: serde_yaml::Value = serde_yaml::from_str(&std::fs::read_to_string(admin).unwrap()).unwrap();
    let b64 = |v: &serde_yaml::Value| String::from_utf8(base64::Engine::decode(&base64::engine::general_purpose::STANDARD, v.as_str().unwrap()).unwrap()).unwrap();
    let user = &admin["users"][0]["user"];
    let (status, _, body) = send_over(tls_client(&s, &b64(&user["client-certificate-data"]), &b64(&user["client-key-data"])), s.port(), whoami()).await;
    assert_eq!(status, 201);
    let who: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(who["status"]["userInfo"]["username"], "kubernetes-admin", "{who}");

    // A proxy certificate with a name not allowed is refused, headers or not.
    let (status, _, _) = send_over(tls_client(&s, other_cert, other_key), s.port(), whoami()).await;
    assert_eq!(status, 401, "a proxy name that is not allowed must not vouch for anyone");
    let (status, _, _) = send_over(tls_client(&s, cert, key), s.port(), {
        let mut r = whoami();
        r.headers_mut().remove("x-remote-user");
        r
    })
    .await;
    assert_eq!(status, 401, "the proxy's certificate alone names nobody");

    // The settings are published for servers that delegate authentication.
    let cm = s.kubectl_ok(&["get", "configmap", "-n", "kube-system", "extension-apiserver-authentication", "-o", "json"]);
    let cm: serde_json::Value = serde_json::from_str(&cm).unwrap();
    assert_eq!(cm["data"]["requestheader-allowed-names"], "[\"front-proxy\"]");
    assert_eq!(cm["data"]["requestheader-username-headers"], "[\"X-Remote-User\"]");
    assert!(cm["data"]["requestheader-client-ca-file"].as_str().unwrap().contains("BEGIN CERTIFICATE"));
}

/// A client certificate of X.509 version 1, as `openssl x509 -req` makes it by default,
/// identifies its user as kube-apiserver's verifier does; one the cluster CA did not sign is
/// refused at the handshake.
#[tokio::test(flavor = "multi_thread")]
async fn an_x509_version_1_client_certificate_names_its_user() {
    let server = TestServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let pki = server.data_dir().join("pki");
    let openssl = |args: &[&str]| {
        let out = std::process::Command::new("openssl").args(args).current_dir(dir.path()).output().expect("run openssl");
        assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    let (ca_crt, ca_key) = (pki.join("ca.crt"), pki.join("ca.key"));
    openssl(&["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "jane.key", "-out", "jane.csr", "-subj", "/CN=jane/O=devs"]);
    openssl(&["x509", "-req", "-in", "jane.csr", "-CA", ca_crt.to_str().unwrap(), "-CAkey", ca_key.to_str().unwrap(), "-CAcreateserial", "-out", "jane.crt", "-days", "1"]);
    // A CA of its own, which the server does not trust.
    openssl(&["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "other.key", "-out", "other.crt", "-subj", "/CN=other", "-days", "1"]);
    openssl(&["x509", "-req", "-in", "jane.csr", "-CA", "other.crt", "-CAkey", "other.key", "-CAcreateserial", "-out", "forged.crt", "-days", "1"]);
    let text = std::process::Command::new("openssl").args(["x509", "-noout", "-text", "-in"]).arg(dir.path().join("jane.crt")).output().unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains("Version: 1 (0x0)"), "not a version 1 certificate");

    let whoami = |cert: &str| {
        let kubeconfig = dir.path().join(format!("{cert}.kubeconfig"));
        let config = json!({"apiVersion": "v1", "kind": "Config", "current-context": "c",
            "clusters": [{"name": "c", "cluster": {"server": format!("https://127.0.0.1:{}", server.port()), "certificate-authority": ca_crt}}],
            "users": [{"name": "u", "user": {"client-certificate": dir.path().join(cert), "client-key": dir.path().join("jane.key")}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]});
        std::fs::write(&kubeconfig, config.to_string()).unwrap();
        server.kubectl_as(&kubeconfig, &["auth", "whoami", "-o", "json"])
    };
    let out = whoami("jane.crt");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let review: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(review["status"]["userInfo"]["username"], "jane");
    assert_eq!(review["status"]["userInfo"]["groups"], json!(["devs", "system:authenticated"]));
    assert!(!whoami("forged.crt").status.success(), "a certificate of another CA was accepted");
}
