//! `--tls-min-version` and `--tls-cipher-suites` by Kubernetes' names (Go's `crypto/tls`
//! constants), turned into the protocol versions and cipher suites of the rustls provider.
//!
//! rustls speaks TLS 1.2 and 1.3 and only AEAD suites: a minimum below 1.2 serves 1.2 and up,
//! and the CBC, RC4 and 3DES suites Kubernetes also names are refused at start. As in Go, the
//! suites listed choose among TLS 1.2's; TLS 1.3's are always offered.

use rustls::crypto::ring::cipher_suite as ring;
use rustls::{SupportedCipherSuite, SupportedProtocolVersion};

/// Go's names of the suites this server has, legacy aliases included.
const SUITES: &[(&str, SupportedCipherSuite)] = &[
    ("TLS_AES_128_GCM_SHA256", ring::TLS13_AES_128_GCM_SHA256),
    ("TLS_AES_256_GCM_SHA384", ring::TLS13_AES_256_GCM_SHA384),
    ("TLS_CHACHA20_POLY1305_SHA256", ring::TLS13_CHACHA20_POLY1305_SHA256),
    ("TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", ring::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256),
    ("TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", ring::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384),
    ("TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305", ring::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256),
    ("TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", ring::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256),
    ("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", ring::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256),
    ("TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", ring::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384),
    ("TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305", ring::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256),
    ("TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", ring::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256),
];

/// Names Kubernetes accepts for suites rustls does not implement (CBC, RC4, 3DES, RSA key
/// exchange).
const UNIMPLEMENTED: &[&str] = &[
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
    "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA",
    "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_RC4_128_SHA",
    "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA256",
    "TLS_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_RSA_WITH_AES_256_CBC_SHA",
    "TLS_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_RSA_WITH_RC4_128_SHA",
];

/// The protocol versions served for `--tls-min-version` (empty: TLS 1.2, Kubernetes' default).
pub fn versions(min: &str) -> Result<&'static [&'static SupportedProtocolVersion], String> {
    static BOTH: &[&SupportedProtocolVersion] = &[&rustls::version::TLS13, &rustls::version::TLS12];
    static TLS13: &[&SupportedProtocolVersion] = &[&rustls::version::TLS13];
    match min {
        "" | "VersionTLS10" | "VersionTLS11" | "VersionTLS12" => Ok(BOTH),
        "VersionTLS13" => Ok(TLS13),
        other => Err(format!("unknown tls version {other:?}")),
    }
}

/// The cipher suites for `--tls-cipher-suites` (empty: every suite of the provider): the TLS
/// 1.2 suites named, after every TLS 1.3 suite.
pub fn cipher_suites(names: &[String]) -> Result<Vec<SupportedCipherSuite>, String> {
    if names.is_empty() {
        return Ok(rustls::crypto::ring::DEFAULT_CIPHER_SUITES.to_vec());
    }
    let mut out: Vec<SupportedCipherSuite> = SUITES.iter().map(|(_, s)| *s).filter(|s| s.version() == &rustls::version::TLS13).collect();
    for name in names {
        let name = name.trim();
        match SUITES.iter().find(|(n, _)| *n == name) {
            Some((_, suite)) if !out.iter().any(|s| s.suite() == suite.suite()) => out.push(*suite),
            Some(_) => {}
            None if UNIMPLEMENTED.contains(&name) => return Err(format!("cipher suite {name} is not implemented by this server (it serves AEAD suites only)")),
            None => return Err(format!("Cipher suite {name} not supported or doesn't exist")),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_to_suites_and_unknown_ones_are_refused() {
        let suites = cipher_suites(&["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256".into(), "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305".into()]).unwrap();
        let tls12: Vec<_> = suites.iter().filter(|s| s.version() == &rustls::version::TLS12).map(|s| s.suite()).collect();
        assert_eq!(tls12, [ring::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256.suite(), ring::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256.suite()]);
        assert_eq!(suites.len(), 5);
        assert_eq!(cipher_suites(&["TLS_FOO".into()]).unwrap_err(), "Cipher suite TLS_FOO not supported or doesn't exist");
        assert!(cipher_suites(&["TLS_RSA_WITH_RC4_128_SHA".into()]).unwrap_err().contains("not implemented"));
        assert_eq!(versions("VersionTLS13").unwrap().len(), 1);
        assert_eq!(versions("VersionTLS9").unwrap_err(), "unknown tls version \"VersionTLS9\"");
    }
}
