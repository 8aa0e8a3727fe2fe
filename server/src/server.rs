//! Starting a node: open the store, prepare TLS and the admin kubeconfig, start the built-in
//! controllers and serve HTTPS until SIGTERM or SIGINT.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use raft_store::{CacheOptions, Observers, PeerTls, Store, StoreOptions};

use admission::plugins::Configurations;
use admission::by_namespace::ByNamespace;
use admission::Replicated;
use access::authz::metrics::AuthorizationMetrics;
use access::authz;
use access::node::NodeGraph;
use access::rbac::RbacIndex;
use access::Auth;
use crate::cli::Args;
use serving::flowcontrol::FlowControl;
use serving::metrics::Metrics;
use serving::context::{Ctx, Filters, Settings, Writes};
use access::serviceaccount::Tokens;
use serving::ipalloc::ServiceIps;
use serving::nodeports::NodePorts;
use crate::{admission_chain, controllers};
use serving::{app, tls};

/// How long a stopping node lets the peer service's connections end on their own.
const PEER_GRACE: Duration = Duration::from_secs(2);

/// The resources this server's own post-start hooks and controllers read and write (what
/// kube-controller-manager and kube-apiserver's hooks would): `--runtime-config` may not switch
/// them off, or the node could neither become ready nor run its controllers.
const NEEDED_APIS: &[(&str, &str, &str)] = &[
    ("", "v1", "namespaces"),
    ("", "v1", "services"),
    ("", "v1", "endpoints"),
    ("", "v1", "pods"),
    ("", "v1", "nodes"),
    ("", "v1", "configmaps"),
    ("", "v1", "secrets"),
    ("", "v1", "serviceaccounts"),
    ("", "v1", "resourcequotas"),
    ("", "v1", "events"),
    ("rbac.authorization.k8s.io", "v1", "roles"),
    ("rbac.authorization.k8s.io", "v1", "rolebindings"),
    ("rbac.authorization.k8s.io", "v1", "clusterroles"),
    ("rbac.authorization.k8s.io", "v1", "clusterrolebindings"),
    ("scheduling.k8s.io", "v1", "priorityclasses"),
    ("flowcontrol.apiserver.k8s.io", "v1", "flowschemas"),
    ("flowcontrol.apiserver.k8s.io", "v1", "prioritylevelconfigurations"),
    ("coordination.k8s.io", "v1", "leases"),
    ("discovery.k8s.io", "v1", "endpointslices"),
    ("networking.k8s.io", "v1", "ipaddresses"),
    ("networking.k8s.io", "v1", "servicecidrs"),
    ("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies"),
    ("apiextensions.k8s.io", "v1", "customresourcedefinitions"),
    ("apiregistration.k8s.io", "v1", "apiservices"),
];

/// Runs one node until it is told to stop; `traces` exports the traces of its requests.
pub async fn run(args: Args, traces: Option<serving::traces::Exporting>) -> anyhow::Result<()> {
    let (features, warnings) = machinery::features::Features::from_flags(&args.emulated_version, &args.min_compatibility_version, &args.feature_gates)
        .map_err(|e| anyhow::anyhow!("invalid versions or feature gates: {e}"))?;
    let apis = machinery::features::RuntimeConfig::parse(&args.runtime_config, args.enable_priority_and_fairness)
        .map_err(|e| anyhow::anyhow!("invalid --runtime-config: {e}"))?;
    let resources = machinery::registry::ALL.iter().map(|r| (r.group, r.version, r.resource, r.introduced));
    let features = features
        .with_apis(apis, args.emulation_forward_compatible, args.runtime_config_emulation_forward_compatible, resources)
        .map_err(|e| anyhow::anyhow!("invalid --runtime-config: {e}"))?;
    if let Some((group, version, resource)) = NEEDED_APIS.iter().find(|(g, v, r)| !features.apis.serves(g, v, r)) {
        let gv = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
        anyhow::bail!("invalid --runtime-config: it switches off {gv}/{resource}, which this server's own post-start hooks and controllers write");
    }
    for warning in warnings {
        tracing::warn!("{warning}");
    }
    machinery::features::install(features);
    let range = args
        .service_cluster_ip_range
        .parse()
        .with_context(|| format!("--service-cluster-ip-range {:?} is not an IPv4 CIDR", args.service_cluster_ip_range))?;
    let node_ports = NodePorts::parse(&args.service_node_port_range).map_err(|e| anyhow::anyhow!("--service-node-port-range: {e}"))?;
    std::fs::create_dir_all(&args.data_dir).with_context(|| format!("creating {}", args.data_dir.display()))?;
    let peer_addr = match args.initial_cluster.get(&args.node_id) {
        Some(addr) => Some(addr.clone()),
        None if args.initial_cluster.is_empty() => None,
        None => anyhow::bail!("--initial-cluster does not list this node (--node-id {})", args.node_id),
    };
    let host_of = |addr: &str| addr.rsplit_once(':').map_or(addr, |(h, _)| h).trim_matches(['[', ']']).to_string();
    let tls_opts = tls::TlsOptions {
        cert_file: args.tls_cert_file.clone(),
        key_file: args.tls_private_key_file.clone(),
        client_ca_file: args.client_ca_file.clone(),
        extra_sans: vec![args.bind_address.clone()],
        peer_sans: peer_addr.iter().chain(&args.listen_peer_address).map(|a| host_of(a)).collect(),
    };
    let pki = tls::ensure_pki(&args.data_dir, &tls_opts)?;
    let proxy_ca_pem = match &args.authentication.requestheader_client_ca_file {
        Some(path) => Some(std::fs::read_to_string(path).with_context(|| format!("reading --requestheader-client-ca-file {}", path.display()))?),
        None => None,
    };
    let tls_flags = tls::TlsFlags { min_version: args.tls_min_version.clone(), cipher_suites: args.tls_cipher_suites.clone() };
    let sources = tls_opts.sources(&args.data_dir, args.authentication.requestheader_client_ca_file.clone(), args.tls_sni_cert_key.clone());
    let (tls_config, tls_reload) = tls::DynamicTls::follow(sources, tls_flags)?;
    let read = |path: &std::path::PathBuf, flag: &str| std::fs::read_to_string(path).with_context(|| format!("reading --{flag} {}", path.display()));
    let proxy_client = match (&args.proxy_client_cert_file, &args.proxy_client_key_file) {
        (Some(cert), Some(key)) => Some(serving::context::ClientCredentials { cert: read(cert, "proxy-client-cert-file")?, key: read(key, "proxy-client-key-file")? }),
        _ => None,
    };
    let kubelet = serving::kubelet::KubeletClient {
        credentials: match (&args.kubelet_client_certificate, &args.kubelet_client_key) {
            (Some(cert), Some(key)) => Some(serving::context::ClientCredentials { cert: read(cert, "kubelet-client-certificate")?, key: read(key, "kubelet-client-key")? }),
            _ => None,
        },
        ca_pem: args.kubelet_certificate_authority.as_ref().map(|ca| read(ca, "kubelet-certificate-authority")).transpose()?,
        address_types: args.kubelet_preferred_address_types.iter().map(|t| t.trim().to_string()).filter(|t| !t.is_empty()).collect(),
    };

    let listener = tokio::net::TcpListener::bind((args.bind_address.as_str(), args.secure_port))
        .await
        .with_context(|| format!("listening on {}:{}", args.bind_address, args.secure_port))?;
    let port = listener.local_addr()?.port();
    let host = match args.bind_address.as_str() {
        "0.0.0.0" | "::" => "127.0.0.1".to_string(),
        h if h.contains(':') => format!("[{h}]"),
        h => h.to_string(),
    };
    let address = format!("https://{host}:{port}");

    // Derived state the apply path keeps on every replica.
    let rbac = RbacIndex::new();
    let nodes = Arc::new(NodeGraph::default());
    let namespaces = Arc::new(admission::namespaces::Namespaces::default());
    let classes = Arc::new(admission::classes::Classes::default());
    let configuration = Arc::new(admission::configuration::Configuration::default());
    let limit_ranges = Arc::new(ByNamespace::new(admission::limit_ranger::PREFIX));
    let quotas = Arc::new(ByNamespace::new(admission::resource_quota::PREFIX));
    let flowcontrol =
        Arc::new(FlowControl::new(args.enable_priority_and_fairness, args.max_requests_inflight, args.max_mutating_requests_inflight));
    let peer_tls = pki.peer.clone().map(|(cert_pem, key_pem)| PeerTls { ca_pem: pki.ca_pem.clone(), cert_pem, key_pem });
    if args.force_new_cluster {
        let addr = peer_addr.clone().unwrap_or_else(|| "127.0.0.1:0".into());
        let forced = raft_store::offline::force_new_cluster(&args.data_dir, args.node_id, &addr).map_err(|e| anyhow::anyhow!("--force-new-cluster: {e}"))?;
        tracing::warn!(
            revision = forced.revision,
            objects = forced.objects,
            aside = %forced.aside.display(),
            "--force-new-cluster: this node is now the only member of its cluster; remove the flag before its next start"
        );
    }
    let store = Store::open(
        &args.data_dir,
        StoreOptions {
            node_id: args.node_id,
            raft_addr: peer_addr.clone().unwrap_or_else(|| "127.0.0.1:0".into()),
            initial_members: args.initial_cluster.clone(),
            join_existing: args.initial_cluster_state == "existing",
            snapshot_every: args.snapshot_count,
            heartbeat: Duration::from_millis(args.heartbeat_interval),
            election_timeout: Duration::from_millis(args.election_timeout),
            peer_tls,
            cache: CacheOptions { retention: args.history_retention, max_event_bytes: args.history_max_bytes, indexes: watch_indexes(), ..Default::default() },
            quota_bytes: args.quota_backend_bytes,
            observers: Observers([vec![rbac.clone() as Arc<dyn raft_store::ApplyObserver>, nodes.clone(), flowcontrol.clone(), namespaces.clone(), configuration.clone(), limit_ranges.clone(), quotas.clone(), Arc::new(machinery::crd::served::ServedDefinitions::default())], classes.observers()].concat()),
        },
    )
    .await
    .map_err(|e| match e {
        raft_store::StoreError::Damaged { .. } => anyhow::anyhow!(
            "{e}\nThis node cannot start from it. With the other members of its cluster running, re-seed it: `apiserver reseed --data-dir {}` moves the damaged state aside, then start the node with `--initial-cluster-state existing` and it catches up from the leader (docs/operating.md, \"Damaged data\")",
            args.data_dir.display()
        ),
        e => anyhow::Error::new(e).context("opening the store"),
    })?;
    // The peer certificates, like the serving ones, are followed on disk.
    let peer_reload = match &pki.peer {
        Some(_) => {
            let (dir, store) = (args.data_dir.join("pki"), store.clone());
            let files = vec![dir.join("peer.crt"), dir.join("peer.key"), dir.join("ca.crt")];
            Some(tls::follow_files(files, "peer certificates", move |c| {
                store.set_peer_tls(PeerTls { cert_pem: c[0].clone(), key_pem: c[1].clone(), ca_pem: c[2].clone() }).map_err(anyhow::Error::msg)
            })?)
        }
        None => None,
    };
    // Replicas reach each other on the peer listener.
    let (stop_peers, peers_stopped) = tokio::sync::oneshot::channel::<()>();
    let peers = match args.listen_peer_address.as_ref().or(peer_addr.as_ref()) {
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("listening for peers on {addr}"))?;
            let store = store.clone();
            Some(tokio::spawn(async move {
                if let Err(e) = store.serve_peers(listener, async move { peers_stopped.await.unwrap_or(()) }).await {
                    tracing::error!(error = %e, "peer service failed");
                }
            }))
        }
        None => None,
    };

    let settings = Settings { address: address.clone(), advertise_address: args.advertise_address, request_timeout: args.request_timeout, client_ca_pem: pki.client_ca_pem.clone(), proxy_ca_pem, root_ca_pem: pki.server_ca_pem.clone(), proxy_client, kubelet, bootstrap_tokens: args.authentication.enable_bootstrap_token_auth,
        disabled_controllers: args.controllers.iter().filter_map(|c| c.trim().strip_prefix('-')).map(String::from).collect(),
        ..Default::default()
    };
    let metrics = Arc::new(Metrics::default());
    // A key is generated only when none is given.
    let signing_key = match &args.authentication.service_account_signing_key_file {
        Some(path) => path.clone(),
        None => serving::tls::certs::ensure_service_account_key(&args.data_dir)?,
    };
    let tokens = Arc::new(Tokens::load(&args.authentication, &signing_key, &pki.serving_key_pem, &address)?);
    let authorization_mode = args.authorization.authorization_mode.as_deref();
    let authn = Arc::new(access::authn::build(&args.authentication, authorization_mode, tokens.clone(), store.clone())?);
    let authz_metrics: Arc<dyn AuthorizationMetrics> = metrics.clone();
    let chain = authz::build(&args.authorization, args.node_id, &rbac, &nodes, &authz_metrics)?;
    let auth = Auth { chain, rbac };
    let replicated = Replicated { store: store.clone(), namespaces: namespaces.clone(), configuration, limit_ranges, quotas };
    let configurations = match &args.admission_control_config_file {
        Some(path) => Configurations::load(path).map_err(|e| anyhow::anyhow!("--admission-control-config-file: {e}"))?,
        None => Configurations::default(),
    };
    let toleration_seconds = (args.default_not_ready_toleration_seconds, args.default_unreachable_toleration_seconds);
    let namespace_creator = admission::namespace_autoprovision::Creator::default();
    let parts = admission_chain::Parts { replicated, auth: auth.clone(), configurations, classes, toleration_seconds, namespace_creator: namespace_creator.clone() };
    let admission = admission_chain::build(&args, &parts)?;
    // Auditing needs a policy and a backend (a log, a webhook, or both), as in kube-apiserver.
    let audit = match &args.audit_policy_file {
        Some(policy) if args.audit_log_path.is_some() || args.audit_webhook_config_file.is_some() => {
            Some(serving::audit::Auditor::open(policy, audit_backends(&args)?, metrics.clone(), format!("node-{}", args.node_id))?)
        }
        _ => None,
    };
    let ctx = Ctx {
        store: store.clone(),
        settings: Arc::new(settings),
        filters: Arc::new(Filters { authn, audit, auth, flowcontrol, metrics, tracer: traces.as_ref().map(|t| t.tracer()) }),
        writes: Arc::new(Writes { admission, ips: Arc::new(ServiceIps::new(range)), node_ports: NodePorts::new(node_ports) }),
        tokens,
    };

    let kubeconfig = args.data_dir.join("admin.kubeconfig");
    tls::write_admin_kubeconfig(&kubeconfig, &address, &pki)?;
    let router = app::router(ctx.clone());
    let loopback = crate::loopback::Client::new(router.clone(), access::authn::loopback::Loopback::apiserver());
    // Set once, here: the chain was built before the router existed.
    let _ = namespace_creator.set(Arc::new(loopback.clone()));
    let controllers = tokio::spawn(controllers::run(crate::context::Context::new(&ctx), loopback));

    println!("apiserver serving on {address}");
    println!("  kubectl --kubeconfig {} get namespaces", kubeconfig.display());

    let shutting_down = ctx.settings.shutting_down.clone();
    let shutdown = async move {
        wait_for_signal().await;
        tracing::info!("shutting down");
        shutting_down.store(true, Ordering::Relaxed);
    };
    let options = tls::ServeOptions {
        shutdown_delay: args.shutdown_delay_duration,
        http2_max_streams: args.http2_max_streams_per_connection,
        goaway_chance: args.goaway_chance,
    };
    tls::serve(listener, tls_config, router, options, shutdown).await?;
    tls_reload.abort();
    if let Some(task) = peer_reload {
        task.abort();
    }
    controllers.abort();
    let _ = stop_peers.send(());
    if let Some(mut peers) = peers {
        // The other replicas' standing streams (appends, forwarded writes) keep the peer
        // service's connections open for as long as those replicas run: after a grace period
        // they are cut, as the API connections are.
        if tokio::time::timeout(PEER_GRACE, &mut peers).await.is_err() {
            tracing::info!("closing the other replicas' connections");
            peers.abort();
        }
    }
    store.shutdown().await;
    if let Some(traces) = traces {
        traces.shutdown().await;
    }
    Ok(())
}

async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("installing the SIGTERM handler");
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}

/// The audit backends the flags name.
fn audit_backends(args: &Args) -> anyhow::Result<serving::audit::Backends> {
    let log = args.audit_log_path.clone().map(|path| {
        let rotation = serving::audit::log_file::Rotation {
            max_mb: args.audit_log_max_size,
            max_backups: args.audit_log_max_backup,
            max_age_days: args.audit_log_max_age,
            compress: args.audit_log_compress,
        };
        (path, rotation)
    });
    let webhook = match &args.audit_webhook_config_file {
        Some(file) => {
            let endpoint = machinery::webhook::kubeconfig::load(file).map_err(|e| anyhow::anyhow!("--audit-webhook-config-file: {e}"))?;
            let opts = serving::audit::webhook::BatchOptions {
                buffer_size: args.audit_webhook_batch_buffer_size as usize,
                max_size: args.audit_webhook_batch_max_size as usize,
                max_wait: args.audit_webhook_batch_max_wait,
                throttle: args.audit_webhook_batch_throttle_enable.then_some((args.audit_webhook_batch_throttle_qps, args.audit_webhook_batch_throttle_burst)),
                initial_backoff: args.audit_webhook_initial_backoff,
            };
            Some((endpoint, args.audit_webhook_mode, opts))
        }
        None => None,
    };
    Ok(serving::audit::Backends { log, webhook })
}

/// The fields the built-in kinds index their watchers by (a pod's `spec.nodeName`), for the
/// store's fan-out.
fn watch_indexes() -> Vec<raft_store::FieldIndex> {
    let mut indexes: Vec<raft_store::FieldIndex> = machinery::registry::built_in()
        .filter_map(|info| Some(raft_store::FieldIndex { prefix: info.key_prefix(), field: info.ops.strategy.watch_index?.to_string() }))
        .collect();
    indexes.dedup();
    indexes
}
