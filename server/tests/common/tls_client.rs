//! TLS clients of the tests' own: a handshake with chosen versions, suites, name (SNI), ALPN
//! and client certificate that records the certificate the server presented; one HTTP/1.1 or
//! HTTP/2 request over it; and CAs that issue serving and client certificates.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme, SupportedCipherSuite, SupportedProtocolVersion};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// A CA of the test's own.
pub struct TestCa {
    pub cert_pem: String,
    pub key_pem: String,
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
}

impl TestCa {
    pub fn new(name: &str) -> TestCa {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.distinguished_name.push(rcgen::DnType::CommonName, name);
        let cert = params.self_signed(&key).unwrap();
        let key_pem = key.serialize_pem();
        TestCa { cert_pem: cert.pem(), key_pem, issuer: rcgen::Issuer::from_ca_cert_pem(&cert.pem(), key).unwrap() }
    }

    /// A serving certificate and key (PEM) for `names` (DNS names or IP addresses).
    pub fn serving(&self, names: &[&str]) -> (String, String) {
        let mut params = rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        let key = rcgen::KeyPair::generate().unwrap();
        (params.signed_by(&key, &self.issuer).unwrap().pem(), key.serialize_pem())
    }

    /// A client certificate and key (PEM) for the user `cn`.
    pub fn client(&self, cn: &str) -> (String, String) {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(rcgen::DnType::CommonName, cn);
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        let key = rcgen::KeyPair::generate().unwrap();
        (params.signed_by(&key, &self.issuer).unwrap().pem(), key.serialize_pem())
    }
}

/// How to shake hands.
#[derive(Default)]
pub struct Hello<'a> {
    pub server_name: Option<&'a str>,
    pub alpn: Option<&'a [u8]>,
    pub client_cert: Option<(&'a str, &'a str)>,
    pub versions: Option<&'a [&'static SupportedProtocolVersion]>,
    pub suites: Option<Vec<SupportedCipherSuite>>,
}

/// Accepts any server certificate and keeps the one presented.
#[derive(Debug)]
struct Recording {
    seen: Arc<Mutex<Option<CertificateDer<'static>>>>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Recording {
    fn verify_server_cert(&self, end_entity: &CertificateDer<'_>, _: &[CertificateDer<'_>], _: &ServerName<'_>, _: &[u8], _: UnixTime) -> Result<ServerCertVerified, rustls::Error> {
        *self.seen.lock().unwrap() = Some(end_entity.clone().into_owned());
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(&self, message: &[u8], cert: &CertificateDer<'_>, dss: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(&self, message: &[u8], cert: &CertificateDer<'_>, dss: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

/// Connects to 127.0.0.1:`port` and shakes hands; the stream and the server's leaf certificate.
pub async fn handshake(port: u16, hello: &Hello<'_>) -> std::io::Result<(TlsStream<TcpStream>, CertificateDer<'static>)> {
    let mut provider = rustls::crypto::ring::default_provider();
    if let Some(suites) = &hello.suites {
        provider.cipher_suites = suites.clone();
    }
    let provider = Arc::new(provider);
    let seen = Arc::new(Mutex::new(None));
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(hello.versions.unwrap_or(rustls::DEFAULT_VERSIONS))
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(Recording { seen: seen.clone(), provider }));
    let mut config = match hello.client_cert {
        Some((cert, key)) => {
            let chain = rustls_pemfile::certs(&mut cert.as_bytes()).collect::<Result<Vec<_>, _>>().unwrap();
            let key = rustls_pemfile::private_key(&mut key.as_bytes()).unwrap().unwrap();
            builder.with_client_auth_cert(chain, key).unwrap()
        }
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = hello.alpn.map(|p| vec![p.to_vec()]).unwrap_or_default();
    let tcp = TcpStream::connect(("127.0.0.1", port)).await?;
    let name = ServerName::try_from(hello.server_name.unwrap_or("127.0.0.1").to_string()).unwrap();
    let mut stream = tokio_rustls::TlsConnector::from(Arc::new(config)).connect(name, tcp).await?;
    // A TLS 1.3 server refuses a client certificate after the handshake: a round trip shows it.
    use tokio::io::AsyncWriteExt;
    stream.flush().await?;
    let cert = seen.lock().unwrap().clone().expect("the server presented a certificate");
    Ok((stream, cert))
}

/// One HTTP/1.1 request over `stream`: the status and body.
pub async fn http1(stream: TlsStream<TcpStream>, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Result<(u16, String), hyper::Error> {
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    let mut req = http::Request::builder().method(method).uri(path).header("host", "127.0.0.1").header("content-type", "application/json");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = sender.send_request(req.body(Full::new(Bytes::from(body.to_string()))).unwrap()).await?;
    let status = resp.status().as_u16();
    let body = resp.into_body().collect().await?.to_bytes();
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

/// An HTTP/2 connection over `stream` (negotiated with ALPN `h2`).
pub async fn http2(stream: TlsStream<TcpStream>) -> hyper::client::conn::http2::SendRequest<Full<Bytes>> {
    let (sender, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream)).await.unwrap();
    tokio::spawn(conn);
    sender
}

/// Who the server says the client is: a SelfSubjectReview's user name.
pub async fn whoami(port: u16, hello: &Hello<'_>, headers: &[(&str, &str)]) -> Result<String, String> {
    let (stream, _) = handshake(port, hello).await.map_err(|e| e.to_string())?;
    let review = r#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#;
    let (status, body) = http1(stream, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", headers, review).await.map_err(|e| e.to_string())?;
    let body: serde_json::Value = serde_json::from_str(&body).map_err(|e| format!("{status}: {e}: {body}"))?;
    match status {
        201 => Ok(body["status"]["userInfo"]["username"].as_str().unwrap_or_default().to_string()),
        _ => Err(format!("{status}: {body}")),
    }
}
