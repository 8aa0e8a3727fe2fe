//! Service-account tokens: the keys and issuers they are signed and checked with ([`keys`]),
//! what they claim ([`claims`]), and the issuer discovery documents
//! (`/.well-known/openid-configuration`, `/openid/v1/jwks`) relying parties fetch.
//!
//! Tokens are signed with `--service-account-signing-key-file`, else with `DATA_DIR/pki/sa.key`
//! (generated on first start; copy it to every node of a cluster, as `ca.key`), and checked
//! against that key, the `--service-account-key-file` keys, or the serving key when no key file
//! is given.

pub mod claims;
pub mod keys;

use std::path::Path;

use anyhow::Context;
use jsonwebtoken::Validation;
use serde_json::{json, Value};

use crate::options::AuthenticationOptions;
use keys::{SigningKey, VerifyingKey};

/// The ServiceAccount every namespace has.
pub const DEFAULT_ACCOUNT: &str = "default";
/// The ConfigMap in every namespace holding the CA a pod's projected token volume trusts.
pub const ROOT_CA_CONFIGMAP: &str = "kube-root-ca.crt";
/// The type of a Secret holding a legacy token of an account.
pub const TOKEN_SECRET_TYPE: &str = "kubernetes.io/service-account-token";
/// The annotations of such a Secret naming its account.
pub const ACCOUNT_NAME_ANNOTATION: &str = "kubernetes.io/service-account.name";
pub const ACCOUNT_UID_ANNOTATION: &str = "kubernetes.io/service-account.uid";

/// The issuer kubeadm configures, used when `--service-account-issuer` is not given.
pub const DEFAULT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
/// Where the key set is served.
pub const JWKS_PATH: &str = "/openid/v1/jwks";
/// Where the discovery document is served.
pub const DISCOVERY_PATH: &str = "/.well-known/openid-configuration";
/// Clock skew tolerated on `exp` and `nbf`, as Kubernetes' validator allows.
const LEEWAY_SECONDS: u64 = 60;

/// How this server issues and checks service-account tokens.
pub struct Tokens {
    /// `--service-account-issuer`: the first signs, all are accepted.
    pub issuers: Vec<String>,
    /// `--api-audiences`: the audiences a token must target to act on this server.
    pub api_audiences: Vec<String>,
    signing: SigningKey,
    verifying: Vec<VerifyingKey>,
    /// `--service-account-max-token-expiration`, seconds.
    pub max_expiration: Option<i64>,
    /// `--service-account-extend-token-expiration`.
    pub extend_expiration: bool,
    /// `--service-account-lookup`: accounts and bound objects must still exist.
    pub lookup: bool,
    jwks_uri: String,
}

fn read(path: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

impl Tokens {
    /// From the flags; `signing_key` is the key file tokens are signed with
    /// (`--service-account-signing-key-file`, or the generated one), `serving_key_pem` the
    /// fallback verification key, `address` the server's URL for the default key set location.
    pub fn load(args: &AuthenticationOptions, signing_key: &Path, serving_key_pem: &str, address: &str) -> anyhow::Result<Tokens> {
        let signing_pem = read(signing_key)?;
        let (signing, signing_spki) = keys::signing_key(&signing_pem).map_err(|e| anyhow::anyhow!("service account signing key: {e}"))?;
        let mut verifying = vec![keys::verifying_key(&signing_spki).map_err(anyhow::Error::msg)?];
        if args.service_account_key_file.is_empty() {
            // As kube-apiserver: the serving key, when it is one tokens can be checked with.
            if let Ok(serving) = keys::verifying_keys(serving_key_pem) {
                verifying.extend(serving);
            }
        }
        for path in &args.service_account_key_file {
            let found = keys::verifying_keys(&read(path)?).map_err(|e| anyhow::anyhow!("--service-account-key-file {}: {e}", path.display()))?;
            verifying.extend(found);
        }
        verifying.dedup_by(|a, b| a.kid == b.kid);
        let issuers = if args.service_account_issuer.is_empty() { vec![DEFAULT_ISSUER.to_string()] } else { args.service_account_issuer.clone() };
        if issuers.iter().any(String::is_empty) {
            anyhow::bail!("--service-account-issuer may not be empty");
        }
        let api_audiences = if args.api_audiences.is_empty() { issuers.clone() } else { args.api_audiences.clone() };
        let max_expiration = args.service_account_max_token_expiration.map(|d| d.as_secs() as i64);
        if max_expiration.is_some_and(|m| m < 3600) {
            anyhow::bail!("--service-account-max-token-expiration must be at least 1h");
        }
        let jwks_uri = args.service_account_jwks_uri.clone().unwrap_or_else(|| format!("{address}{JWKS_PATH}"));
        Ok(Tokens {
            issuers,
            api_audiences,
            signing,
            verifying,
            max_expiration,
            extend_expiration: args.service_account_extend_token_expiration,
            lookup: args.service_account_lookup,
            jwks_uri,
        })
    }

    /// The issuer new tokens carry.
    pub fn issuer(&self) -> &str {
        &self.issuers[0]
    }

    pub fn sign(&self, claims: &Value) -> Result<String, String> {
        self.signing.sign(claims)
    }

    /// The claims of a token this server issued (any accepted issuer, or a legacy token),
    /// checked: signature, `exp` and `nbf`. `Ok(None)` when the token is not a JWT of one of
    /// these issuers (another method may know it).
    pub fn verify(&self, token: &str) -> Result<Option<Value>, String> {
        let Ok(header) = jsonwebtoken::decode_header(token) else { return Ok(None) };
        let Some(issuer) = unverified_issuer(token) else { return Ok(None) };
        if issuer != claims::LEGACY_ISSUER && !self.issuers.contains(&issuer) {
            return Ok(None);
        }
        let candidates = self.verifying.iter().filter(|k| k.alg == header.alg && header.kid.as_ref().is_none_or(|kid| *kid == k.kid));
        let mut validation = Validation::new(header.alg);
        validation.leeway = LEEWAY_SECONDS;
        validation.validate_aud = false;
        validation.validate_nbf = true;
        // Legacy tokens carry no `exp`; bound ones are checked for it below.
        validation.required_spec_claims.clear();
        for key in candidates {
            match jsonwebtoken::decode::<Value>(token, &key.key, &validation) {
                Ok(data) => {
                    if issuer != claims::LEGACY_ISSUER && !data.claims["exp"].is_i64() {
                        return Err("service account token has no expiry".into());
                    }
                    return Ok(Some(data.claims));
                }
                Err(e) if matches!(e.kind(), jsonwebtoken::errors::ErrorKind::InvalidSignature) => continue,
                Err(e) => return Err(format!("service account token is invalid: {e}")),
            }
        }
        Err("service account token could not be verified with any known key".into())
    }

    /// The OpenID discovery document, served when the issuer is an `https` URL.
    pub fn discovery(&self) -> Option<Value> {
        let issuer = self.issuer();
        issuer.starts_with("https://").then(|| {
            let algs: std::collections::BTreeSet<String> = self.verifying.iter().map(|k| format!("{:?}", k.alg)).collect();
            json!({
                "issuer": issuer,
                "jwks_uri": self.jwks_uri,
                "response_types_supported": ["id_token"],
                "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": algs,
            })
        })
    }

    /// The public keys tokens are checked with, as a JSON Web Key Set.
    pub fn jwks(&self) -> Value {
        json!({"keys": self.verifying.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>()})
    }
}

/// The `iss` of a JWT, read before its signature is checked (to pick the authenticator).
fn unverified_issuer(token: &str) -> Option<String> {
    use base64::Engine;
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?;
    let claims: Value = serde_json::from_slice(&bytes).ok()?;
    claims["iss"].as_str().map(String::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn tokens() -> Tokens {
        let pem = keys::generate().unwrap();
        let (signing, spki) = keys::signing_key(&pem).unwrap();
        Tokens {
            issuers: vec![DEFAULT_ISSUER.into()],
            api_audiences: vec![DEFAULT_ISSUER.into()],
            signing,
            verifying: vec![keys::verifying_key(&spki).unwrap()],
            max_expiration: None,
            extend_expiration: true,
            lookup: true,
            jwks_uri: String::new(),
        }
    }

    fn b64(v: &Value) -> String {
        use base64::Engine;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
    }

    #[test]
    fn only_good_tokens_of_our_issuers_verify() {
        let t = tokens();
        let now = chrono::Utc::now().timestamp();
        let claims = json!({"iss": DEFAULT_ISSUER, "sub": "x", "exp": now + 600, "nbf": now, "iat": now});
        let good = t.sign(&claims).unwrap();
        assert_eq!(t.verify(&good).unwrap().unwrap()["sub"], "x");
        // Another issuer's token is not ours to judge.
        let other = t.sign(&json!({"iss": "https://elsewhere", "exp": now + 600})).unwrap();
        assert_eq!(t.verify(&other), Ok(None));
        // Expired, not yet valid, without expiry: refused.
        for bad in [json!({"iss": DEFAULT_ISSUER, "exp": now - 3600}), json!({"iss": DEFAULT_ISSUER, "exp": now + 7200, "nbf": now + 3600}), json!({"iss": DEFAULT_ISSUER})] {
            assert!(t.verify(&t.sign(&bad).unwrap()).is_err(), "{bad}");
        }
        // alg none, and HMAC keyed with the public key: refused.
        let body = b64(&claims);
        let none = format!("{}.{body}.", b64(&json!({"alg": "none"})));
        assert!(!matches!(t.verify(&none), Ok(Some(_))));
        let jwk = &t.verifying[0].jwk;
        let hs = jsonwebtoken::encode(&jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256), &claims, &jsonwebtoken::EncodingKey::from_secret(jwk.to_string().as_bytes())).unwrap();
        assert!(t.verify(&hs).is_err());
        // A changed payload fails the signature.
        let parts: Vec<&str> = good.split('.').collect();
        let forged = format!("{}.{}.{}", parts[0], b64(&json!({"iss": DEFAULT_ISSUER, "sub": "admin", "exp": now + 600})), parts[2]);
        assert!(t.verify(&forged).is_err());
    }

    proptest! {
        #[test]
        fn random_tokens_never_panic(s in "\\PC{0,300}", header in "[A-Za-z0-9_-]{0,60}", payload in "[A-Za-z0-9_-]{0,200}") {
            let t = tokens();
            let _ = t.verify(&s);
            let _ = t.verify(&format!("{header}.{payload}.{header}"));
            let _ = claims::read(&serde_json::from_str::<Value>(&s).unwrap_or_default());
        }
    }
}
