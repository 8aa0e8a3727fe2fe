//! A real HTTPS webhook for the tests: its own CA and serving certificate, a kubeconfig (or a
//! `caBundle`) that points at it, every JSON body it was sent, and answers chosen by the test (with an optional
//! delay, to exceed a timeout).

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::Value;

/// Answers a request body with a delay, an HTTP status and a JSON body.
pub type Answer = Arc<dyn Fn(&Value) -> (Duration, u16, Value) + Send + Sync>;

pub struct WebhookServer {
    pub url: String,
    ca_pem: String,
    received: Arc<Mutex<Vec<Value>>>,
    answer: Arc<Mutex<Answer>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for WebhookServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl WebhookServer {
    /// Listens on a free loopback port; answers with `answer` until told otherwise.
    pub async fn start(answer: Answer) -> WebhookServer {
        let (acceptor, ca_pem) = tls_acceptor("webhook-ca");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let received = Arc::new(Mutex::new(Vec::new()));
        let answer = Arc::new(Mutex::new(answer));
        let (r, a) = (received.clone(), answer.clone());
        let task = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else { continue };
                let (acceptor, r, a) = (acceptor.clone(), r.clone(), a.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else { return };
                    let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                        let (r, a) = (r.clone(), a.clone());
                        async move {
                            let body = req.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                            let value: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                            r.lock().unwrap().push(value.clone());
                            let f = a.lock().unwrap().clone();
                            let (delay, code, reply) = f(&value);
                            tokio::time::sleep(delay).await;
                            let response = hyper::Response::builder()
                                .status(code)
                                .header("content-type", "application/json")
                                .body(Full::new(Bytes::from(serde_json::to_vec(&reply).unwrap())))
                                .unwrap();
                            Ok::<_, std::convert::Infallible>(response)
                        }
                    });
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        WebhookServer { url: format!("https://127.0.0.1:{port}/authorize"), ca_pem, received, answer, task }
    }

    /// Answers from now on with `answer`.
    pub fn answer_with(&self, answer: Answer) {
        *self.answer.lock().unwrap() = answer;
    }

    /// The webhook's CA, base64-encoded as a `caBundle`.
    pub fn ca_bundle(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(&self.ca_pem)
    }

    /// The bodies received so far.
    pub fn received(&self) -> Vec<Value> {
        self.received.lock().unwrap().clone()
    }

    /// Writes a kubeconfig that reaches this webhook and trusts its CA.
    pub fn write_kubeconfig(&self, path: &Path) {
        let ca = base64::engine::general_purpose::STANDARD.encode(&self.ca_pem);
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: webhook\n  cluster:\n    server: {}\n    certificate-authority-data: {ca}\nusers:\n- name: apiserver\n  user:\n    token: webhook-token\ncontexts:\n- name: webhook\n  context:\n    cluster: webhook\n    user: apiserver\ncurrent-context: webhook\n",
            self.url
        );
        std::fs::write(path, text).unwrap();
    }
}

/// A TLS acceptor for a test server on 127.0.0.1 / localhost, with a certificate of a CA of its
/// own (named `ca_name`), and that CA's PEM.
pub fn tls_acceptor(ca_name: &str) -> (tokio_rustls::TlsAcceptor, String) {
    let (config, ca) = tls_server_config(ca_name, &[], None);
    (tokio_rustls::TlsAcceptor::from(Arc::new(config)), ca)
}

/// The server side of [`tls_acceptor`], with `extra_names` in the certificate besides
/// 127.0.0.1 and localhost, and verifying the client certificates `client_ca` (PEM) signed, if
/// any is presented.
pub fn tls_server_config(ca_name: &str, extra_names: &[&str], client_ca: Option<&str>) -> (rustls::ServerConfig, String) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(rcgen::DnType::CommonName, ca_name);
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::from_ca_cert_pem(&ca_cert.pem(), ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let mut names = vec!["127.0.0.1".to_string(), "localhost".to_string()];
    names.extend(extra_names.iter().map(|n| n.to_string()));
    let params = rcgen::CertificateParams::new(names).unwrap();
    let cert = params.signed_by(&key, &issuer).unwrap();
    let builder = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap();
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(pem) => {
            let mut roots = rustls::RootCertStore::empty();
            for cert in rustls_pemfile::certs(&mut pem.as_bytes()) {
                roots.add(cert.unwrap()).unwrap();
            }
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider).allow_unauthenticated().build().unwrap();
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder
        .with_single_cert(
            vec![CertificateDer::from(cert.der().to_vec())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .unwrap();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    (config, ca_cert.pem())
}

/// A SubjectAccessReview answer.
pub fn review(allowed: bool, denied: bool, reason: &str) -> Value {
    serde_json::json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "status": {"allowed": allowed, "denied": denied, "reason": reason},
    })
}
