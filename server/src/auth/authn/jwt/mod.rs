//! JWT (OIDC ID token) authentication: a token whose `iss` names a configured issuer is
//! verified against that issuer's keys ([`keys`]) with one of the allowed algorithms (never
//! `none`, never HMAC), must not be expired (`exp` is required), nor used before its `nbf`
//! (five minutes' leeway, as go-oidc), must be issued to one of the configured audiences, and
//! then passes the claim rules and mappings ([`claims`]). The set of authenticators is replaced
//! whole when `--authentication-config` is reloaded.

pub mod claims;
pub mod keys;

use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::{Algorithm, Validation};
use serde_json::Value;

use super::{Authenticated, TokenAuthenticator};

/// How far in the future a token's `nbf` may be.
const NBF_LEEWAY: Duration = Duration::from_secs(5 * 60);

/// What one `jwt` entry of the configuration (or the `--oidc-*` flags) says.
pub struct Settings {
    pub issuer: String,
    pub discovery_url: Option<String>,
    pub ca_pem: Option<String>,
    pub audiences: Vec<String>,
    pub algorithms: Vec<Algorithm>,
    pub mapping: claims::Mapping,
}

/// One issuer's authenticator.
pub struct JwtAuthenticator {
    settings: Settings,
    keys: keys::RemoteKeys,
}

impl JwtAuthenticator {
    /// Starts discovery of the issuer's keys in the background.
    pub fn start(settings: Settings) -> JwtAuthenticator {
        let keys = keys::RemoteKeys::start(&settings.issuer, settings.discovery_url.as_deref(), settings.ca_pem.clone());
        JwtAuthenticator { settings, keys }
    }

    pub fn issuer(&self) -> &str {
        &self.settings.issuer
    }

    /// Whether the issuer's keys have been fetched.
    pub fn ready(&self) -> bool {
        self.keys.ready()
    }

    /// `Ok(None)` when the token is not this issuer's; else its user or why it is refused.
    pub async fn authenticate(&self, token: &str) -> Result<Option<crate::auth::UserInfo>, String> {
        if untrusted_issuer(token).as_deref() != Some(self.settings.issuer.as_str()) {
            return Ok(None);
        }
        let claims = self.verify(token).await.map_err(|e| format!("oidc: verify token: {e}"))?;
        self.check_audience(&claims)?;
        self.settings.mapping.user(&claims).map(Some)
    }

    /// The token's claims once its signature, algorithm and times are checked.
    async fn verify(&self, token: &str) -> Result<Value, String> {
        let header = jsonwebtoken::decode_header(token).map_err(|e| format!("malformed jwt: {e}"))?;
        if !self.settings.algorithms.contains(&header.alg) {
            let expected: Vec<String> = self.settings.algorithms.iter().map(|a| format!("{a:?}")).collect();
            return Err(format!("oidc: id token signed with unsupported algorithm, expected {expected:?} got \"{:?}\"", header.alg));
        }
        let keys = self.keys.keys()?;
        let claims = match try_keys(token, &header, &keys) {
            Found::Valid(claims) => claims,
            Found::Invalid(e) => return Err(e),
            Found::NoKey => {
                // A key the cached set lacks: the issuer may have rotated.
                let keys = self.keys.refresh().await?;
                match try_keys(token, &header, &keys) {
                    Found::Valid(claims) => claims,
                    Found::Invalid(e) => return Err(e),
                    Found::NoKey => return Err("failed to verify signature: no key in the issuer's key set verifies the token".into()),
                }
            }
        };
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs_f64();
        match claims.get("exp").and_then(Value::as_f64) {
            Some(exp) if now <= exp => {}
            Some(exp) => return Err(format!("oidc: token is expired (Token Expiry: {})", rfc3339(exp))),
            None => return Err("oidc: token has no expiry (exp)".into()),
        }
        if let Some(nbf) = claims.get("nbf").and_then(Value::as_f64) {
            if now + NBF_LEEWAY.as_secs_f64() < nbf {
                return Err(format!("oidc: current time {} before the nbf (not before) time: {}", rfc3339(now), rfc3339(nbf)));
            }
        }
        Ok(claims)
    }

    fn check_audience(&self, claims: &Value) -> Result<(), String> {
        let got: Vec<String> = match claims.get("aud") {
            Some(Value::String(a)) => vec![a.clone()],
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).map(str::to_string).collect(),
            _ => Vec::new(),
        };
        if got.iter().any(|a| self.settings.audiences.contains(a)) {
            return Ok(());
        }
        let mut want = self.settings.audiences.clone();
        want.sort();
        Err(format!("oidc: expected audience in {want:?} got {got:?}"))
    }
}

/// What trying the cached keys found.
enum Found {
    Valid(Value),
    /// A key for the token exists but the token does not verify (or is malformed).
    Invalid(String),
    /// No key the token may be checked with verifies it.
    NoKey,
}

fn try_keys(token: &str, header: &jsonwebtoken::Header, keys: &[keys::Key]) -> Found {
    let mut validation = Validation::new(header.alg);
    validation.validate_exp = false;
    validation.validate_nbf = false;
    validation.validate_aud = false;
    validation.required_spec_claims.clear();
    let candidates: Vec<&keys::Key> = match &header.kid {
        Some(kid) => keys.iter().filter(|k| k.kid.as_deref().is_none_or(|k| k == kid)).collect(),
        None => keys.iter().collect(),
    };
    let named = header.kid.as_ref().is_some_and(|kid| keys.iter().any(|k| k.kid.as_ref() == Some(kid)));
    let mut last = None;
    for key in candidates {
        match jsonwebtoken::decode::<Value>(token, &key.key, &validation) {
            Ok(data) => return Found::Valid(data.claims),
            Err(e) => last = Some(e),
        }
    }
    match last {
        Some(e) if named => Found::Invalid(format!("failed to verify signature: {e}")),
        Some(e) if !matches!(e.kind(), jsonwebtoken::errors::ErrorKind::InvalidSignature | jsonwebtoken::errors::ErrorKind::InvalidAlgorithm | jsonwebtoken::errors::ErrorKind::InvalidKeyFormat) => {
            Found::Invalid(format!("malformed jwt: {e}"))
        }
        _ => Found::NoKey,
    }
}

/// The `iss` of a token's payload, read without verifying anything, to pick its authenticator.
pub fn untrusted_issuer(token: &str) -> Option<String> {
    let mut parts = token.split('.');
    let (_, payload, _, rest) = (parts.next()?, parts.next()?, parts.next()?, parts.next());
    if rest.is_some() {
        return None;
    }
    let bytes = URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?;
    let claims: Value = serde_json::from_slice(&bytes).ok()?;
    claims.get("iss")?.as_str().map(str::to_string)
}

fn rfc3339(seconds: f64) -> String {
    chrono::DateTime::from_timestamp(seconds as i64, 0).map_or_else(|| seconds.to_string(), |t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
}

/// The configured JWT authenticators, replaced whole on reload.
#[derive(Default)]
pub struct Jwts(RwLock<Arc<Vec<JwtAuthenticator>>>);

impl Jwts {
    pub fn replace(&self, authenticators: Vec<JwtAuthenticator>) {
        *self.0.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(authenticators);
    }

    pub fn current(&self) -> Arc<Vec<JwtAuthenticator>> {
        self.0.read().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

#[async_trait::async_trait]
impl TokenAuthenticator for Arc<Jwts> {
    fn name(&self) -> &'static str {
        "jwt"
    }

    async fn authenticate(&self, token: &str, audiences: &[String]) -> Result<Option<Authenticated>, String> {
        for authenticator in self.current().iter() {
            if let Some(user) = authenticator.authenticate(token).await? {
                return Ok(Some(Authenticated { user, audiences: audiences.to_vec() }));
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use claims::{Mapping, Source};
    use jsonwebtoken::{DecodingKey, EncodingKey, Header};
    use proptest::prelude::*;
    use serde_json::json;

    const ISSUER: &str = "https://issuer.example";

    #[test]
    fn the_issuer_is_read_only_from_well_formed_tokens() {
        let payload = URL_SAFE_NO_PAD.encode(br#"{"iss":"https://issuer.example","sub":"a"}"#);
        assert_eq!(untrusted_issuer(&format!("e30.{payload}.sig")).as_deref(), Some("https://issuer.example"));
        assert_eq!(untrusted_issuer(&format!("e30.{payload}")), None);
        assert_eq!(untrusted_issuer(&format!("e30.{payload}.sig.extra")), None);
        assert_eq!(untrusted_issuer("e30.!!!.sig"), None);
        assert_eq!(untrusted_issuer(&format!("e30.{}.sig", URL_SAFE_NO_PAD.encode(b"[1]"))), None);
    }

    /// An authenticator of [`ISSUER`] with one ES256 key, and a signer of that key.
    fn authenticator() -> (JwtAuthenticator, impl Fn(&Value) -> String) {
        let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let key = keys::Key { kid: Some("k1".into()), key: DecodingKey::from_ec_der(&pair.public_key_raw()) };
        let encoding = EncodingKey::from_ec_der(&pair.serialize_der());
        let settings = Settings {
            issuer: ISSUER.into(),
            discovery_url: None,
            ca_pem: None,
            audiences: vec!["kube".into()],
            algorithms: vec![Algorithm::ES256, Algorithm::RS256],
            mapping: Mapping { username: Source::Claim { claim: "sub".into(), prefix: String::new() }, groups: None, uid: None, extra: vec![], claim_rules: vec![], user_rules: vec![] },
        };
        let sign = move |claims: &Value| {
            let mut header = Header::new(Algorithm::ES256);
            header.kid = Some("k1".into());
            jsonwebtoken::encode(&header, claims, &encoding).unwrap()
        };
        (JwtAuthenticator { settings, keys: keys::RemoteKeys::fixed(ISSUER, vec![key]) }, sign)
    }

    fn now() -> u64 {
        SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
    }

    fn run<T>(f: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
    }

    #[test]
    fn signature_times_and_audience_are_checked() {
        let (authn, sign) = authenticator();
        let claims = |extra: Value| {
            let mut c = json!({"iss": ISSUER, "sub": "alice", "aud": ["other", "kube"], "exp": now() + 60});
            c.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            c
        };
        run(async {
            assert_eq!(authn.authenticate(&sign(&claims(json!({})))).await.unwrap().unwrap().name, "alice");
            let other_issuer = sign(&json!({"iss": "https://elsewhere", "sub": "a", "aud": "kube", "exp": now() + 60}));
            assert_eq!(authn.authenticate(&other_issuer).await, Ok(None), "another issuer's token is not this one's to judge");
            let expired = authn.authenticate(&sign(&claims(json!({"exp": now() - 1})))).await.unwrap_err();
            assert!(expired.contains("token is expired"), "{expired}");
            let no_exp = sign(&json!({"iss": ISSUER, "sub": "a", "aud": "kube"}));
            assert!(authn.authenticate(&no_exp).await.unwrap_err().contains("no expiry"));
            let early = authn.authenticate(&sign(&claims(json!({"nbf": now() + 3600})))).await.unwrap_err();
            assert!(early.contains("before the nbf"), "{early}");
            assert!(authn.authenticate(&sign(&claims(json!({"nbf": now() + 60})))).await.is_ok(), "five minutes of leeway");
            let audience = authn.authenticate(&sign(&claims(json!({"aud": "someone"})))).await.unwrap_err();
            assert_eq!(audience, r#"oidc: expected audience in ["kube"] got ["someone"]"#);
            let rs = {
                let mut h = Header::new(Algorithm::HS256);
                h.kid = Some("k1".into());
                jsonwebtoken::encode(&h, &claims(json!({})), &EncodingKey::from_secret(b"k")).unwrap()
            };
            assert!(authn.authenticate(&rs).await.unwrap_err().contains("unsupported algorithm"));
        });
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Arbitrary text is refused or ignored, never accepted, never a panic.
        #[test]
        fn arbitrary_tokens_never_authenticate(token in "\\PC{0,300}", dots in proptest::collection::vec("[A-Za-z0-9_-]{0,80}", 3)) {
            let (authn, _) = authenticator();
            let glued = dots.join(".");
            run(async {
                prop_assert!(!matches!(authn.authenticate(&token).await, Ok(Some(_))));
                prop_assert!(!matches!(authn.authenticate(&glued).await, Ok(Some(_))));
                Ok(())
            })?;
        }

        /// Any change to a good token's bytes makes it fail.
        #[test]
        fn altered_tokens_never_authenticate(at in any::<prop::sample::Index>(), with in any::<u8>()) {
            let (authn, sign) = authenticator();
            let good = sign(&json!({"iss": ISSUER, "sub": "alice", "aud": "kube", "exp": now() + 60}));
            let mut bytes = good.clone().into_bytes();
            let i = at.index(bytes.len());
            bytes[i] = with;
            let altered = String::from_utf8_lossy(&bytes).into_owned();
            run(async {
                if altered != good {
                    prop_assert!(!matches!(authn.authenticate(&altered).await, Ok(Some(_))), "accepted {}", altered);
                }
                Ok(())
            })?;
        }
    }
}
