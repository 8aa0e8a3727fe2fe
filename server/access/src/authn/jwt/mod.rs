//! JWT (OIDC ID token) authentication: a token whose `iss` names a configured issuer is
//! verified against that issuer's keys ([`keys`]) with one of the allowed algorithms (never
//! `none`, never HMAC), must not be expired (`exp` is required), nor used before its `nbf`
//! (five minutes' leeway, as go-oidc), must be issued to one of the configured audiences, and
//! then passes the claim rules and mappings ([`claims`]). The set of authenticators is replaced
//! whole when `--authentication-config` is reloaded.

pub mod claims;
pub mod es512;
pub mod keys;

use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::{Algorithm, Validation};
use serde::Deserialize;
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
    /// Signing algorithms accepted, by their JOSE names (`RS256`, `ES512`, ...).
    pub algorithms: Vec<String>,
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
    pub async fn authenticate(&self, token: &str) -> Result<Option<crate::UserInfo>, String> {
        if untrusted_issuer(token).as_deref() != Some(self.settings.issuer.as_str()) {
            return Ok(None);
        }
        let claims = self.verify(token).await.map_err(|e| format!("oidc: verify token: {e}"))?;
        self.check_audience(&claims)?;
        self.settings.mapping.user(&claims).map(Some)
    }

    /// The token's claims once its signature, algorithm and times are checked.
    async fn verify(&self, token: &str) -> Result<Value, String> {
        let header = untrusted_header(token).ok_or("malformed jwt: the header is not a JSON object naming its algorithm")?;
        if !self.settings.algorithms.contains(&header.alg) {
            return Err(format!("oidc: id token signed with unsupported algorithm, expected {:?} got {:?}", self.settings.algorithms, header.alg));
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

/// A token's JOSE header, read before its signature is checked.
#[derive(Deserialize)]
struct TokenHeader {
    alg: String,
    kid: Option<String>,
}

fn untrusted_header(token: &str) -> Option<TokenHeader> {
    let first = token.split('.').next()?;
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(first.trim_end_matches('=')).ok()?).ok()
}

/// Whether `key` verifies `token`: `Some(claims)`, `Some(Err)` when it is the right kind of key
/// and the token fails, `None` when the key is of another kind than the algorithm.
fn verify_with(token: &str, alg: &str, key: &keys::Verifying) -> Option<Result<Value, String>> {
    match (key, alg) {
        (keys::Verifying::Es512(k), "ES512") => {
            let (input, signature) = token.rsplit_once('.')?;
            if !es512::verify(input, signature, k) {
                return Some(Err("failed to verify signature: InvalidSignature".into()));
            }
            let payload = input.split('.').nth(1)?;
            let claims = URL_SAFE_NO_PAD.decode(payload).ok().and_then(|b| serde_json::from_slice::<Value>(&b).ok()).filter(Value::is_object);
            Some(claims.ok_or_else(|| "malformed jwt: the payload is not a JSON object".to_string()))
        }
        (keys::Verifying::Jwt(k), alg) if alg != "ES512" => {
            let alg: Algorithm = alg.parse().ok()?;
            let mut validation = Validation::new(alg);
            validation.validate_exp = false;
            validation.validate_nbf = false;
            validation.validate_aud = false;
            validation.required_spec_claims.clear();
            Some(jsonwebtoken::decode::<Value>(token, k, &validation).map(|d| d.claims).map_err(|e| match e.kind() {
                jsonwebtoken::errors::ErrorKind::InvalidSignature | jsonwebtoken::errors::ErrorKind::InvalidAlgorithm | jsonwebtoken::errors::ErrorKind::InvalidKeyFormat => {
                    format!("failed to verify signature: {e}")
                }
                _ => format!("malformed jwt: {e}"),
            }))
        }
        _ => None,
    }
}

fn try_keys(token: &str, header: &TokenHeader, keys: &[keys::Key]) -> Found {
    let candidates = keys.iter().filter(|k| match (&header.kid, &k.kid) {
        (Some(want), Some(have)) => want == have,
        _ => true,
    });
    let named = header.kid.as_ref().is_some_and(|kid| keys.iter().any(|k| k.kid.as_ref() == Some(kid)));
    let mut last = None;
    for key in candidates {
        match verify_with(token, &header.alg, &key.key) {
            Some(Ok(claims)) => return Found::Valid(claims),
            Some(Err(e)) => last = Some(e),
            None => {}
        }
    }
    match last {
        Some(e) if named || e.starts_with("malformed") => Found::Invalid(e),
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
        let key = keys::Key { kid: Some("k1".into()), key: keys::Verifying::Jwt(DecodingKey::from_ec_der(pair.public_key_raw())) };
        let encoding = EncodingKey::from_ec_der(&pair.serialize_der());
        let settings = Settings {
            issuer: ISSUER.into(),
            discovery_url: None,
            ca_pem: None,
            audiences: vec!["kube".into()],
            algorithms: vec!["ES256".into(), "RS256".into(), "ES512".into()],
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

    #[test]
    fn es512_tokens_verify_with_p521_keys() {
        let (jwk, sign) = es512::tests::key("p521");
        let (mut authn, _) = authenticator();
        authn.keys = keys::RemoteKeys::fixed(ISSUER, keys::parse_key_set(&json!({"keys": [jwk]})).unwrap());
        let token = |claims: &Value| {
            let input = format!("{}.{}", URL_SAFE_NO_PAD.encode(br#"{"alg":"ES512","kid":"p521"}"#), URL_SAFE_NO_PAD.encode(claims.to_string()));
            format!("{input}.{}", sign(&input))
        };
        let good = token(&json!({"iss": ISSUER, "sub": "alice", "aud": "kube", "exp": now() + 60}));
        run(async {
            assert_eq!(authn.authenticate(&good).await.unwrap().unwrap().name, "alice");
            let mut forged = good.clone();
            forged.replace_range(forged.len() - 4.., "AAAA");
            assert!(authn.authenticate(&forged).await.is_err());
            authn.settings.algorithms.retain(|a| a != "ES512");
            assert!(authn.authenticate(&good).await.unwrap_err().contains("unsupported algorithm"));
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
