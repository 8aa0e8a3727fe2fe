//! The flags of access control, as kube-apiserver's authentication and authorization options
//! name them; the server's command line takes them in whole.

use std::path::PathBuf;
use std::time::Duration;

use machinery::go_duration::parse_duration;

/// Who a request is: the authenticators and service-account tokens.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Authentication")]
pub struct AuthenticationOptions {
    /// Anonymous requests (no credentials) act as `system:anonymous`; on by default, always
    /// off with the AlwaysAllow authorizer. Off, they are 401.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub anonymous_auth: Option<bool>,

    /// Static bearer tokens: a CSV file of `token,user,uid[,"group1,group2"]` lines.
    #[arg(long)]
    pub token_auth_file: Option<PathBuf>,

    /// A kubeconfig naming the webhook bearer tokens are sent to in a TokenReview.
    #[arg(long)]
    pub authentication_token_webhook_config_file: Option<PathBuf>,

    /// The TokenReview version sent to the token webhook (v1 or v1beta1).
    #[arg(long, default_value = "v1beta1")]
    pub authentication_token_webhook_version: String,

    /// How long the token webhook's answers are kept.
    #[arg(long, default_value = "2m", value_parser = parse_duration)]
    pub authentication_token_webhook_cache_ttl: Duration,

    /// An `AuthenticationConfiguration` file (JWT authenticators, anonymous access), reloaded
    /// when it changes; not together with `--oidc-*` or `--anonymous-auth`.
    #[arg(long)]
    pub authentication_config: Option<PathBuf>,

    /// OIDC: the issuer's https URL (discovery root); ID tokens it issues authenticate.
    #[arg(long)]
    pub oidc_issuer_url: Option<String>,

    /// OIDC: the audience (client id) tokens must be issued to.
    #[arg(long)]
    pub oidc_client_id: Option<String>,

    /// OIDC: the claim that names the user (default `sub`).
    #[arg(long)]
    pub oidc_username_claim: Option<String>,

    /// OIDC: put before user names (`-` for none); by default `ISSUER#` unless the claim is
    /// `email`.
    #[arg(long)]
    pub oidc_username_prefix: Option<String>,

    /// OIDC: the claim holding the user's groups (a string or a list of strings).
    #[arg(long)]
    pub oidc_groups_claim: Option<String>,

    /// OIDC: put before every group.
    #[arg(long)]
    pub oidc_groups_prefix: Option<String>,

    /// OIDC: `claim=value` a token must carry (repeatable, or comma separated).
    #[arg(long, value_delimiter = ',')]
    pub oidc_required_claim: Vec<String>,

    /// OIDC: the CA (PEM) the issuer's certificate is checked against; this machine's roots
    /// otherwise.
    #[arg(long)]
    pub oidc_ca_file: Option<PathBuf>,

    /// OIDC: the signing algorithms accepted (default RS256).
    #[arg(long, value_delimiter = ',')]
    pub oidc_signing_algs: Vec<String>,

    /// Authenticating proxy: request headers naming the user, tried in order.
    #[arg(long, value_delimiter = ',')]
    pub requestheader_username_headers: Vec<String>,

    /// Authenticating proxy: request headers whose values are groups.
    #[arg(long, value_delimiter = ',')]
    pub requestheader_group_headers: Vec<String>,

    /// Authenticating proxy: prefixes of request headers carrying extra user attributes.
    #[arg(long, value_delimiter = ',')]
    pub requestheader_extra_headers_prefix: Vec<String>,

    /// Authenticating proxy: the CA (PEM) the proxy's client certificate must verify against
    /// before its headers are believed.
    #[arg(long)]
    pub requestheader_client_ca_file: Option<PathBuf>,

    /// Authenticating proxy: the Common Names its client certificate may have (any, if empty).
    #[arg(long, value_delimiter = ',')]
    pub requestheader_allowed_names: Vec<String>,

    /// Bootstrap tokens (Secrets `kube-system/bootstrap-token-ID`) authenticate, and the
    /// leader runs their cleaner and signer.
    #[arg(long)]
    pub enable_bootstrap_token_auth: bool,

    /// Issuer of service-account tokens (repeatable): the first signs new tokens, all are
    /// accepted. `https://kubernetes.default.svc.cluster.local` when not given.
    #[arg(long)]
    pub service_account_issuer: Vec<String>,

    /// Private key (PEM, RSA or ECDSA) service-account tokens are signed with;
    /// `DATA_DIR/pki/sa.key` (generated on first start) when not given.
    #[arg(long)]
    pub service_account_signing_key_file: Option<PathBuf>,

    /// Public or private keys (PEM, repeatable) service-account tokens are checked against,
    /// besides the signing key's; the serving key when none is given.
    #[arg(long)]
    pub service_account_key_file: Vec<PathBuf>,

    /// Audiences a token must target to act on this server (comma list); the issuers when
    /// not given.
    #[arg(long, value_delimiter = ',')]
    pub api_audiences: Vec<String>,

    /// Longest life a requested service-account token gets (at least 1h); unlimited when
    /// not given.
    #[arg(long, value_parser = parse_duration)]
    pub service_account_max_token_expiration: Option<Duration>,

    /// Pod-bound tokens requested for 3607 s (as kubelets do) live a year, with a
    /// `warnafter` claim at the hour.
    #[arg(long, default_value_t = true, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub service_account_extend_token_expiration: bool,

    /// A token is accepted only while its service account (and the pod, secret or node it is
    /// bound to) still exists with the same uid.
    #[arg(long, default_value_t = true, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub service_account_lookup: bool,

    /// The key set's URL in the issuer discovery document; this server's
    /// `/openid/v1/jwks` when not given.
    #[arg(long)]
    pub service_account_jwks_uri: Option<String>,
}

/// What a request may do: the authorizers.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Authorization")]
pub struct AuthorizationOptions {
    /// Authorizers to ask, in order (comma list): AlwaysAllow, AlwaysDeny, ABAC, Node, RBAC,
    /// Webhook. Node,RBAC when neither this nor --authorization-config is given.
    #[arg(long)]
    pub authorization_mode: Option<String>,

    /// The ABAC mode's policy file: one JSON policy per line.
    #[arg(long)]
    pub authorization_policy_file: Option<PathBuf>,

    /// The Webhook mode's kubeconfig: where the webhook is and how to reach it.
    #[arg(long)]
    pub authorization_webhook_config_file: Option<PathBuf>,

    /// The SubjectAccessReview version the Webhook mode sends (v1 or v1beta1; v1beta1 when unset).
    #[arg(long)]
    pub authorization_webhook_version: Option<String>,

    /// How long the Webhook mode keeps an "allowed" answer (5m when unset).
    #[arg(long)]
    pub authorization_webhook_cache_authorized_ttl: Option<String>,

    /// How long the Webhook mode keeps a refusal (30s when unset).
    #[arg(long)]
    pub authorization_webhook_cache_unauthorized_ttl: Option<String>,

    /// An AuthorizationConfiguration file (apiserver.config.k8s.io/v1) describing the chain,
    /// reloaded when it changes; excludes --authorization-mode and --authorization-webhook-*.
    #[arg(long)]
    pub authorization_config: Option<PathBuf>,
}

/// Both groups on a command line of their own, for tests.
#[cfg(test)]
#[derive(clap::Parser)]
pub(crate) struct Flags {
    #[command(flatten)]
    pub authentication: AuthenticationOptions,
    #[command(flatten)]
    pub authorization: AuthorizationOptions,
}
