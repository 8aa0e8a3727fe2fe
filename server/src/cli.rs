//! Command-line flags, named as kube-apiserver names them where one exists.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

use access::options::{AuthenticationOptions, AuthorizationOptions};
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

    /// The IP address the cluster reaches this server at, published as the `kubernetes` Service's
    /// Endpoints (and, when it is neither loopback nor link-local, its EndpointSlice); the bind
    /// address when unset.
    #[arg(long)]
    pub advertise_address: Option<std::net::IpAddr>,

    /// Serving certificate (PEM); generated under the data directory when absent.
    #[arg(long)]
    pub tls_cert_file: Option<PathBuf>,

    /// Key of the serving certificate (PEM).
    #[arg(long)]
    pub tls_private_key_file: Option<PathBuf>,

    /// CA bundle that client certificates are verified against; the generated CA when absent.
    #[arg(long)]
    pub client_ca_file: Option<PathBuf>,

    /// Lowest TLS version served: `VersionTLS12` (the default) or `VersionTLS13`
    /// (`VersionTLS10` and `VersionTLS11` are accepted and serve TLS 1.2 and up: this server has
    /// no older protocol).
    #[arg(long, default_value = "")]
    pub tls_min_version: String,

    /// TLS 1.2 cipher suites by Go's names, comma-separated (TLS 1.3's are always offered);
    /// all this server has when empty. Only AEAD suites exist here: CBC, RC4 and 3DES names are
    /// refused at start.
    #[arg(long, value_delimiter = ',')]
    pub tls_cipher_suites: Vec<String>,

    /// A further serving certificate chosen by the name a client asks for (SNI):
    /// `cert,key` (for the names the certificate holds) or `cert,key:*.example.com,example.com`.
    /// May be given more than once.
    #[arg(long, value_parser = serving::tls::parse_sni_cert_key)]
    pub tls_sni_cert_key: Vec<serving::tls::SniCertKey>,

    /// The limit on concurrent streams this server announces to HTTP/2 clients; 0 for 100.
    #[arg(long, default_value_t = 0)]
    pub http2_max_streams_per_connection: u32,

    /// The fraction of HTTP/2 requests answered and then followed by GOAWAY, so that clients
    /// reconnect and a load balancer spreads them over the replicas; 0 (off) to 0.02.
    #[arg(long, default_value_t = 0.0, value_parser = parse_goaway_chance)]
    pub goaway_chance: f64,

    /// On SIGTERM, how long the node keeps serving (with `/readyz` failing) before it stops
    /// accepting connections, so that load balancers take it out first.
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    pub shutdown_delay_duration: Duration,

    /// CIDR from which Service cluster IPs are allocated.
    #[arg(long, default_value = "10.96.0.0/12")]
    pub service_cluster_ip_range: String,

    /// Ports reserved for Services of type NodePort and LoadBalancer, `low-high` inclusive.
    #[arg(long, default_value = "30000-32767")]
    pub service_node_port_range: String,

    /// Feature gates, `Name=true,Other=false`, as Kubernetes names them; `AllAlpha` and
    /// `AllBeta` set every alpha or beta gate not named. Taken at the emulated version.
    #[arg(long, default_value = "")]
    pub feature_gates: String,

    /// The Kubernetes release whose APIs, feature gates and behaviour this server presents,
    /// `1.34` to `1.36` (`kube=1.35` also reads).
    #[arg(long, visible_alias = "emulation-version", default_value = "")]
    pub emulated_version: String,

    /// Built-in APIs switched on or off, `KEY=true|false,...`: `api/all`, `api/ga`, `api/beta`,
    /// `api/alpha`, `GROUP/VERSION` (`v1` for the core group), `GROUP/VERSION/RESOURCE` (the
    /// core group's resources as `/v1/RESOURCE`). Beta and alpha versions are off by default.
    #[arg(long, default_value = "")]
    pub runtime_config: String,

    /// With an emulated release below this server's: a newer version of a resource whose older
    /// beta or GA version is served is served too, though introduced after the emulated release.
    #[arg(long)]
    pub emulation_forward_compatible: bool,

    /// With an emulated release below this server's: group versions and resources
    /// `--runtime-config` names on are served though introduced after the emulated release
    /// (without it, naming one stops the server).
    #[arg(long)]
    pub runtime_config_emulation_forward_compatible: bool,

    /// The oldest release of the control plane's components this server stays compatible
    /// with; at most the emulated version (default: one below it).
    #[arg(long, default_value = "")]
    pub min_compatibility_version: String,

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

    /// Bytes of objects (each change's key and new object) the window of past revisions keeps
    /// at most, whatever their age: under a burst of large writes, history is compacted sooner
    /// than `--history-retention`.
    #[arg(long, default_value_t = 256 << 20)]
    pub history_max_bytes: u64,

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

    /// Start as the only member of a new cluster, with everything this node holds (its snapshot
    /// and every entry of its log, applied): for a node whose peers are gone for good. Its
    /// earlier files are kept aside; remove the flag once it has started. Members are then added
    /// back with `apiserver member add` and `promote`.
    #[arg(long, default_value_t = false, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub force_new_cluster: bool,

    /// The state's size (every object's key and bytes) past which writes other than deletes are
    /// refused with etcd's "database space exceeded" and /readyz fails, until deletes bring it
    /// back under; 0 for no limit. etcd's flag, 8 GiB (etcd's largest advised) by default.
    #[arg(long, default_value_t = 8 << 30)]
    pub quota_backend_bytes: u64,

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

    /// The audit policy (`audit.k8s.io/v1` `Policy`): which requests are audited, at which level.
    #[arg(long)]
    pub audit_policy_file: Option<PathBuf>,

    /// Where audit events are appended, one JSON line each (`-` for standard output); with
    /// `--audit-policy-file`, auditing is on.
    #[arg(long)]
    pub audit_log_path: Option<PathBuf>,

    /// Days to keep rotated audit log files (by the time in their names; 0: no limit).
    #[arg(long = "audit-log-maxage", default_value_t = 0)]
    pub audit_log_max_age: u64,

    /// Rotated audit log files to keep (0: all).
    #[arg(long = "audit-log-maxbackup", default_value_t = 0)]
    pub audit_log_max_backup: usize,

    /// Megabytes an audit log file may reach before it is rotated (0: 100).
    #[arg(long = "audit-log-maxsize", default_value_t = 0)]
    pub audit_log_max_size: u64,

    /// Gzip rotated audit log files.
    #[arg(long = "audit-log-compress")]
    pub audit_log_compress: bool,

    /// A `TracingConfiguration` file (`apiserver.config.k8s.io/v1`): requests are traced with
    /// OpenTelemetry and exported over OTLP/gRPC to its `endpoint` (default `localhost:4317`),
    /// sampled at `samplingRatePerMillion` or as a privileged client's `traceparent` asks.
    #[arg(long)]
    pub tracing_config_file: Option<PathBuf>,

    /// A kubeconfig naming the webhook audit events are sent to (as `EventList`s); with
    /// `--audit-policy-file`, auditing is on.
    #[arg(long)]
    pub audit_webhook_config_file: Option<PathBuf>,

    /// How events reach the webhook: `batch` (buffered, sent in batches; a full buffer drops
    /// events rather than hold requests), `blocking` (each event sent while its request waits)
    /// or `blocking-strict` (as `blocking`, and a request whose first event is not delivered
    /// is refused).
    #[arg(long, default_value = "batch", value_parser = parse_audit_webhook_mode)]
    pub audit_webhook_mode: serving::audit::webhook::Mode,

    /// Events the webhook's buffer holds; more are dropped (and counted) until it drains.
    #[arg(long, default_value_t = 10000, value_parser = clap::value_parser!(u64).range(1..))]
    pub audit_webhook_batch_buffer_size: u64,

    /// Most events in one batch.
    #[arg(long, default_value_t = 400, value_parser = clap::value_parser!(u64).range(1..))]
    pub audit_webhook_batch_max_size: u64,

    /// Longest an event waits for its batch to fill before the batch is sent.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub audit_webhook_batch_max_wait: Duration,

    /// Whether batches are throttled.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub audit_webhook_batch_throttle_enable: bool,

    /// Batches sent a second at most, when throttled.
    #[arg(long, default_value_t = 10.0, value_parser = parse_positive_rate)]
    pub audit_webhook_batch_throttle_qps: f64,

    /// Batches sent at once before the throttle holds them, when throttled.
    #[arg(long, default_value_t = 15)]
    pub audit_webhook_batch_throttle_burst: u32,

    /// The wait before a failed batch is sent again (growing by half on each failure).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub audit_webhook_initial_backoff: Duration,

    /// The client certificate (PEM) this server presents to extension API servers it proxies
    /// to (APIServices that name a Service); they trust it through their request-header CA.
    #[arg(long, requires = "proxy_client_key_file")]
    pub proxy_client_cert_file: Option<PathBuf>,

    /// The key (PEM) of `--proxy-client-cert-file`.
    #[arg(long, requires = "proxy_client_cert_file")]
    pub proxy_client_key_file: Option<PathBuf>,

    /// The client certificate (PEM) this server presents to kubelets (pod logs, exec, attach,
    /// port forwarding, node proxy).
    #[arg(long, requires = "kubelet_client_key")]
    pub kubelet_client_certificate: Option<PathBuf>,

    /// The key (PEM) of `--kubelet-client-certificate`.
    #[arg(long, requires = "kubelet_client_certificate")]
    pub kubelet_client_key: Option<PathBuf>,

    /// The CA bundle (PEM) kubelets' serving certificates are verified with; without it they
    /// are not verified, as kube-apiserver does.
    #[arg(long)]
    pub kubelet_certificate_authority: Option<PathBuf>,

    /// The node address types tried, in order, to reach a kubelet.
    #[arg(long, default_value = serving::kubelet::DEFAULT_ADDRESS_TYPES, value_delimiter = ',')]
    pub kubelet_preferred_address_types: Vec<String>,

    /// Controllers the leader runs, as kube-controller-manager's flag: `*` for the defaults,
    /// `NAME` to add one, `-NAME` to leave one out: those kube-controller-manager also runs
    /// (`garbagecollector`, `podgc`, `serviceaccount`, `serviceaccount-token`,
    /// `root-ca-cert-publisher`, `clusterrole-aggregation`, `validatingadmissionpolicy-status`,
    /// `bootstrap-tokens`, `resourcequota`, `namespace`) when it runs beside this server, or this server's own
    /// (`service-ip-repair`, `crd`, `apiservice-availability`).
    #[arg(long, default_value = "*", value_delimiter = ',')]
    pub controllers: Vec<String>,

    /// Admission plugins to run besides the defaults (kube-apiserver's names; the order they
    /// run in is kube-apiserver's, whatever the order here).
    #[arg(long, value_delimiter = ',')]
    pub enable_admission_plugins: Vec<String>,

    /// Default admission plugins not to run.
    #[arg(long, value_delimiter = ',')]
    pub disable_admission_plugins: Vec<String>,

    /// How long pods tolerate their node's `not-ready` taint (DefaultTolerationSeconds).
    #[arg(long, default_value_t = 300)]
    pub default_not_ready_toleration_seconds: i64,

    /// How long pods tolerate their node's `unreachable` taint (DefaultTolerationSeconds).
    #[arg(long, default_value_t = 300)]
    pub default_unreachable_toleration_seconds: i64,

    /// The plugins' configuration: an `AdmissionConfiguration` (YAML or JSON) naming each
    /// plugin's configuration inline or by a file path.
    #[arg(long)]
    pub admission_control_config_file: Option<PathBuf>,

    #[command(flatten)]
    pub authentication: AuthenticationOptions,

    #[command(flatten)]
    pub authorization: AuthorizationOptions,
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
    /// Backups: take one from a running cluster, check one, or make a data directory from one.
    Snapshot {
        #[command(subcommand)]
        action: SnapshotAction,
    },
    /// Checks a stopped node's data under `--data-dir` (the database's checksums, the
    /// snapshot's, the log's continuity, every entry applied and every object decoded) and
    /// prints what it holds; exits non-zero on any problem.
    Check,
    /// Compacts a stopped node's database (`raft.redb`) under `--data-dir`: the space the
    /// purged log and replaced objects left is given back and the file shrinks to what it holds.
    Defrag,
    /// Moves this node's Raft state (`raft.redb`, `snapshot`) under `--data-dir` aside into
    /// `damaged-<seconds>/`, keeping its certificates: started again with
    /// `--initial-cluster-state existing`, the node catches up from the leader. For a member whose
    /// state is damaged, while the others of its cluster run.
    Reseed,
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

#[derive(Debug, Clone, clap::Subcommand)]
pub enum SnapshotAction {
    /// Saves a consistent copy of the cluster's state at its newest revision to FILE, through
    /// the HTTPS port of any member (the kubeconfig's server), as a member of system:masters.
    Save {
        file: PathBuf,
        /// A kubeconfig whose user is in system:masters (a node's admin.kubeconfig).
        #[arg(long)]
        kubeconfig: PathBuf,
    },
    /// Verifies FILE against its checksum and prints what it holds.
    Status { file: PathBuf },
    /// Makes `--data-dir` hold FILE's state, as a single node or as one member of a new cluster
    /// (run it for each member with the same `--initial-cluster`); revisions go on a billion
    /// above the backup's.
    Restore {
        file: PathBuf,
        /// The member this directory is for.
        #[arg(long, default_value_t = 1)]
        node_id: u64,
        /// The members of the new cluster, `1=host:port,...`; empty for a single node.
        #[arg(long, default_value = "", value_parser = parse_members)]
        initial_cluster: Members,
    },
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


/// `--goaway-chance`: between 0 and 0.02.
fn parse_goaway_chance(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(p) if (0.0..=0.02).contains(&p) => Ok(p),
        Ok(_) => Err("--goaway-chance can not be less than 0 or greater than 0.02".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// A rate: a finite number above 0.
fn parse_positive_rate(value: &str) -> Result<f64, String> {
    match value.parse::<f64>() {
        Ok(rate) if rate.is_finite() && rate > 0.0 => Ok(rate),
        _ => Err(format!("{value:?} is not a rate above 0")),
    }
}

/// `--audit-webhook-mode`: kube-apiserver's three modes, of which this server sends in batches.
fn parse_audit_webhook_mode(mode: &str) -> Result<serving::audit::webhook::Mode, String> {
    serving::audit::webhook::Mode::parse(mode)
}
