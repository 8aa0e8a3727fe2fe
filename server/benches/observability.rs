//! What observability costs a write: create throughput at 32 clients with an audit log at the
//! `Metadata` level for every request, traces sampled at 10,000 per million and exported to a
//! real OTLP/gRPC receiver, and `/metrics` scraped every second, against a server with all three
//! off. Rounds alternate between the two, the ratio is of the median rounds. Run with
//! `cargo bench -p apiserver --bench observability`; `BENCH_OBSERVE=audit,traces,scrapes` (all
//! three by default) names what the observed server does, to weigh each alone;
//! `BENCH_OMIT_RECEIVED=1` leaves the `RequestReceived` stage out of the audit policy, as the
//! policies kube-up and most distributions ship do.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::otlp_receiver::OtlpReceiver;
use common::{cpu_time, creates, report, thread_cpu_time, Server};
use kube::Api;

const ROUNDS: usize = 7;
const CREATES: usize = 20_000;
const CLIENTS: usize = 32;

/// Scrapes `/metrics` every second until stopped; returns how many scrapes answered.
fn scrape_every_second(client: kube::Client, stop: Arc<AtomicBool>) -> tokio::task::JoinHandle<usize> {
    tokio::spawn(async move {
        let mut scrapes = 0;
        while !stop.load(Ordering::Relaxed) {
            if client.request_text(http::Request::get("/metrics").body(vec![]).unwrap()).await.is_ok() {
                scrapes += 1;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        scrapes
    })
}

#[tokio::main]
async fn main() {
    let receiver = OtlpReceiver::start().await;
    let scratch = tempfile::tempdir().expect("tempdir");
    let policy = scratch.path().join("policy.yaml");
    let omit = if std::env::var_os("BENCH_OMIT_RECEIVED").is_some() { "omitStages: [RequestReceived]\n" } else { "" };
    std::fs::write(&policy, format!("apiVersion: audit.k8s.io/v1\nkind: Policy\n{omit}rules:\n- level: Metadata\n")).unwrap();
    let tracing = receiver.config_file(scratch.path(), 10_000);
    let observe = std::env::var("BENCH_OBSERVE").unwrap_or_else(|_| "audit,traces,scrapes".into());
    let on = |what: &str| observe.split(',').any(|w| w == what);
    let mut rates: [Vec<f64>; 2] = Default::default();
    let mut cpus: [Vec<f64>; 2] = Default::default();
    for round in 0..ROUNDS {
        // Which goes first alternates too, so that neither always meets a warmer machine.
        let order = if round % 2 == 0 { [true, false] } else { [false, true] };
        for observed in order {
            let i = usize::from(!observed);
            // `BENCH_AUDIT_DIR`: where the audit log is written (the data directory's file system
            // by default).
            let log = std::env::var_os("BENCH_AUDIT_DIR").map_or_else(|| scratch.path().to_path_buf(), Into::into).join(format!("audit-{round}.log"));
            let mut flags: Vec<&str> = Vec::new();
            if observed && on("audit") {
                flags.extend(["--audit-policy-file", policy.to_str().unwrap(), "--audit-log-path", log.to_str().unwrap()]);
            }
            if observed && on("traces") {
                flags.extend(["--tracing-config-file", tracing.to_str().unwrap()]);
            }
            let server = Server::start(&flags);
            let client = server.client().await;
            let stop = Arc::new(AtomicBool::new(false));
            let scraper = (observed && on("scrapes")).then(|| scrape_every_second(client.clone(), stop.clone()));
            let spans_before = receiver.spans().len();
            let label = if observed { observe.as_str() } else { "all off" };
            let cpu = cpu_time(server.pid());
            let writer = thread_cpu_time(server.pid(), "audit-log");
            let (lat, el) = creates(&Api::namespaced(client, "default"), &format!("r{round}"), CREATES, CLIENTS).await;
            rates[i].push(report(&format!("create, {CLIENTS} clients, {label}"), lat, el));
            // The server's own CPU per create: steadier than the rate on a machine the load
            // generator shares.
            let per_create = (cpu_time(server.pid()) - cpu).as_secs_f64() * 1e6 / CREATES as f64;
            cpus[i].push(per_create);
            let writer = (thread_cpu_time(server.pid(), "audit-log") - writer).as_secs_f64() * 1e6 / CREATES as f64;
            println!("{:<40} server CPU per create {per_create:.0} µs (the audit log's writer {writer:.0} µs)", "");
            stop.store(true, Ordering::Relaxed);
            if observed {
                let scrapes = match scraper {
                    Some(scraper) => scraper.await.unwrap(),
                    None => 0,
                };
                // Spans leave in batches at most half a second apart.
                tokio::time::sleep(Duration::from_secs(1)).await;
                let lines = std::fs::read_to_string(&log).map(|t| t.lines().count()).unwrap_or(0);
                println!("{:<40} {lines} audit events, {} spans received, {scrapes} scrapes", "", receiver.spans().len() - spans_before);
            }
        }
    }
    let median = |mut r: Vec<f64>| {
        r.sort_by(f64::total_cmp);
        r[r.len() / 2]
    };
    let [cpu_on, cpu_off] = cpus.map(median);
    println!("{:<40} {cpu_on:.0} µs observed, {cpu_off:.0} µs off: +{:.0} µs", "server CPU per create (median)", cpu_on - cpu_off);
    let [on, off] = rates.map(median);
    println!("{:<40} {on:.0}/s observed, {off:.0}/s off: {:.1}% (target ≥ 90%)", "median of rounds", 100.0 * on / off);
}
