//! `chaos-tests`: starts a real cluster of separate hosts, drives workloads through the load
//! balancer and straight at the nodes, injects faults on a schedule, checks the recorded history
//! and writes a report. Exits 1 when any checker finds a violation.
//!
//! `cargo run -p chaos-tests -- --nodes 5 --duration 10m --faults all`

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

use chaos_tests::faults::Fault;
use chaos_tests::run::{self, Options};

#[derive(Parser)]
#[command(about = "Fault-injection suite: a real cluster, faults, a checked history, a report")]
struct Args {
    /// Replicas (3 or 5).
    #[arg(long, default_value_t = 3)]
    nodes: u32,
    /// How long faults are injected (e.g. `90s`, `10m`).
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    duration: Duration,
    /// `all`, or a comma-separated list: kill-leader, kill-follower, kill-random, pause-leader,
    /// pause-random, partition-leader, partition-minority, partition-split, partition-bridge,
    /// restart-all, wipe-node, membership, slow-fsync, fail-fsync, disk-full, lose-majority,
    /// backup-restore, upgrade (with `--upgrade-from`: one node at a time moves from that
    /// binary to the one under test).
    #[arg(long, default_value = "all")]
    faults: String,
    /// How long each fault lasts before it is healed.
    #[arg(long, default_value = "6s", value_parser = parse_duration)]
    fault_hold: Duration,
    /// Quiet time between a recovery and the next fault.
    #[arg(long, default_value = "3s", value_parser = parse_duration)]
    quiet: Duration,
    /// Register clients (spread over the load balancer and every node).
    #[arg(long, default_value_t = 8)]
    clients: u32,
    /// Register keys (fewer keys: more contention).
    #[arg(long, default_value_t = 4)]
    keys: u32,
    /// Report directory (default `chaos-report/<unix time>`).
    #[arg(long)]
    out: Option<PathBuf>,
    /// The apiserver binary, built with `--features failpoints`; built when absent.
    #[arg(long)]
    apiserver: Option<PathBuf>,
    /// Runs a deliberately broken server the checkers must catch: `stale-reads` serves "Most
    /// Recent" reads from local state without a read index.
    #[arg(long, value_parser = ["stale-reads"])]
    broken: Option<String>,
    /// Seed of every random choice (faults, targets, operations).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Log entries between snapshots on every node (the server's `--snapshot-count`): a small
    /// count makes snapshots, log purges and snapshot installs part of the run.
    #[arg(long)]
    snapshot_count: Option<u64>,
    /// A binary of an earlier version that every node starts on, for a rolling upgrade by the
    /// `upgrade` fault to the binary under test (`--apiserver`, or the one built).
    #[arg(long)]
    upgrade_from: Option<PathBuf>,
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let (n, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = n.parse().map_err(|_| format!("invalid duration {s:?}"))?;
    match unit {
        "ms" => Ok(Duration::from_millis(n)),
        "" | "s" => Ok(Duration::from_secs(n)),
        "m" => Ok(Duration::from_secs(n * 60)),
        "h" => Ok(Duration::from_secs(n * 3600)),
        _ => Err(format!("invalid duration {s:?}")),
    }
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    let faults = match Fault::parse_list(&args.faults) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    if ![3, 5].contains(&args.nodes) {
        eprintln!("--nodes must be 3 or 5");
        std::process::exit(2);
    }
    let out = args.out.unwrap_or_else(|| {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        PathBuf::from("chaos-report").join(now.to_string())
    });
    let opts = Options {
        nodes: args.nodes,
        duration: args.duration,
        faults,
        fault_hold: args.fault_hold,
        quiet: args.quiet,
        clients: args.clients,
        keys: args.keys,
        out,
        apiserver: args.apiserver,
        broken: args.broken,
        seed: args.seed,
        snapshot_count: args.snapshot_count,
        upgrade_from: args.upgrade_from,
    };
    // On Ctrl-C or SIGTERM the run is dropped, which stops the nodes and removes the hosts.
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler");
    let outcome = tokio::select! {
        outcome = run::run(opts) => outcome,
        _ = tokio::signal::ctrl_c() => Err(anyhow::anyhow!("interrupted")),
        _ = term.recv() => Err(anyhow::anyhow!("terminated")),
    };
    match outcome {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("chaos-tests: {e:#}");
            std::process::exit(3);
        }
    }
}
