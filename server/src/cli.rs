//! Command-line flags, named as kube-apiserver names them where one exists.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

use machinery::go_duration::parse_duration;

/// A Kubernetes API server whose storage is a Raft log.
#[derive(Debug, Clone, Parser)]
#[command(name = "apiserver", version, about)]
pub struct Args {
    /// Administration commands; without one, the node runs.
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Directory holding this node's Raft log, snapshots, certificates and admin.kubeconfig.
    #[arg(long, default_value = "apiserver-data", global = true)]
    pub data_dir: PathBuf,

    /// Port to serve HTTPS on.
    #[arg(long, default_value_t = 6443)]
    pub secure_port: u16,

    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind_address: String,

    /// Serving certificate (PEM); generated under the data directory when absent.
    #[arg(long)]
    pub tls_cert_file: Option<PathBuf>,

    /// Key of the serving certificate (PEM).
    #[arg(long)]
    pub tls_private_key_file: Option<PathBuf>,

    /// CA bundle that client certificates are verified against; the generated CA when absent.
    #[arg(long)]
    pub client_ca_file: Option<PathBuf>,

    /// CIDR from which Service cluster IPs are allocated.
    #[arg(long, default_value = "10.96.0.0/12")]
    pub service_cluster_ip_range: String,

    /// Feature gates, `Name=true,Other=false`.
    #[arg(long, default_value = "")]
    pub feature_gates: String,

    /// Longest a request that is not long-running (watches are) may take; a request's own
    /// `timeout` parameter may only shorten it. Past it the answer is 504.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub request_timeout: Duration,

    /// API Priority and Fairness: requests classified by FlowSchema and queued per priority
    /// level. Off, the max-in-flight limits apply instead.
    #[arg(long, default_value_t = true, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub enable_priority_and_fairness: bool,

    /// Read-only requests at once (with APF, part of the seats the priority levels share); 0
    /// for no limit.
    #[arg(long, default_value_t = 400)]
    pub max_requests_inflight: usize,

    /// Mutating requests at once (with APF, part of the seats the priority levels share); 0 for
    /// no limit.
    #[arg(long, default_value_t = 200)]
    pub max_mutating_requests_inflight: usize,

    /// How long past revisions (watch history, continue tokens, Exact reads) stay readable.
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    pub history_retention: Duration,

    /// This node's Raft id.
    #[arg(long, default_value_t = 1)]
    pub node_id: u64,

    /// The voters of a new cluster and their peer (Raft) addresses, `1=host:port,2=host:port,...`,
    /// this node among them. Empty: a single node.
    #[arg(long, default_value = "", value_parser = parse_members)]
    pub initial_cluster: Members,

    /// `new` to form a new cluster from `--initial-cluster`; `existing` to rejoin one this node is
    /// already a member of (for example after its data directory was lost).
    #[arg(long, default_value = "new", value_parser = ["new", "existing"])]
    pub initial_cluster_state: String,

    /// Log entries between snapshots of the state; the log before a snapshot is purged, and a
    /// node that fell further behind catches up from the snapshot.
    #[arg(long, default_value_t = 50_000)]
    pub snapshot_count: u64,

    /// Milliseconds between the leader's heartbeats to its followers.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    pub heartbeat_interval: u64,

    /// Milliseconds a follower waits without hearing from a leader before it stands for
    /// election (a random time between this and twice this); more than the heartbeat interval.
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..))]
    pub election_timeout: u64,

    /// Address the peer listener binds to (`host:port`); this node's `--initial-cluster` entry
    /// when absent.
    #[arg(long)]
    pub listen_peer_address: Option<String>,

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

    /// The audit policy (`audit.k8s.io/v1` `Policy`): which requests are audited, at which level.
    #[arg(long)]
    pub audit_policy_file: Option<PathBuf>,

    /// Where audit events are appended, one JSON line each (`-` for standard output); with
    /// `--audit-policy-file`, auditing is on.
    #[arg(long)]
    pub audit_log_path: Option<PathBuf>,

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

    /// The client certificate (PEM) this server presents to extension API servers it proxies
    /// to (APIServices that name a Service); they trust it through their request-header CA.
    #[arg(long, requires = "proxy_client_key_file")]
    pub proxy_client_cert_file: Option<PathBuf>,

    /// The key (PEM) of `--proxy-client-cert-file`.
    #[arg(long, requires = "proxy_client_cert_file")]
    pub proxy_client_key_file: Option<PathBuf>,

    /// Controllers the leader runs, as kube-controller-manager's flag: `*` for the defaults,
    /// `NAME` to add one, `-NAME` to leave one out (`serviceaccount`, `serviceaccount-token`,
    /// `root-ca-cert-publisher`).
    #[arg(long, default_value = "*", value_delimiter = ',')]
    pub controllers: Vec<String>,

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

#[derive(Debug, Clone, clap::Subcommand)]
pub enum Command {
    /// Writes the certificates a node starts with under `--data-dir`/pki (the cluster CA unless
    /// one is there, the serving and admin certificates, the service-account key `sa.key`) and
    /// exits. Copying `pki/ca.crt`, `pki/ca.key` and `pki/sa.key` into each node's directory
    /// gives a cluster one CA and one token signer.
    Certs {
        /// Also write `--data-dir`/admin.kubeconfig for a server at this URL.
        #[arg(long)]
        server: Option<String>,
    },
    /// Lists or changes the members of the cluster, through the peer endpoint of any member,
    /// authenticated with the peer certificate under `--data-dir`.
    Member {
        /// Peer address (`host:port`) of a member.
        #[arg(long)]
        endpoint: String,
        #[command(subcommand)]
        action: MemberAction,
    },
    /// Prints the flags reference (`docs/flags.md`) in Markdown.
    #[command(hide = true)]
    FlagsReference,
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum MemberAction {
    /// The voters and learners with their peer addresses.
    List,
    /// Adds a node as a learner and waits until it has caught up.
    Add { id: u64, peer_address: String },
    /// Makes a learner a voter.
    Promote { id: u64 },
    /// Removes a node from the cluster.
    Remove { id: u64 },
}

/// Node ids and their peer addresses.
pub type Members = std::collections::BTreeMap<u64, String>;

/// Parses `1=host:port,2=host:port`.
pub fn parse_members(s: &str) -> Result<Members, String> {
    let mut members = Members::new();
    for entry in s.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (id, addr) = entry.split_once('=').ok_or_else(|| format!("{entry:?} is not id=host:port"))?;
        let id: u64 = id.trim().parse().map_err(|_| format!("{id:?} is not a node id"))?;
        if id == 0 || !addr.contains(':') {
            return Err(format!("{entry:?} is not id=host:port with a non-zero id"));
        }
        if members.insert(id, addr.trim().to_string()).is_some() {
            return Err(format!("node {id} is listed twice"));
        }
    }
    Ok(members)
}

