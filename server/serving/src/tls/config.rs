//! The rustls server configuration built from the certificates in force and the TLS flags:
//! the serving certificate (and the SNI ones), client certificates verified against the client
//! CA or the authenticating proxy's CA, the protocol versions and suites, ALPN `h2` and
//! `http/1.1`.

use std::sync::Arc;

use anyhow::Context;
use rustls::pki_types::CertificateDer;
use rustls::server::danger::ClientCertVerifier;
use rustls::server::WebPkiClientVerifier;
use rustls::ServerConfig;

use super::certs::parse_certs;
use super::sni::{certified_key, Resolver, SniPem};
use super::suites;
use super::v1_certs::AcceptingV1;
use access::authn::x509::{ClientIdentity, ProxyIdentity};

/// The TLS flags: `--tls-min-version`, `--tls-cipher-suites`.
#[derive(Debug, Clone, Default)]
pub struct TlsFlags {
    pub min_version: String,
    pub cipher_suites: Vec<String>,
}

/// The certificates a configuration is built from, all PEM.
#[derive(Clone)]
pub struct Material {
    pub serving_cert_pem: String,
    pub serving_key_pem: String,
    pub client_ca_pem: String,
    /// The CA of an authenticating proxy's client certificates (`--requestheader-client-ca-file`).
    pub proxy_ca_pem: Option<String>,
    pub sni: Vec<SniPem>,
}

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

/// The rustls server configuration for `material` under `flags`. Client certificates are
/// optional (anonymous clients may connect) but one that fails verification fails the
/// handshake.
pub fn server_config(material: &Material, flags: &TlsFlags) -> anyhow::Result<Tls> {
    let mut provider = rustls::crypto::ring::default_provider();
    provider.cipher_suites = suites::cipher_suites(&flags.cipher_suites).map_err(|e| anyhow::anyhow!("--tls-cipher-suites: {e}"))?;
    let versions = suites::versions(&flags.min_version).map_err(|e| anyhow::anyhow!("--tls-min-version: {e}"))?;
    let provider = Arc::new(provider);
    let (verifier, split) = match &material.proxy_ca_pem {
        None => (verifier(&[&material.client_ca_pem], &provider)?, None),
        Some(proxy) => (
            verifier(&[&material.client_ca_pem, proxy], &provider)?,
            Some((verifier(&[&material.client_ca_pem], &provider)?, verifier(&[proxy], &provider)?)),
        ),
    };
    let default = certified_key(&material.serving_cert_pem, &material.serving_key_pem).context("the serving certificate")?;
    let resolver = Resolver::new(default, &material.sni)?;
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .context("--tls-min-version and --tls-cipher-suites leave no protocol version with a suite")?
        .with_client_cert_verifier(verifier)
        .with_cert_resolver(Arc::new(resolver));
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Tls { config: Arc::new(config), split })
}

impl Tls {
    /// Who a verified chain says the client is: a user of the client CA, a proxy of the proxy
    /// CA, or both when both CAs verify it.
    pub fn identities(&self, chain: Option<&[CertificateDer<'static>]>) -> (Option<ClientIdentity>, Option<ProxyIdentity>) {
        let Some((leaf, intermediates)) = chain.and_then(|c| c.split_first()) else { return (None, None) };
        let Some(identity) = ClientIdentity::from_certificate(leaf) else { return (None, None) };
        let Some((client, proxy)) = &self.split else { return (Some(identity), None) };
        let now = rustls::pki_types::UnixTime::now();
        let by = |v: &Arc<dyn ClientCertVerifier>| v.verify_client_cert(leaf, intermediates, now).is_ok();
        let proxy = by(proxy).then(|| ProxyIdentity { name: identity.user.clone() });
        (by(client).then_some(identity), proxy)
    }
}
