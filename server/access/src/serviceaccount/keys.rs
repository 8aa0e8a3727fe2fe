//! Service-account token keys: the private key tokens are signed with and the public keys they
//! are verified against, read from PEM files as kube-apiserver reads them (PKCS#1 and PKCS#8 RSA
//! keys, PKCS#8 and SEC1 ECDSA P-256/P-384 keys, public keys, certificates). Each key's id is
//! Kubernetes' own: the unpadded base64url SHA-256 of its DER `SubjectPublicKeyInfo`.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey};
use ring::signature::{self, KeyPair as _};
use rustls_pemfile::Item;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use x509_parser::prelude::FromDer;
use x509_parser::public_key::PublicKey;
use x509_parser::x509::SubjectPublicKeyInfo;

const OID_RSA: &[u8] = &[0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01];
const DER_NULL: &[u8] = &[0x05, 0x00];
const OID_EC: &[u8] = &[0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01];
const OID_P256: &[u8] = &[0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07];
const OID_P384: &[u8] = &[0x06, 0x05, 0x2B, 0x81, 0x04, 0x00, 0x22];

/// The private key tokens are signed with.
pub struct SigningKey {
    pub alg: Algorithm,
    pub kid: String,
    key: EncodingKey,
}

impl SigningKey {
    /// Signs `claims` as a JWT with this key's algorithm and id.
    pub fn sign(&self, claims: &Value) -> Result<String, String> {
        let mut header = jsonwebtoken::Header::new(self.alg);
        header.kid = Some(self.kid.clone());
        header.typ = None;
        jsonwebtoken::encode(&header, claims, &self.key).map_err(|e| e.to_string())
    }
}

/// A public key tokens are checked against.
pub struct VerifyingKey {
    pub alg: Algorithm,
    pub kid: String,
    pub key: DecodingKey,
    /// The key as a JSON Web Key, for `/openid/v1/jwks`.
    pub jwk: Value,
}

/// DER: one element with `tag` around `content`.
fn der(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len.to_be_bytes().into_iter().skip_while(|b| *b == 0).collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(content);
    out
}

fn sequence(parts: &[&[u8]]) -> Vec<u8> {
    der(0x30, &parts.concat())
}

/// A `SubjectPublicKeyInfo` for an algorithm identifier and the key's bits.
fn spki(algorithm: &[&[u8]], key: &[u8]) -> Vec<u8> {
    let bits = [&[0u8][..], key].concat();
    sequence(&[&sequence(algorithm), &der(0x03, &bits)])
}

/// A SEC1 ECDSA private key wrapped as PKCS#8 for `curve`.
fn pkcs8_of_sec1(sec1: &[u8], curve: &[u8]) -> Vec<u8> {
    sequence(&[&[0x02, 0x01, 0x00], &sequence(&[OID_EC, curve]), &der(0x04, sec1)])
}

/// Kubernetes' key id of a public key.
fn key_id(spki_der: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(spki_der))
}

/// An ECDSA PKCS#8 key: its algorithm and public key's SPKI, if ring takes it for one curve.
fn ec_pkcs8(pkcs8: &[u8]) -> Option<(Algorithm, Vec<u8>)> {
    let rng = ring::rand::SystemRandom::new();
    [(Algorithm::ES256, &signature::ECDSA_P256_SHA256_FIXED_SIGNING, OID_P256), (Algorithm::ES384, &signature::ECDSA_P384_SHA384_FIXED_SIGNING, OID_P384)]
        .into_iter()
        .find_map(|(alg, ring_alg, curve)| {
            let pair = signature::EcdsaKeyPair::from_pkcs8(ring_alg, pkcs8, &rng).ok()?;
            Some((alg, spki(&[OID_EC, curve], pair.public_key().as_ref())))
        })
}

/// The signing key in a PEM file's text, and its public key's SPKI.
pub fn signing_key(pem: &str) -> Result<(SigningKey, Vec<u8>), String> {
    for item in rustls_pemfile::read_all(&mut pem.as_bytes()) {
        let item = item.map_err(|e| format!("reading PEM: {e}"))?;
        let (alg, key, spki_der) = match item {
            Item::Pkcs1Key(k) => {
                let pair = signature::RsaKeyPair::from_der(k.secret_pkcs1_der()).map_err(|e| format!("RSA key: {e}"))?;
                (Algorithm::RS256, EncodingKey::from_rsa_der(k.secret_pkcs1_der()), spki(&[OID_RSA, DER_NULL], pair.public_key().as_ref()))
            }
            Item::Pkcs8Key(k) => {
                let der = k.secret_pkcs8_der();
                if let Ok(pair) = signature::RsaKeyPair::from_pkcs8(der) {
                    let pem = pem::encode(&pem::Pem::new("PRIVATE KEY", der.to_vec()));
                    let key = EncodingKey::from_rsa_pem(pem.as_bytes()).map_err(|e| format!("RSA key: {e}"))?;
                    (Algorithm::RS256, key, spki(&[OID_RSA, DER_NULL], pair.public_key().as_ref()))
                } else {
                    let (alg, spki_der) = ec_pkcs8(der).ok_or("unsupported private key: want RSA or ECDSA P-256/P-384")?;
                    (alg, EncodingKey::from_ec_der(der), spki_der)
                }
            }
            Item::Sec1Key(k) => {
                let (alg, spki_der, pkcs8) = [OID_P256, OID_P384]
                    .into_iter()
                    .find_map(|curve| {
                        let pkcs8 = pkcs8_of_sec1(k.secret_sec1_der(), curve);
                        ec_pkcs8(&pkcs8).map(|(alg, spki_der)| (alg, spki_der, pkcs8))
                    })
                    .ok_or("unsupported EC private key: want P-256 or P-384")?;
                (alg, EncodingKey::from_ec_der(&pkcs8), spki_der)
            }
            _ => continue,
        };
        return Ok((SigningKey { alg, kid: key_id(&spki_der), key }, spki_der));
    }
    Err("no private key found".into())
}

/// The public keys in a PEM file's text: of private keys, public keys and certificates.
pub fn verifying_keys(pem: &str) -> Result<Vec<VerifyingKey>, String> {
    let mut keys = Vec::new();
    for item in rustls_pemfile::read_all(&mut pem.as_bytes()) {
        let item = item.map_err(|e| format!("reading PEM: {e}"))?;
        let spki_der = match item {
            Item::Pkcs1Key(_) | Item::Pkcs8Key(_) | Item::Sec1Key(_) => {
                let text = pem::encode(&pem_of(&item));
                signing_key(&text)?.1
            }
            Item::SubjectPublicKeyInfo(k) => k.to_vec(),
            Item::X509Certificate(c) => {
                let (_, cert) = x509_parser::parse_x509_certificate(&c).map_err(|e| format!("certificate: {e}"))?;
                cert.tbs_certificate.subject_pki.raw.to_vec()
            }
            _ => continue,
        };
        keys.push(verifying_key(&spki_der)?);
    }
    if keys.is_empty() {
        return Err("no public key found".into());
    }
    Ok(keys)
}

fn pem_of(item: &Item) -> pem::Pem {
    match item {
        Item::Pkcs1Key(k) => pem::Pem::new("RSA PRIVATE KEY", k.secret_pkcs1_der().to_vec()),
        Item::Sec1Key(k) => pem::Pem::new("EC PRIVATE KEY", k.secret_sec1_der().to_vec()),
        Item::Pkcs8Key(k) => pem::Pem::new("PRIVATE KEY", k.secret_pkcs8_der().to_vec()),
        _ => pem::Pem::new("UNKNOWN", Vec::new()),
    }
}

/// The verifying key of a DER `SubjectPublicKeyInfo`.
pub fn verifying_key(spki_der: &[u8]) -> Result<VerifyingKey, String> {
    let (_, info) = SubjectPublicKeyInfo::from_der(spki_der).map_err(|e| format!("public key: {e}"))?;
    let kid = key_id(spki_der);
    match info.parsed().map_err(|e| format!("public key: {e}"))? {
        PublicKey::RSA(rsa) => {
            let (n, e) = (strip_zeros(rsa.modulus), strip_zeros(rsa.exponent));
            let jwk = json!({"use": "sig", "kty": "RSA", "kid": kid, "alg": "RS256", "n": URL_SAFE_NO_PAD.encode(n), "e": URL_SAFE_NO_PAD.encode(e)});
            Ok(VerifyingKey { alg: Algorithm::RS256, kid, key: DecodingKey::from_rsa_raw_components(n, e), jwk })
        }
        PublicKey::EC(point) => {
            let curve = info.algorithm.parameters.as_ref().and_then(|p| p.as_oid().ok()).map(|o| o.to_id_string());
            let (alg, crv, size) = match curve.as_deref() {
                Some("1.2.840.10045.3.1.7") => (Algorithm::ES256, "P-256", 32),
                Some("1.3.132.0.34") => (Algorithm::ES384, "P-384", 48),
                _ => return Err("unsupported EC public key: want P-256 or P-384".into()),
            };
            let data = point.data();
            if data.len() != 1 + 2 * size || data[0] != 4 {
                return Err("EC public key is not an uncompressed point".into());
            }
            let (x, y) = (URL_SAFE_NO_PAD.encode(&data[1..=size]), URL_SAFE_NO_PAD.encode(&data[1 + size..]));
            let key = DecodingKey::from_ec_components(&x, &y).map_err(|e| format!("EC public key: {e}"))?;
            let jwk = json!({"use": "sig", "kty": "EC", "kid": kid, "crv": crv, "alg": format!("{alg:?}"), "x": x, "y": y});
            Ok(VerifyingKey { alg, kid, key, jwk })
        }
        _ => Err("unsupported public key: want RSA or ECDSA".into()),
    }
}

fn strip_zeros(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|b| *b != 0).unwrap_or(bytes.len().saturating_sub(1));
    &bytes[start..]
}

/// A new ECDSA P-256 private key, PKCS#8 PEM (the key a node generates when given none).
pub fn generate() -> Result<String, String> {
    let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).map_err(|e| e.to_string())?;
    Ok(pair.serialize_pem())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_key_signs_and_verifies() {
        let pem = generate().unwrap();
        let (signing, spki_der) = signing_key(&pem).unwrap();
        assert_eq!(signing.alg, Algorithm::ES256);
        let verifying = verifying_keys(&pem).unwrap();
        assert_eq!(verifying.len(), 1);
        assert_eq!(verifying[0].kid, signing.kid);
        assert_eq!(verifying_key(&spki_der).unwrap().kid, signing.kid);
        let token = signing.sign(&json!({"sub": "x"})).unwrap();
        let mut validation = jsonwebtoken::Validation::new(Algorithm::ES256);
        validation.required_spec_claims.clear();
        validation.validate_exp = false;
        let data = jsonwebtoken::decode::<Value>(&token, &verifying[0].key, &validation).unwrap();
        assert_eq!(data.header.kid.as_deref(), Some(signing.kid.as_str()));
        assert_eq!(data.claims["sub"], "x");
        assert_eq!(verifying[0].jwk["crv"], "P-256");
    }

    #[test]
    fn sec1_key_becomes_pkcs8() {
        let pem = generate().unwrap();
        let (signing, _) = signing_key(&pem).unwrap();
        // The SEC1 form of the same key is the inner OCTET STRING of the PKCS#8 document.
        let pkcs8 = ::pem::parse(&pem).unwrap().into_contents();
        let sec1 = find_octet_string(&pkcs8).expect("inner key");
        let sec1_pem = ::pem::encode(&::pem::Pem::new("EC PRIVATE KEY", sec1));
        let (again, _) = signing_key(&sec1_pem).unwrap();
        assert_eq!(again.kid, signing.kid);
    }

    /// The content of the last top-level OCTET STRING inside a DER SEQUENCE.
    fn find_octet_string(der: &[u8]) -> Option<Vec<u8>> {
        let (_, obj) = x509_parser::der_parser::parse_der(der).ok()?;
        obj.as_sequence().ok()?.iter().rev().find_map(|o| o.as_slice().ok().filter(|_| o.header.tag().0 == 4).map(<[u8]>::to_vec))
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(signing_key("not a key").is_err());
        assert!(verifying_keys("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n").is_err());
    }
}
