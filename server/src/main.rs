//! The `apiserver` binary: parses flags and runs one node, or an administration command.

use clap::Parser;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

/// mimalloc rather than the C library's allocator: with a large heap of small objects (a big
/// cluster's objects, and every request's parsed JSON) glibc's allocator took about 40% of a
/// busy node's CPU, and writes waited for it (docs/benchmarks.md, "Scale").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = apiserver::cli::Args::parse();
    // Traces are exported only by a serving node that is configured for them.
    let traces = match (&args.command, &args.tracing_config_file) {
        (None, Some(file)) => {
            let config = serving::traces::TracingConfig::load(file).map_err(anyhow::Error::msg)?;
            Some(serving::traces::Exporting::start(&config, &format!("node-{}", args.node_id))?)
        }
        _ => None,
    };
    // The log: what `RUST_LOG` selects, never the spans of traced requests (those are exported).
    // One filter (per-layer filters nested in one another lose events).
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info,openraft=warn".into());
    let filter = match format!("{}=off", raft_store::trace::TARGET).parse() {
        Ok(off) => filter.add_directive(off),
        Err(_) => filter,
    };
    // Openraft's repeated warnings (a peer down) are written once per window, their repeats counted.
    let repeats = apiserver::log_limit::RepeatLimit::new(std::io::stderr);
    let log = tracing_subscriber::fmt::layer().with_writer(repeats.clone()).with_filter(filter);
    // (Not an `Option` of the layer: an absent layer would enable every callsite, the Raft
    // library's debug spans among them.)
    let registry = tracing_subscriber::registry().with(log);
    match &traces {
        Some(traces) => registry.with(traces.layer()).init(),
        None => registry.init(),
    }
    tokio::spawn(repeats.report());
    // Failpoints named in the FAILPOINTS environment variable (`name=action;...`).
    #[cfg(feature = "failpoints")]
    let _failpoints = fail::FailScenario::setup();
    match &args.command {
        Some(apiserver::cli::Command::Member { endpoint, action }) => apiserver::member::run(&args.data_dir, endpoint, action).await,
        Some(apiserver::cli::Command::Certs { server }) => {
            let pki = serving::tls::ensure_pki(&args.data_dir, &Default::default())?;
            serving::tls::certs::ensure_service_account_key(&args.data_dir)?;
            if let Some(url) = server {
                serving::tls::write_admin_kubeconfig(&args.data_dir.join("admin.kubeconfig"), url, &pki)?;
            }
            println!("certificates in {}", args.data_dir.join("pki").display());
            Ok(())
        }
        Some(apiserver::cli::Command::Reseed) => apiserver::reseed::run(&args.data_dir),
        Some(apiserver::cli::Command::Check) => apiserver::check::run(&args.data_dir),
        Some(apiserver::cli::Command::Defrag) => apiserver::defrag::run(&args.data_dir),
        Some(apiserver::cli::Command::Snapshot { action }) => apiserver::snapshot::run(&args.data_dir, action).await,
        Some(apiserver::cli::Command::FlagsReference) => {
            print!("{}", apiserver::flags_reference::render());
            Ok(())
        }
        None => apiserver::server::run(args, traces).await,
    }
}
