//! Authentication: who a request is. A verified client certificate decides first; then a bearer
//! token (`Authorization: Bearer ...`) is offered to each token authenticator in turn, and the
//! first that knows it decides ([`TokenAuthenticator`], one per method). A token none accepts is
//! 401, even with anonymous access on; no credentials at all is `system:anonymous` when anonymous
//! access is on, else 401. Successful token authentications are cached briefly ([`cache`]).

pub mod cache;
pub mod token_file;

use http::{header, HeaderMap};

use super::user::{UserInfo, ALL_AUTHENTICATED};
use crate::error::ApiError;
use crate::tls::ClientIdentity;

/// One way of telling who a bearer token belongs to.
#[async_trait::async_trait]
pub trait TokenAuthenticator: Send + Sync {
    /// The method's name, for logs (never the token).
    fn name(&self) -> &'static str;
    /// The token's user; `Ok(None)` when this method does not know the token.
    async fn authenticate(&self, token: &str) -> Result<Option<UserInfo>, String>;
}

/// The configured methods, in Kubernetes' order.
pub struct Authenticator {
    tokens: Vec<Box<dyn TokenAuthenticator>>,
    anonymous: bool,
    cache: cache::TokenCache,
}

impl Authenticator {
    pub fn new(tokens: Vec<Box<dyn TokenAuthenticator>>, anonymous: bool) -> Authenticator {
        Authenticator { tokens, anonymous, cache: cache::TokenCache::default() }
    }

    /// The user a request acts as (before impersonation).
    pub async fn authenticate(&self, headers: &HeaderMap, certificate: Option<&ClientIdentity>) -> Result<UserInfo, ApiError> {
        if let Some(id) = certificate {
            return Ok(UserInfo::authenticated(id.user.clone(), id.groups.clone()));
        }
        if let Some(token) = bearer(headers) {
            return self.token(token).await.ok_or(ApiError::Unauthorized);
        }
        if headers.contains_key(header::AUTHORIZATION) || !self.anonymous {
            return Err(ApiError::Unauthorized);
        }
        Ok(UserInfo::anonymous())
    }

    /// Whose a bearer token is, if any method knows it (as `TokenReview` asks).
    pub async fn token(&self, token: &str) -> Option<UserInfo> {
        if token.is_empty() {
            return None;
        }
        if let Some(user) = self.cache.get(token) {
            return Some(user);
        }
        for method in &self.tokens {
            match method.authenticate(token).await {
                Ok(Some(mut user)) => {
                    if !user.in_group(ALL_AUTHENTICATED) {
                        user.groups.push(ALL_AUTHENTICATED.into());
                    }
                    self.cache.put(token, &user);
                    return Some(user);
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(method = method.name(), error = %e, "token authentication failed"),
            }
        }
        None
    }
}

/// The authenticators the flags configure.
pub fn build(args: &crate::cli::Args) -> anyhow::Result<Authenticator> {
    let mut tokens: Vec<Box<dyn TokenAuthenticator>> = Vec::new();
    if let Some(path) = &args.token_auth_file {
        tokens.push(Box::new(token_file::TokenFile::load(path).map_err(anyhow::Error::msg)?));
    }
    // As kube-apiserver: anonymous access never goes with an AlwaysAllow authorizer.
    let always_allow = args.authorization_mode.as_deref().is_some_and(|m| m.split(',').any(|m| m.trim() == "AlwaysAllow"));
    if always_allow && args.anonymous_auth == Some(true) {
        tracing::warn!("anonymous access is not allowed with the AlwaysAllow authorizer; turning it off");
    }
    Ok(Authenticator::new(tokens, args.anonymous_auth.unwrap_or(true) && !always_allow))
}

/// The token of an `Authorization: Bearer <token>` header.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}
