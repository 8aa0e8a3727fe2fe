//! The `apiserver` binary: parses flags and runs one node, or an administration command.

use clap::Parser;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info,openraft=warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    // Failpoints named in the FAILPOINTS environment variable (`name=action;...`).
    #[cfg(feature = "failpoints")]
    let _failpoints = fail::FailScenario::setup();
    let args = apiserver::cli::Args::parse();
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
        None => apiserver::server::run(args).await,
    }
}
