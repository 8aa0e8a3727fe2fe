//! Client certificates of X.509 version 1 (no extensions: what `openssl x509 -req` makes by
//! default). kube-apiserver accepts them, as Go's `crypto/x509` does; rustls' verifier takes
//! version 3 only. [`AcceptingV1`] wraps it: a certificate it refuses that is a version 1
//! certificate is accepted when one of the client CAs signed it directly and it is within its
//! validity, and its handshake signature is checked against its public key (TLS 1.3, and the
//! TLS 1.2 schemes TLS 1.3 shares).

use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::{verify_tls13_signature_with_raw_key, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, SubjectPublicKeyInfoDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{CertificateError, DigitallySignedStruct, DistinguishedName, Error, SignatureScheme};
use x509_parser::prelude::{FromDer, X509Certificate, X509Version};

/// A client CA: its subject and public key (DER).
struct Issuer {
    subject: Vec<u8>,
    public_key: Vec<u8>,
}

#[derive(Debug)]
pub struct AcceptingV1 {
    inner: Arc<dyn ClientCertVerifier>,
    issuers: Vec<Issuer>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl std::fmt::Debug for Issuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Issuer")
    }
}

impl AcceptingV1 {
    /// `inner` verifying against the CA certificates `cas` (DER).
    pub fn new(inner: Arc<dyn ClientCertVerifier>, cas: &[CertificateDer<'_>], algorithms: WebPkiSupportedAlgorithms) -> AcceptingV1 {
        let issuers = cas
            .iter()
            .filter_map(|der| X509Certificate::from_der(der).ok().map(|(_, ca)| Issuer { subject: ca.subject().as_raw().to_vec(), public_key: ca.public_key().raw.to_vec() }))
            .collect();
        AcceptingV1 { inner, issuers, algorithms }
    }

    /// A version 1 certificate signed by a client CA and valid at `now`.
    fn verify_v1(&self, der: &CertificateDer<'_>, now: UnixTime) -> Result<(), Error> {
        let (_, cert) = X509Certificate::from_der(der).map_err(|_| Error::InvalidCertificate(CertificateError::BadEncoding))?;
        let now = x509_parser::time::ASN1Time::from_timestamp(now.as_secs() as i64).map_err(|_| Error::InvalidCertificate(CertificateError::BadEncoding))?;
        if !cert.validity().is_valid_at(now) {
            return Err(Error::InvalidCertificate(CertificateError::Expired));
        }
        let signed = self.issuers.iter().filter(|i| i.subject == cert.issuer().as_raw()).any(|issuer| {
            x509_parser::prelude::SubjectPublicKeyInfo::from_der(&issuer.public_key).is_ok_and(|(_, key)| cert.verify_signature(Some(&key)).is_ok())
        });
        match signed {
            true => Ok(()),
            false => Err(Error::InvalidCertificate(CertificateError::UnknownIssuer)),
        }
    }

    /// The public key of a version 1 certificate.
    fn v1_key(cert: &CertificateDer<'_>) -> Option<Vec<u8>> {
        let (_, cert) = X509Certificate::from_der(cert).ok()?;
        (cert.version() == X509Version::V1).then(|| cert.public_key().raw.to_vec())
    }

    fn verify_with_key(&self, message: &[u8], cert: &CertificateDer<'_>, dss: &DigitallySignedStruct, refused: Error) -> Result<HandshakeSignatureValid, Error> {
        match Self::v1_key(cert) {
            Some(key) => verify_tls13_signature_with_raw_key(message, &SubjectPublicKeyInfoDer::from(key.as_slice()), dss, &self.algorithms),
            None => Err(refused),
        }
    }
}

impl ClientCertVerifier for AcceptingV1 {
    fn offer_client_auth(&self) -> bool {
        self.inner.offer_client_auth()
    }

    fn client_auth_mandatory(&self) -> bool {
        self.inner.client_auth_mandatory()
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }

    fn verify_client_cert(&self, end_entity: &CertificateDer<'_>, intermediates: &[CertificateDer<'_>], now: UnixTime) -> Result<ClientCertVerified, Error> {
        match self.inner.verify_client_cert(end_entity, intermediates, now) {
            Err(refused) if Self::v1_key(end_entity).is_some() && intermediates.is_empty() => match self.verify_v1(end_entity, now) {
                Ok(()) => Ok(ClientCertVerified::assertion()),
                Err(_) => Err(refused),
            },
            other => other,
        }
    }

    fn verify_tls12_signature(&self, message: &[u8], cert: &CertificateDer<'_>, dss: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, Error> {
        self.inner.verify_tls12_signature(message, cert, dss).or_else(|refused| self.verify_with_key(message, cert, dss, refused))
    }

    fn verify_tls13_signature(&self, message: &[u8], cert: &CertificateDer<'_>, dss: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, Error> {
        self.inner.verify_tls13_signature(message, cert, dss).or_else(|refused| self.verify_with_key(message, cert, dss, refused))
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}
