//! Who a verified client certificate says the client is, put into each request's extensions:
//! a user of the client CA ([`ClientIdentity`]) or an authenticating proxy of the proxy CA
//! ([`ProxyIdentity`]).

use x509_parser::prelude::{FromDer, X509Certificate};

/// The identity of a client that presented a certificate verified against the client CA:
/// the subject Common Name is the user name, each subject Organization is a group.
/// Requests on connections without a client certificate carry no `ClientIdentity`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientIdentity {
    pub user: String,
    pub groups: Vec<String>,
}

impl ClientIdentity {
    /// The identity in a (verified) end-entity certificate, or `None` when its subject has no
    /// Common Name, which Kubernetes does not accept as a user.
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
        Some(Self { user, groups })
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
        assert_eq!(
            id,
            ClientIdentity {
                user: "jane".into(),
                groups: vec!["dev".into()]
            }
        );
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
