//! `--tls-sni-cert-key`: further serving certificates, chosen by the name a client asks for in
//! its TLS handshake (SNI), as kube-apiserver chooses them.
//!
//! A flag value is `cert,key` or `cert,key:pattern,pattern`; a pattern is a name or a name with
//! a leading `*.` wildcard. Without patterns a certificate serves the names it holds (its common
//! name and DNS names). A pattern given on the command line wins over a name read from a
//! certificate, an exact name over a wildcard; a client that names nothing known gets the
//! default serving certificate.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use super::certs::parse_certs;

/// One `--tls-sni-cert-key` value.
#[derive(Debug, Clone, PartialEq)]
pub struct SniCertKey {
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
    pub patterns: Vec<String>,
}

/// Parses `cert,key[:pattern,...]`.
pub fn parse_sni_cert_key(value: &str) -> Result<SniCertKey, String> {
    let (files, patterns) = value.split_once(':').unwrap_or((value, ""));
    let files: Vec<&str> = files.split(',').map(str::trim).collect();
    let [cert, key] = files[..] else {
        return Err(format!("expected comma separated certificate and key file paths in {value:?}"));
    };
    if cert.is_empty() || key.is_empty() {
        return Err(format!("expected comma separated certificate and key file paths in {value:?}"));
    }
    let patterns = patterns.split(',').map(|p| p.trim().to_ascii_lowercase()).filter(|p| !p.is_empty()).collect();
    Ok(SniCertKey { cert_file: cert.into(), key_file: key.into(), patterns })
}

/// A certificate and key (PEM) with the patterns it was given, if any.
#[derive(Clone)]
pub struct SniPem {
    pub cert_pem: String,
    pub key_pem: String,
    pub patterns: Vec<String>,
}

/// The certificate a handshake gets: by exact name, then by wildcard, else the default.
#[derive(Debug)]
pub struct Resolver {
    default: Arc<CertifiedKey>,
    by_name: HashMap<String, Arc<CertifiedKey>>,
}

/// The signing key and chain of a PEM pair, for rustls.
pub fn certified_key(cert_pem: &str, key_pem: &str) -> anyhow::Result<CertifiedKey> {
    let chain = parse_certs(cert_pem)?;
    anyhow::ensure!(!chain.is_empty(), "the certificate file holds no PEM certificate");
    let key = rustls_pemfile::private_key(&mut key_pem.as_bytes())
        .context("reading the key")?
        .context("the key file holds no PEM private key")?;
    let signer = rustls::crypto::ring::sign::any_supported_type(&key).context("the private key's type is not supported")?;
    let certified = CertifiedKey::new(chain, signer);
    certified.keys_match().context("the certificate and key do not fit together")?;
    Ok(certified)
}

impl Resolver {
    pub fn new(default: CertifiedKey, sni: &[SniPem]) -> anyhow::Result<Resolver> {
        let mut by_name = HashMap::new();
        let mut explicit = HashMap::new();
        for (i, pem) in sni.iter().enumerate() {
            let key = Arc::new(certified_key(&pem.cert_pem, &pem.key_pem).with_context(|| format!("--tls-sni-cert-key number {}", i + 1))?);
            if pem.patterns.is_empty() {
                for name in certificate_names(&pem.cert_pem) {
                    by_name.entry(name).or_insert_with(|| key.clone());
                }
            } else {
                for pattern in &pem.patterns {
                    explicit.entry(pattern.clone()).or_insert_with(|| key.clone());
                }
            }
        }
        by_name.extend(explicit);
        Ok(Resolver { default: Arc::new(default), by_name })
    }

    fn lookup(&self, server_name: Option<&str>) -> Arc<CertifiedKey> {
        let Some(name) = server_name.map(str::to_ascii_lowercase) else { return self.default.clone() };
        if let Some(key) = self.by_name.get(&name) {
            return key.clone();
        }
        let wildcard = name.split_once('.').map(|(_, rest)| format!("*.{rest}"));
        wildcard.and_then(|w| self.by_name.get(&w).cloned()).unwrap_or_else(|| self.default.clone())
    }
}

impl ResolvesServerCert for Resolver {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.lookup(hello.server_name()))
    }
}

/// The leaf's common name and DNS names, lowercased.
fn certificate_names(cert_pem: &str) -> Vec<String> {
    let Ok(certs) = parse_certs(cert_pem) else { return Vec::new() };
    let Some(leaf) = certs.first() else { return Vec::new() };
    let Ok((_, cert)) = x509_parser::parse_x509_certificate(leaf.as_ref()) else { return Vec::new() };
    let mut names: Vec<String> = cert.subject().iter_common_name().filter_map(|cn| cn.as_str().ok()).map(str::to_ascii_lowercase).collect();
    if let Ok(Some(san)) = cert.subject_alternative_name() {
        for name in &san.value.general_names {
            if let x509_parser::extensions::GeneralName::DNSName(dns) = name {
                names.push(dns.to_ascii_lowercase());
            }
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_values_parse_as_kubernetes_reads_them() {
        assert_eq!(
            parse_sni_cert_key("foo.crt,foo.key:*.foo.com, Foo.com").unwrap(),
            SniCertKey { cert_file: "foo.crt".into(), key_file: "foo.key".into(), patterns: vec!["*.foo.com".into(), "foo.com".into()] }
        );
        assert_eq!(parse_sni_cert_key("a.crt,b.key").unwrap().patterns, Vec::<String>::new());
        assert!(parse_sni_cert_key("a.crt").is_err());
        assert!(parse_sni_cert_key("a,b,c").is_err());
    }
}
