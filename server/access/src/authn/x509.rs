//! Who a verified client certificate says the client is, put into each request's extensions:
//! a user of the client CA ([`ClientIdentity`]) or an authenticating proxy of the proxy CA
//! ([`ProxyIdentity`]).

use sha2::{Digest, Sha256};
use x509_parser::prelude::{FromDer, X509Certificate};

/// The identity of a client that presented a certificate verified against the client CA:
/// the subject Common Name is the user name, each subject Organization is a group, a subject
/// UID attribute the user's uid, and the certificate's SHA-256 fingerprint names the credential.
/// Requests on connections without a client certificate carry no `ClientIdentity`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientIdentity {
    pub user: String,
    pub uid: String,
    pub groups: Vec<String>,
    /// `X509SHA256=` and the hex fingerprint, as Kubernetes' `credential-id` extra.
    pub credential_id: String,
}

/// The object identifier of the subject's UID attribute (RFC 4519).
const UID_OID: &str = "0.9.2342.19200300.100.1.1";

impl ClientIdentity {
    /// The identity in a (verified) end-entity certificate, or `None` when its subject has no
    /// Common Name, which Kubernetes does not accept as a user, or more than one UID.
    pub fn from_certificate(der: &[u8]) -> Option<Self> {
        let (_, cert) = X509Certificate::from_der(der).ok()?;
        let subject = cert.subject();
        // Like Go's pkix.Name, the last CN wins when there are several.
        let user = subject
            .iter_common_name()
            .filter_map(|a| a.as_str().ok())
            .last()?
            .to_string();
        if user.is_empty() {
            return None;
        }
        let groups = subject
            .iter_organization()
            .filter_map(|a| a.as_str().ok())
            .map(str::to_string)
            .collect();
        let uids: Vec<&str> = subject.iter().flat_map(|rdn| rdn.iter()).filter(|a| a.attr_type().to_id_string() == UID_OID).filter_map(|a| a.as_str().ok()).collect();
        let uid = match uids.as_slice() {
            [] => String::new(),
            [one] if !one.is_empty() => one.to_string(),
            _ => return None,
        };
        let fingerprint: String = Sha256::digest(der).iter().map(|b| format!("{b:02x}")).collect();
        Some(Self { user, uid, groups, credential_id: format!("X509SHA256={fingerprint}") })
    }
}

/// The Common Name of a client certificate that verified against the authenticating proxy's
/// CA (`--requestheader-client-ca-file`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProxyIdentity {
    pub name: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, DnType, KeyPair};

    fn cert(parts: &[(DnType, &str)]) -> Vec<u8> {
        let mut params = CertificateParams::default();
        params.distinguished_name = rcgen::DistinguishedName::new();
        for (ty, v) in parts {
            params.distinguished_name.push(ty.clone(), *v);
        }
        params
            .self_signed(&KeyPair::generate().unwrap())
            .unwrap()
            .der()
            .to_vec()
    }

    #[test]
    fn user_and_groups_from_subject() {
        // rcgen writes one value per attribute type, so one group here; serve.rs's test covers
        // the admin certificate end to end.
        let der = cert(&[
            (DnType::CommonName, "jane"),
            (DnType::OrganizationName, "dev"),
        ]);
        let id = ClientIdentity::from_certificate(&der).unwrap();
        let fingerprint: String = Sha256::digest(&der).iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            id,
            ClientIdentity {
                user: "jane".into(),
                uid: String::new(),
                groups: vec!["dev".into()],
                credential_id: format!("X509SHA256={fingerprint}"),
            }
        );
        let with_uid = cert(&[(DnType::CommonName, "jane"), (DnType::CustomDnType(vec![0, 9, 2342, 19200300, 100, 1, 1]), "u-1")]);
        assert_eq!(ClientIdentity::from_certificate(&with_uid).unwrap().uid, "u-1");
        let no_group =
            ClientIdentity::from_certificate(&cert(&[(DnType::CommonName, "bob")])).unwrap();
        assert!(no_group.groups.is_empty());
        assert_eq!(
            ClientIdentity::from_certificate(&cert(&[(DnType::OrganizationName, "dev")])),
            None
        );
        assert_eq!(ClientIdentity::from_certificate(b"junk"), None);
    }
}
