//! Authentication: who a request is, as kube-apiserver's chain decides it. An authenticating
//! proxy's headers first ([`request_header`], only on a connection whose certificate the proxy CA
//! verified), then a client certificate of the client CA, then a bearer token
//! (`Authorization: Bearer ...`) offered to each token authenticator in turn, the first that
//! knows it deciding ([`TokenAuthenticator`], one per method: static tokens, bootstrap tokens,
//! service-account tokens, JWT issuers ([`jwt`]), a token webhook). A token none accepts is 401,
//! even with anonymous access on; no credentials at all is `system:anonymous` when anonymous
//! access is on for the path ([`config::Anonymous`]), else 401. Successful token
//! authentications are cached briefly ([`cache`]). `--authentication-config` is reloaded when
//! it changes ([`reload`]).

pub mod bootstrap_token;
pub mod cache;
pub mod config;
pub mod jwt;
pub mod loopback;
pub mod reload;
pub mod request_header;
pub mod x509;
pub mod service_account;
pub mod token_file;
pub mod webhook;

use std::sync::{Arc, RwLock};

use http::{header, HeaderMap};

use super::serviceaccount::Tokens;
use super::user::{UserInfo, ALL_AUTHENTICATED, CREDENTIAL_ID};
use machinery::error::ApiError;
use crate::authn::x509::{ClientIdentity, ProxyIdentity};
use config::Anonymous;
use request_header::RequestHeader;

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
    proxy: Option<RequestHeader>,
    tokens: Vec<Box<dyn TokenAuthenticator>>,
    /// From `--anonymous-auth` or the configuration file's `anonymous` section.
    anonymous: Arc<RwLock<Anonymous>>,
    /// The audiences of this server (`--api-audiences`).
    api_audiences: Vec<String>,
    cache: cache::TokenCache,
}

/// What a request carries besides its headers: what the TLS layer learned of the client's
/// certificate, or the identity of an in-process request.
#[derive(Default, Clone, Copy)]
pub struct Credentials<'a> {
    /// A client certificate verified against the client CA.
    pub client: Option<&'a ClientIdentity>,
    /// A client certificate verified against the proxy CA.
    pub proxy: Option<&'a ProxyIdentity>,
    /// The identity of a request the server makes to itself.
    pub loopback: Option<&'a loopback::Loopback>,
}

impl Authenticator {
    /// The user a request for `path` acts as (before impersonation). The proxy's headers are
    /// removed from `headers` whatever the outcome.
    pub async fn authenticate(&self, headers: &mut HeaderMap, path: &str, credentials: Credentials<'_>) -> Result<UserInfo, ApiError> {
        if let Some(loopback) = credentials.loopback {
            return Ok(loopback.0.clone());
        }
        if let Some(proxy) = &self.proxy {
            let user = credentials.proxy.and_then(|p| proxy.user(headers, p));
            proxy.strip(headers);
            if let Some(user) = user {
                return Ok(user);
            }
        }
        if let Some(id) = credentials.client {
            let mut user = UserInfo::authenticated(id.user.clone(), id.groups.clone());
            user.uid = id.uid.clone();
            user.extra.insert(CREDENTIAL_ID.into(), vec![id.credential_id.clone()]);
            return Ok(user);
        }
        if let Some(token) = bearer(headers) {
            return self.token(token, &[]).await.map(|a| a.user).map_err(|_| ApiError::Unauthorized);
        }
        // A proxy certificate that named nobody is a credential that failed.
        if headers.contains_key(header::AUTHORIZATION) || credentials.proxy.is_some() {
            return Err(ApiError::Unauthorized);
        }
        if self.anonymous.read().unwrap_or_else(|p| p.into_inner()).allows(path) {
            return Ok(UserInfo::anonymous());
        }
        Err(ApiError::Unauthorized)
    }

    /// The proxy settings, for `extension-apiserver-authentication`.
    pub fn proxy(&self) -> Option<&RequestHeader> {
        self.proxy.as_ref()
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

/// The authenticators the flags (and `--authentication-config`) configure.
pub fn build(args: &crate::options::AuthenticationOptions, authorization_mode: Option<&str>, tokens: Arc<Tokens>, store: raft_store::Store) -> anyhow::Result<Authenticator> {
    let mut methods: Vec<Box<dyn TokenAuthenticator>> = Vec::new();
    if let Some(path) = &args.token_auth_file {
        methods.push(Box::new(token_file::TokenFile::load(path).map_err(anyhow::Error::msg)?));
    }
    let api_audiences = tokens.api_audiences.clone();
    let sa_issuers = tokens.issuers.clone();
    if args.enable_bootstrap_token_auth {
        methods.push(Box::new(bootstrap_token::BootstrapTokens { store: store.clone() }));
    }
    methods.push(Box::new(service_account::ServiceAccountTokens { tokens, store }));
    // As kube-apiserver: anonymous access never goes with an AlwaysAllow authorizer.
    let always_allow = authorization_mode.is_some_and(|m| m.split(',').any(|m| m.trim() == "AlwaysAllow"));
    if always_allow && args.anonymous_auth == Some(true) {
        tracing::warn!("anonymous access is not allowed with the AlwaysAllow authorizer; turning it off");
    }
    let default_anonymous = Anonymous { enabled: args.anonymous_auth.unwrap_or(true) && !always_allow, paths: Vec::new() };
    let jwts = Arc::new(jwt::Jwts::default());
    let anonymous = match &args.authentication_config {
        Some(path) => {
            if config::oidc_flags_set(args) {
                anyhow::bail!("authentication-config file and oidc-* flags are mutually exclusive");
            }
            let data = std::fs::read(path).map_err(|e| anyhow::anyhow!("reading --authentication-config {}: {e}", path.display()))?;
            let parsed = config::parse(&data, &sa_issuers).map_err(|e| anyhow::anyhow!("--authentication-config {}: {e}", path.display()))?;
            if parsed.anonymous.is_some() && args.anonymous_auth.is_some() {
                anyhow::bail!("anonymous is configured in the authentication configuration file and --anonymous-auth flag is set");
            }
            let anonymous = Arc::new(RwLock::new(parsed.anonymous.clone().unwrap_or_else(|| default_anonymous.clone())));
            jwts.replace(parsed.jwt.into_iter().map(jwt::JwtAuthenticator::start).collect());
            let reloader = reload::Reloader { path: path.clone(), data, sa_issuers, jwts: jwts.clone(), anonymous: anonymous.clone(), default_anonymous, flag_set: args.anonymous_auth.is_some() };
            reload::spawn(reloader);
            anonymous
        }
        None => {
            if let Some(settings) = config::from_oidc_flags(args, &sa_issuers).map_err(anyhow::Error::msg)? {
                jwts.replace(vec![jwt::JwtAuthenticator::start(settings)]);
            }
            Arc::new(RwLock::new(default_anonymous))
        }
    };
    methods.push(Box::new(jwts));
    if let Some(path) = &args.authentication_token_webhook_config_file {
        let version = &args.authentication_token_webhook_version;
        let ttl = args.authentication_token_webhook_cache_ttl;
        methods.push(Box::new(webhook::TokenWebhook::load(path, version, ttl, api_audiences.clone()).map_err(anyhow::Error::msg)?));
    }
    let proxy = RequestHeader::from_args(args).map_err(anyhow::Error::msg)?;
    Ok(Authenticator { proxy, tokens: methods, anonymous, api_audiences, cache: cache::TokenCache::default() })
}

/// The token of an `Authorization: Bearer <token>` header.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}
