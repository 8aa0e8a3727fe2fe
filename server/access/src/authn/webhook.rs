//! Webhook token authentication (`--authentication-token-webhook-config-file`): a bearer token
//! is sent in a `TokenReview` (v1beta1 unless `--authentication-token-webhook-version v1`) to
//! the service the kubeconfig names, with the audiences asked for; its answer (authenticated or
//! not) is kept for `--authentication-token-webhook-cache-ttl` (2 minutes), keyed by the
//! token's hash. A webhook that cannot be reached, or answers in another TokenReview version,
//! refuses the token (401), after a few tries.

use std::time::Duration;

use serde::Deserialize;
use serde_json::json;
use sha2::{Digest, Sha256};

use super::{Authenticated, TokenAuthenticator};
use crate::UserInfo;
use machinery::webhook::expiring::Expiring;
use machinery::webhook::{kubeconfig, CallError, Endpoint};

/// How long one call may take.
const TIMEOUT: Duration = Duration::from_secs(30);
/// Answers kept at most; when full, expired ones go, then all.
const CACHE_ENTRIES: usize = 8192;
const ATTEMPTS: u32 = 3;
const FIRST_BACKOFF: Duration = Duration::from_millis(500);

#[derive(Debug, Clone, Default, Deserialize)]
struct ReviewUser {
    #[serde(default)]
    username: String,
    #[serde(default)]
    uid: String,
    #[serde(default)]
    groups: Vec<String>,
    #[serde(default)]
    extra: std::collections::BTreeMap<String, Vec<String>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct ReviewStatus {
    #[serde(default)]
    authenticated: bool,
    #[serde(default)]
    user: ReviewUser,
    #[serde(default)]
    audiences: Vec<String>,
    #[serde(default)]
    error: String,
}

#[derive(Deserialize)]
struct Review {
    #[serde(default, rename = "apiVersion")]
    api_version: String,
    #[serde(default)]
    status: ReviewStatus,
}

pub struct TokenWebhook {
    endpoint: Endpoint,
    version: String,
    ttl: Duration,
    /// This server's audiences, which an answer without audiences is taken to grant.
    api_audiences: Vec<String>,
    cache: Expiring<[u8; 32], ReviewStatus>,
}

impl TokenWebhook {
    pub fn load(path: &std::path::Path, version: &str, ttl: Duration, api_audiences: Vec<String>) -> Result<TokenWebhook, String> {
        if !matches!(version, "v1" | "v1beta1") {
            return Err(format!("--authentication-token-webhook-version must be v1 or v1beta1, not {version:?}"));
        }
        let endpoint = kubeconfig::load(path)?;
        Ok(TokenWebhook { endpoint, version: version.to_string(), ttl, api_audiences, cache: Expiring::new(CACHE_ENTRIES) })
    }

    fn key(token: &str, audiences: &[String]) -> [u8; 32] {
        let mut hash = Sha256::new();
        hash.update(token.as_bytes());
        for a in audiences {
            hash.update([0]);
            hash.update(a.as_bytes());
        }
        hash.finalize().into()
    }

    /// Sends the review, trying again on failures that may pass (resets, 429, 5xx).
    async fn ask(&self, token: &str, audiences: &[String]) -> Result<ReviewStatus, String> {
        let api_version = format!("authentication.k8s.io/{}", self.version);
        let body = json!({
            "apiVersion": api_version,
            "kind": "TokenReview",
            "spec": {"token": token, "audiences": audiences},
        });
        let body = serde_json::to_vec(&body).map_err(|e| e.to_string())?;
        let mut backoff = FIRST_BACKOFF;
        let mut attempt = 1;
        loop {
            let (message, retry) = match self.endpoint.post_json(body.clone(), TIMEOUT).await {
                Ok((status, answer)) if status.is_success() => {
                    let review: Review = serde_json::from_slice(&answer).map_err(|e| format!("decoding the webhook's TokenReview: {e}"))?;
                    if review.api_version != api_version {
                        return Err(format!("the token webhook answered with apiVersion {:?}, not {api_version:?}", review.api_version));
                    }
                    return Ok(review.status);
                }
                Ok((status, _)) => (format!("the token webhook answered {}", status.as_u16()), status.as_u16() == 429 || status.as_u16() >= 500),
                Err(e @ CallError::Timeout(_)) => (e.to_string(), false),
                Err(e @ CallError::Transport(_)) => {
                    let reset = e.to_string().contains("reset");
                    (e.to_string(), reset)
                }
            };
            if !retry || attempt >= ATTEMPTS {
                return Err(message);
            }
            attempt += 1;
            tokio::time::sleep(backoff).await;
            backoff = backoff.mul_f32(1.5);
        }
    }
}

#[async_trait::async_trait]
impl TokenAuthenticator for TokenWebhook {
    fn name(&self) -> &'static str {
        "webhook"
    }

    fn audience_aware(&self) -> bool {
        true
    }

    async fn authenticate(&self, token: &str, audiences: &[String]) -> Result<Option<Authenticated>, String> {
        let key = TokenWebhook::key(token, audiences);
        let status = match self.cache.get(&key) {
            Some(status) => status,
            None => {
                let status = self.ask(token, audiences).await?;
                self.cache.insert(key, status.clone(), self.ttl);
                status
            }
        };
        if !status.authenticated {
            let error = if status.error.is_empty() { "the token webhook did not authenticate the token".to_string() } else { status.error };
            return Err(error);
        }
        let granted_by = if status.audiences.is_empty() { &self.api_audiences } else { &status.audiences };
        let granted: Vec<String> = audiences.iter().filter(|a| granted_by.contains(a)).cloned().collect();
        if granted.is_empty() {
            return Err(format!("the token webhook's audiences {granted_by:?} are not among the target audiences {audiences:?}"));
        }
        let u = status.user;
        if u.username.is_empty() {
            return Err("the token webhook authenticated the token without a user name".into());
        }
        let user = UserInfo { name: u.username, uid: u.uid, groups: u.groups, extra: u.extra };
        Ok(Some(Authenticated { user, audiences: granted }))
    }
}

