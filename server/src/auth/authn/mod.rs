//! Authentication: who a request is. A verified client certificate decides first; then a bearer
//! token (`Authorization: Bearer ...`) is offered to each token authenticator in turn, and the
//! first that knows it decides ([`TokenAuthenticator`], one per method: static tokens, bootstrap
//! tokens, service-account tokens, a token webhook). A token none accepts is
//! 401, even with anonymous access on; no credentials at all is `system:anonymous` when anonymous
//! access is on, else 401. Successful token authentications are cached briefly ([`cache`]).

pub mod bootstrap_token;
pub mod cache;
pub mod service_account;
pub mod token_file;
pub mod webhook;

use std::sync::Arc;

use http::{header, HeaderMap};

use super::serviceaccount::Tokens;
use super::user::{UserInfo, ALL_AUTHENTICATED};
use crate::error::ApiError;
use crate::tls::ClientIdentity;

/// Who a token belongs to, and the audiences it is good for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authenticated {
    pub user: UserInfo,
    pub audiences: Vec<String>,
}

/// One way of telling who a bearer token belongs to.
#[async_trait::async_trait]
pub trait TokenAuthenticator: Send + Sync {
    /// The method's name, for logs (never the token).
    fn name(&self) -> &'static str;
    /// Whether the method checks audiences itself; others are taken to issue tokens for this
    /// server alone (the API audiences).
    fn audience_aware(&self) -> bool {
        false
    }
    /// The token's user, for one of `audiences`; `Ok(None)` when this method does not know the
    /// token, `Err` when it knows it and refuses it.
    async fn authenticate(&self, token: &str, audiences: &[String]) -> Result<Option<Authenticated>, String>;
}

/// The configured methods, in Kubernetes' order.
pub struct Authenticator {
    tokens: Vec<Box<dyn TokenAuthenticator>>,
    anonymous: bool,
    /// The audiences of this server (`--api-audiences`).
    api_audiences: Vec<String>,
    cache: cache::TokenCache,
}

impl Authenticator {
    pub fn new(tokens: Vec<Box<dyn TokenAuthenticator>>, anonymous: bool, api_audiences: Vec<String>) -> Authenticator {
        Authenticator { tokens, anonymous, api_audiences, cache: cache::TokenCache::default() }
    }

    /// The user a request acts as (before impersonation).
    pub async fn authenticate(&self, headers: &HeaderMap, certificate: Option<&ClientIdentity>) -> Result<UserInfo, ApiError> {
        if let Some(id) = certificate {
            return Ok(UserInfo::authenticated(id.user.clone(), id.groups.clone()));
        }
        if let Some(token) = bearer(headers) {
            return self.token(token, &[]).await.map(|a| a.user).map_err(|_| ApiError::Unauthorized);
        }
        if headers.contains_key(header::AUTHORIZATION) || !self.anonymous {
            return Err(ApiError::Unauthorized);
        }
        Ok(UserInfo::anonymous())
    }

    /// Whose a bearer token is, if any method knows it, for `audiences` (this server's when
    /// empty), as requests and `TokenReview` ask; else why not.
    pub async fn token(&self, token: &str, audiences: &[String]) -> Result<Authenticated, String> {
        if token.is_empty() {
            return Err("token is empty".into());
        }
        let audiences = if audiences.is_empty() { &self.api_audiences } else { audiences };
        if let Some(found) = self.cache.get(token, audiences) {
            return Ok(found);
        }
        let mut errors = Vec::new();
        for method in &self.tokens {
            let result = if method.audience_aware() {
                method.authenticate(token, audiences).await
            } else {
                let ours: Vec<String> = audiences.iter().filter(|a| self.api_audiences.contains(a)).cloned().collect();
                if ours.is_empty() {
                    continue;
                }
                method.authenticate(token, &ours).await.map(|found| found.map(|f| Authenticated { audiences: ours, ..f }))
            };
            match result {
                Ok(Some(mut found)) => {
                    if !found.user.in_group(ALL_AUTHENTICATED) {
                        found.user.groups.push(ALL_AUTHENTICATED.into());
                    }
                    self.cache.put(token, audiences, &found);
                    return Ok(found);
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::info!(method = method.name(), error = %e, "token refused");
                    errors.push(e);
                }
            }
        }
        Err(if errors.is_empty() { "invalid bearer token".into() } else { format!("[invalid bearer token, {}]", errors.join(", ")) })
    }
}

/// The authenticators the flags configure.
pub fn build(args: &crate::cli::Args, tokens: Arc<Tokens>, store: raft_store::Store) -> anyhow::Result<Authenticator> {
    let mut methods: Vec<Box<dyn TokenAuthenticator>> = Vec::new();
    if let Some(path) = &args.token_auth_file {
        methods.push(Box::new(token_file::TokenFile::load(path).map_err(anyhow::Error::msg)?));
    }
    let api_audiences = tokens.api_audiences.clone();
    if args.enable_bootstrap_token_auth {
        methods.push(Box::new(bootstrap_token::BootstrapTokens { store: store.clone() }));
    }
    methods.push(Box::new(service_account::ServiceAccountTokens { tokens, store }));
    if let Some(path) = &args.authentication_token_webhook_config_file {
        let version = &args.authentication_token_webhook_version;
        let ttl = args.authentication_token_webhook_cache_ttl;
        methods.push(Box::new(webhook::TokenWebhook::load(path, version, ttl, api_audiences.clone()).map_err(anyhow::Error::msg)?));
    }
    // As kube-apiserver: anonymous access never goes with an AlwaysAllow authorizer.
    let always_allow = args.authorization_mode.as_deref().is_some_and(|m| m.split(',').any(|m| m.trim() == "AlwaysAllow"));
    if always_allow && args.anonymous_auth == Some(true) {
        tracing::warn!("anonymous access is not allowed with the AlwaysAllow authorizer; turning it off");
    }
    Ok(Authenticator::new(methods, args.anonymous_auth.unwrap_or(true) && !always_allow, api_audiences))
}

/// The token of an `Authorization: Bearer <token>` header.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}
