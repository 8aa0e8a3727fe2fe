//! Starting a node: open the store, prepare TLS and the admin kubeconfig, start the built-in
//! controllers and serve HTTPS until SIGTERM or SIGINT.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use anyhow::Context;
use raft_store::{CacheOptions, Store, StoreOptions};

use crate::cli::Args;
use crate::context::{Ctx, Settings};
use crate::ipalloc::ServiceIps;
use crate::{app, controllers, tls};

pub async fn run(args: Args) -> anyhow::Result<()> {
    let range = args
        .service_cluster_ip_range
        .parse()
        .with_context(|| format!("--service-cluster-ip-range {:?} is not an IPv4 CIDR", args.service_cluster_ip_range))?;
    std::fs::create_dir_all(&args.data_dir).with_context(|| format!("creating {}", args.data_dir.display()))?;
    let tls_opts = tls::TlsOptions {
        cert_file: args.tls_cert_file.clone(),
        key_file: args.tls_private_key_file.clone(),
        client_ca_file: args.client_ca_file.clone(),
        extra_sans: vec![args.bind_address.clone()],
    };
    let pki = tls::ensure_pki(&args.data_dir, &tls_opts)?;
    let tls_config = tls::server_config(&pki)?;

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

    let store = Store::open(
        &args.data_dir,
        StoreOptions {
            node_id: args.node_id,
            cache: CacheOptions { retention: args.history_retention, ..Default::default() },
            ..Default::default()
        },
    )
    .await
    .context("opening the store")?;

    let settings = Settings { address: address.clone(), ..Default::default() };
    let ctx = Ctx { store: store.clone(), ips: Arc::new(ServiceIps::new(range)), settings: Arc::new(settings) };

    let kubeconfig = args.data_dir.join("admin.kubeconfig");
    tls::write_admin_kubeconfig(&kubeconfig, &address, &pki)?;
    let controllers = tokio::spawn(controllers::run(ctx.clone()));

    println!("apiserver serving on {address}");
    println!("  kubectl --kubeconfig {} get namespaces", kubeconfig.display());

    let shutting_down = ctx.settings.shutting_down.clone();
    let shutdown = async move {
        wait_for_signal().await;
        tracing::info!("shutting down");
        shutting_down.store(true, Ordering::Relaxed);
    };
    tls::serve(listener, tls_config, app::router(ctx), shutdown).await?;
    controllers.abort();
    store.shutdown().await;
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
