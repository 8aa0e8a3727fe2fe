//! An issuer's signing keys. OIDC discovery (`<issuer>/.well-known/openid-configuration`, or the
//! configured `discoveryURL` as written) must name the issuer and gives the `jwks_uri`; the key
//! set is fetched from there over TLS. Discovery is retried every [`RETRY`] until it succeeds
//! (until then the authenticator is not initialized, as in kube-apiserver). A token naming a key
//! the set lacks makes it fetch the set again, at most once per [`MIN_REFRESH`], so keys rotate
//! without a restart and no request calls the issuer otherwise.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::DecodingKey;
use serde_json::Value;

use machinery::webhook::Endpoint;

/// Between failed discovery attempts.
const RETRY: Duration = Duration::from_secs(10);
/// Shortest time between two fetches of the key set.
pub const MIN_REFRESH: Duration = Duration::from_secs(5);
/// How long one call to the issuer may take.
const TIMEOUT: Duration = Duration::from_secs(10);

/// One verification key of the set.
pub struct Key {
    pub kid: Option<String>,
    pub key: Verifying,
}

/// How a key verifies.
pub enum Verifying {
    /// Through the JWT library (RSA, PSS, P-256, P-384).
    Jwt(DecodingKey),
    /// P-521, which the library lacks.
    Es512(super::es512::Es512Key),
}

/// Where the keys come from and what was last fetched.
struct Inner {
    issuer: String,
    discovery_url: String,
    ca_pem: Option<String>,
    state: RwLock<State>,
    /// Held while fetching, so that concurrent misses fetch once.
    fetching: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct State {
    jwks_uri: Option<String>,
    keys: Option<Arc<Vec<Key>>>,
    fetched: Option<Instant>,
    /// The last failure, for the not-initialized error.
    error: Option<String>,
}

/// The keys of one issuer; discovery runs in the background until it succeeds, and stops when
/// this is dropped.
pub struct RemoteKeys {
    inner: Arc<Inner>,
    discovery: Option<tokio::task::AbortHandle>,
}

impl Drop for RemoteKeys {
    fn drop(&mut self) {
        if let Some(task) = &self.discovery {
            task.abort();
        }
    }
}

impl RemoteKeys {
    /// Starts discovery for `issuer`, at `discovery_url` when given, trusting `ca_pem` (this
    /// machine's roots when absent).
    pub fn start(issuer: &str, discovery_url: Option<&str>, ca_pem: Option<String>) -> RemoteKeys {
        let discovery_url = match discovery_url {
            Some(url) => url.to_string(),
            None => format!("{}/.well-known/openid-configuration", issuer.trim_end_matches('/')),
        };
        let inner = Arc::new(Inner {
            issuer: issuer.to_string(),
            discovery_url,
            ca_pem,
            state: RwLock::new(State::default()),
            fetching: tokio::sync::Mutex::new(()),
        });
        let task = inner.clone();
        let discovery = tokio::spawn(async move {
            loop {
                match task.discover().await {
                    Ok(()) => return,
                    Err(e) => {
                        tracing::error!(issuer = %task.issuer, error = %e, "oidc authenticator: initializing plugin");
                        task.state.write().unwrap_or_else(|p| p.into_inner()).error = Some(e);
                    }
                }
                tokio::time::sleep(RETRY).await;
            }
        })
        .abort_handle();
        RemoteKeys { inner, discovery: Some(discovery) }
    }

    /// Keys known from the start, with no issuer to ask (for the verifier's tests).
    #[cfg(test)]
    pub fn fixed(issuer: &str, keys: Vec<Key>) -> RemoteKeys {
        let state = State { keys: Some(Arc::new(keys)), fetched: Some(Instant::now()), ..Default::default() };
        let inner = Inner {
            issuer: issuer.to_string(),
            discovery_url: String::new(),
            ca_pem: None,
            state: RwLock::new(state),
            fetching: tokio::sync::Mutex::new(()),
        };
        RemoteKeys { inner: Arc::new(inner), discovery: None }
    }

    /// The keys, once discovery has succeeded; else why not.
    pub fn keys(&self) -> Result<Arc<Vec<Key>>, String> {
        let state = self.inner.state.read().unwrap_or_else(|p| p.into_inner());
        match (&state.keys, &state.error) {
            (Some(keys), _) => Ok(keys.clone()),
            (None, Some(e)) => Err(format!("oidc: authenticator for issuer {:?} is not initialized: {e}", self.inner.issuer)),
            (None, None) => Err(format!("oidc: authenticator for issuer {:?} is not initialized", self.inner.issuer)),
        }
    }

    /// Whether discovery and the first key fetch have succeeded.
    pub fn ready(&self) -> bool {
        self.inner.state.read().unwrap_or_else(|p| p.into_inner()).keys.is_some()
    }

    /// Fetches the key set again unless that was done less than [`MIN_REFRESH`] ago; returns the
    /// keys as they are afterwards.
    pub async fn refresh(&self) -> Result<Arc<Vec<Key>>, String> {
        let _one = self.inner.fetching.lock().await;
        let (uri, recent) = {
            let state = self.inner.state.read().unwrap_or_else(|p| p.into_inner());
            (state.jwks_uri.clone(), state.fetched.is_some_and(|t| t.elapsed() < MIN_REFRESH))
        };
        if let (Some(uri), false) = (uri, recent) {
            match self.inner.fetch_keys(&uri).await {
                Ok(keys) => self.inner.store_keys(keys),
                Err(e) => {
                    tracing::warn!(issuer = %self.inner.issuer, error = %e, "fetching the issuer's keys failed; the previous keys stay");
                    self.inner.state.write().unwrap_or_else(|p| p.into_inner()).fetched = Some(Instant::now());
                }
            }
        }
        self.keys()
    }
}

impl Inner {
    async fn discover(&self) -> Result<(), String> {
        let document = get_json(&self.discovery_url, self.ca_pem.as_deref()).await?;
        let issuer = document.get("issuer").and_then(Value::as_str).unwrap_or_default();
        if issuer != self.issuer {
            return Err(format!("oidc: issuer did not match the issuer returned by provider, expected {:?} got {issuer:?}", self.issuer));
        }
        let uri = document
            .get("jwks_uri")
            .and_then(Value::as_str)
            .filter(|u| !u.is_empty())
            .ok_or("provider did not return JWKS URL")?
            .to_string();
        let keys = self.fetch_keys(&uri).await?;
        self.state.write().unwrap_or_else(|p| p.into_inner()).jwks_uri = Some(uri);
        self.store_keys(keys);
        Ok(())
    }

    async fn fetch_keys(&self, uri: &str) -> Result<Vec<Key>, String> {
        let set = get_json(uri, self.ca_pem.as_deref()).await?;
        let keys = parse_key_set(&set)?;
        tracing::info!(issuer = %self.issuer, keys = keys.len(), "fetched the issuer's keys");
        Ok(keys)
    }

    fn store_keys(&self, keys: Vec<Key>) {
        let mut state = self.state.write().unwrap_or_else(|p| p.into_inner());
        state.keys = Some(Arc::new(keys));
        state.fetched = Some(Instant::now());
        state.error = None;
    }
}

/// The verification keys of a JSON Web Key Set; keys for encryption, symmetric keys (an issuer's
/// secret has no place in a public set) and keys of types this server cannot verify with are
/// left out.
pub fn parse_key_set(set: &Value) -> Result<Vec<Key>, String> {
    let entries = set.get("keys").and_then(Value::as_array).ok_or("the key set has no \"keys\" list")?;
    Ok(entries
        .iter()
        .filter(|k| k.get("use").and_then(Value::as_str).is_none_or(|u| u == "sig"))
        .filter(|k| k.get("kty").and_then(Value::as_str) != Some("oct"))
        .filter_map(|k| {
            let kid = k.get("kid").and_then(Value::as_str).map(str::to_string);
            if let Some(key) = super::es512::from_jwk(k) {
                return Some(Key { kid, key: Verifying::Es512(key) });
            }
            let jwk: Jwk = serde_json::from_value(k.clone()).ok()?;
            let key = DecodingKey::from_jwk(&jwk).ok()?;
            Some(Key { kid, key: Verifying::Jwt(key) })
        })
        .collect())
}

async fn get_json(url: &str, ca_pem: Option<&str>) -> Result<Value, String> {
    if !url.starts_with("https://") {
        return Err(format!("{url:?}: the issuer must be reached over https"));
    }
    let endpoint = Endpoint::new(url, ca_pem, None, None, None)?;
    let (status, body) = endpoint.get(TIMEOUT).await.map_err(|e| format!("{url}: {e}"))?;
    if !status.is_success() {
        return Err(format!("{url}: {status}: {}", String::from_utf8_lossy(&body[..body.len().min(200)])));
    }
    serde_json::from_slice(&body).map_err(|e| format!("{url}: the answer is not JSON: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_sets_keep_signing_keys_they_can_use() {
        let set = json!({"keys": [
            {"kty": "EC", "crv": "P-256", "kid": "a", "use": "sig",
             "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"},
            {"kty": "EC", "crv": "P-256", "kid": "enc", "use": "enc",
             "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"},
            {"kty": "oct", "kid": "hmac", "k": "c2VjcmV0"},
            {"kty": "unknown", "kid": "x"},
        ]});
        let keys = parse_key_set(&set).unwrap();
        let kids: Vec<_> = keys.iter().map(|k| k.kid.clone().unwrap_or_default()).collect();
        assert_eq!(kids, ["a"]);
        assert!(parse_key_set(&json!({"nokeys": []})).is_err());
    }
}
