//! A real OIDC issuer for the tests: HTTPS with a CA of its own, discovery at
//! `/.well-known/openid-configuration`, its key set at `/keys`, ES256 keys it can rotate, and ID
//! tokens it signs with whichever key is current (or an old one, or none).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};

use super::webhook_server::tls_acceptor;

/// One ES256 signing key.
#[derive(Clone)]
pub struct SigningKey {
    pub kid: String,
    encoding: Arc<EncodingKey>,
    jwk: Value,
}

impl SigningKey {
    pub fn generate(kid: &str) -> SigningKey {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let raw = key.public_key_raw();
        let (x, y) = raw[1..].split_at(32);
        let jwk = json!({"kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": kid,
            "x": URL_SAFE_NO_PAD.encode(x), "y": URL_SAFE_NO_PAD.encode(y)});
        SigningKey { kid: kid.to_string(), encoding: Arc::new(EncodingKey::from_ec_der(&key.serialize_der())), jwk }
    }

    /// A JWT of `claims` signed with this key.
    pub fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.encoding).unwrap()
    }
}

pub struct OidcIssuer {
    pub url: String,
    pub ca_pem: String,
    keys: Arc<Mutex<Vec<SigningKey>>>,
    /// How many times the key set was fetched.
    fetches: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for OidcIssuer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl OidcIssuer {
    /// Listens on a free loopback port with one key, `key-1`.
    pub async fn start() -> OidcIssuer {
        let (acceptor, ca_pem) = tls_acceptor("oidc-ca");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("https://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let keys = Arc::new(Mutex::new(vec![SigningKey::generate("key-1")]));
        let fetches = Arc::new(AtomicUsize::new(0));
        let (k, f, u) = (keys.clone(), fetches.clone(), url.clone());
        let task = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else { continue };
                let (acceptor, k, f, u) = (acceptor.clone(), k.clone(), f.clone(), u.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else { return };
                    let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                        let (k, f, u) = (k.clone(), f.clone(), u.clone());
                        async move {
                            let (code, body) = match req.uri().path() {
                                "/.well-known/openid-configuration" => {
                                    (200, json!({"issuer": u, "jwks_uri": format!("{u}/keys"), "id_token_signing_alg_values_supported": ["ES256"]}))
                                }
                                "/keys" => {
                                    f.fetch_add(1, Ordering::SeqCst);
                                    let keys: Vec<Value> = k.lock().unwrap().iter().map(|k| k.jwk.clone()).collect();
                                    (200, json!({"keys": keys}))
                                }
                                _ => (404, json!({"error": "not found"})),
                            };
                            let response = hyper::Response::builder()
                                .status(code)
                                .header("content-type", "application/json")
                                .body(Full::new(Bytes::from(body.to_string())))
                                .unwrap();
                            Ok::<_, std::convert::Infallible>(response)
                        }
                    });
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new()).serve_connection(TokioIo::new(tls), service).await;
                });
            }
        });
        OidcIssuer { url, ca_pem, keys, fetches, task }
    }

    /// The key tokens are signed with now.
    pub fn current_key(&self) -> SigningKey {
        self.keys.lock().unwrap().last().unwrap().clone()
    }

    /// Replaces the published keys with a new one, which signs from now on; returns the old.
    pub fn rotate(&self, kid: &str) -> SigningKey {
        let old = self.current_key();
        *self.keys.lock().unwrap() = vec![SigningKey::generate(kid)];
        old
    }

    /// An ID token for `sub` with the usual claims (valid for an hour, for `aud`) and `extra`.
    pub fn token(&self, sub: &str, aud: &str, extra: Value) -> String {
        let mut claims = self.claims(sub, aud);
        if let (Some(c), Some(e)) = (claims.as_object_mut(), extra.as_object()) {
            c.extend(e.clone());
        }
        self.current_key().sign(&claims)
    }

    /// The claims of [`OidcIssuer::token`] before `extra`.
    pub fn claims(&self, sub: &str, aud: &str) -> Value {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
        json!({"iss": self.url, "sub": sub, "aud": aud, "iat": now, "nbf": now, "exp": now + 3600})
    }

    pub fn key_fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }
}
