//! Kubeconfigs for users other than the admin: a client certificate for a user name and groups,
//! signed by the server's CA, or a bearer token, in a copy of the admin kubeconfig. Shared by the
//! tests and the benchmarks.

use std::path::Path;

use base64::Engine;

/// Writes to `out` the admin kubeconfig at `admin` with its credentials replaced by a client
/// certificate for `user` in `groups`, issued with the CA in `pki` (`ca.crt`, `ca.key`).
/// The certificate library writes one organization per subject, so at most one group; tests
/// that need more impersonate them.
pub fn write_kubeconfig(admin: &Path, pki: &Path, user: &str, groups: &[&str], out: &Path) {
    assert!(groups.len() <= 1, "a client certificate here carries at most one group (O); impersonate more");
    let read = |name: &str| std::fs::read_to_string(pki.join(name)).expect("the server's CA");
    let ca_key = rcgen::KeyPair::from_pem(&read("ca.key")).expect("CA key");
    let issuer = rcgen::Issuer::from_ca_cert_pem(&read("ca.crt"), ca_key).expect("CA certificate");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("certificate parameters");
    params.distinguished_name = rcgen::DistinguishedName::new();
    params.distinguished_name.push(rcgen::DnType::CommonName, user);
    for g in groups {
        params.distinguished_name.push(rcgen::DnType::OrganizationName, *g);
    }
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let key = rcgen::KeyPair::generate().expect("key");
    let cert = params.signed_by(&key, &issuer).expect("signing");
    let b64 = |pem: &str| base64::engine::general_purpose::STANDARD.encode(pem);
    let mut config: serde_yaml::Value = serde_yaml::from_str(&std::fs::read_to_string(admin).expect("admin kubeconfig")).unwrap();
    let auth = &mut config["users"][0]["user"];
    auth["client-certificate-data"] = b64(&cert.pem()).into();
    auth["client-key-data"] = b64(&key.serialize_pem()).into();
    std::fs::write(out, serde_yaml::to_string(&config).unwrap()).expect("write kubeconfig");
}

/// Writes to `out` the admin kubeconfig at `admin` with its credentials replaced by a bearer
/// token.
pub fn write_token_kubeconfig(admin: &Path, token: &str, out: &Path) {
    let mut config: serde_yaml::Value = serde_yaml::from_str(&std::fs::read_to_string(admin).expect("admin kubeconfig")).unwrap();
    config["users"][0]["user"] = serde_yaml::Mapping::from_iter([("token".into(), token.into())]).into();
    std::fs::write(out, serde_yaml::to_string(&config).unwrap()).expect("write kubeconfig");
}

/// A front-proxy CA of the test's own (PEM) and a client certificate and key (PEM) it issues for each of
/// `cns`.
pub fn proxy_pki(cns: &[&str]) -> (String, Vec<(String, String)>) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(rcgen::DnType::CommonName, "front-proxy-ca");
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::from_ca_cert_pem(&ca.pem(), ca_key).unwrap();
    let leaves = cns
        .iter()
        .map(|cn| {
            let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
            params.distinguished_name.push(rcgen::DnType::CommonName, *cn);
            params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
            let key = rcgen::KeyPair::generate().unwrap();
            let cert = params.signed_by(&key, &issuer).unwrap();
            (cert.pem(), key.serialize_pem())
        })
        .collect();
    (ca.pem(), leaves)
}
