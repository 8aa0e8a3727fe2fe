//! Two server builds side by side, in one sitting: each round starts build A, then build B, on
//! fresh data directories and runs the same workloads against each (1 KiB ConfigMaps, one node,
//! HTTP/1.1 through kube-rs): creates from 1 and from 32 clients, read-modify-write updates
//! from 16 clients, GETs at `resourceVersion=0` from 16 clients, and a full LIST of 10,000
//! objects (its body read whole but not decoded, so that the figure is the server's). It prints
//! each run's figures, then B against A per round (a throughput ratio above 1 or a latency
//! ratio below 1 means B is faster).
//!
//! `BENCH_A=OLD_BINARY cargo bench -p apiserver --bench ab` (B is this package's release build
//! unless `BENCH_B` names another; `BENCH_ROUNDS`, default 2; `BENCH_GETS`, default 40,000, the
//! GETs, more for a profile of them; `BENCH_NODES=3` runs each build as three nodes behind
//! HAProxy, started by `deploy/local-cluster`, instead of one). Both run with no flags beyond
//! their data directory and ports, so any build of the server can be A.

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::ports::free_ports;
use common::{concurrently, creates, gets, local_cluster_of, percentile, report, LocalCluster, Server};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{GetParams, ListParams, PostParams};
use kube::Api;

/// One run's figures: throughputs in operations per second, latencies in milliseconds.
#[derive(Debug, Clone, Copy)]
struct Figures {
    create_1_p50: f64,
    create_32: f64,
    update_16: f64,
    get_any_16: f64,
    list_10k_p50: f64,
}

/// The measures, with whether a higher figure is better.
const MEASURES: &[(&str, bool, fn(&Figures) -> f64)] = &[
    ("create, 1 client, p50 (ms)", false, |f| f.create_1_p50),
    ("create, 32 clients (/s)", true, |f| f.create_32),
    ("update (read-modify-write), 16 clients (/s)", true, |f| f.update_16),
    ("GET rv=0, 16 clients (/s)", true, |f| f.get_any_16),
    ("LIST of 10,000, p50 (ms)", false, |f| f.list_10k_p50),
];

#[tokio::main]
async fn main() {
    let a: PathBuf = std::env::var_os("BENCH_A").expect("BENCH_A names the build to compare with").into();
    let b: PathBuf = std::env::var_os("BENCH_B").map_or_else(|| env!("CARGO_BIN_EXE_apiserver").into(), Into::into);
    let rounds: usize = std::env::var("BENCH_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(2);
    let nodes: usize = std::env::var("BENCH_NODES").ok().and_then(|n| n.parse().ok()).unwrap_or(1);
    let mut results = Vec::new();
    for round in 1..=rounds {
        let fa = run(&format!("round {round}, A"), &a, nodes).await;
        let fb = run(&format!("round {round}, B"), &b, nodes).await;
        results.push((fa, fb));
    }
    println!("\nA = {}\nB = {}\n{nodes} node(s)", a.display(), b.display());
    println!("{:<46} {}", "measure", (1..=rounds).map(|r| format!("  {:>26}", format!("round {r}: A, B, B/A"))).collect::<String>());
    for (name, _, get) in MEASURES {
        let cells: String = results.iter().map(|(fa, fb)| format!("  {:>26}", format!("{:.2}, {:.2}, {:.2}", get(fa), get(fb), get(fb) / get(fa)))).collect();
        println!("{name:<46} {cells}");
    }
}

/// A fresh server of build `binary` (`nodes` of them behind HAProxy when more than one), kept
/// running while the first value lives, and a client of it.
async fn start(binary: &std::path::Path, nodes: usize) -> (Box<dyn std::any::Any>, kube::Client) {
    if nodes == 1 {
        let server = Server::start_binary(binary, &[]);
        let client = server.client().await;
        return (Box::new(server), client);
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().to_str().unwrap();
    let n = nodes as u16;
    let lb = free_ports(1 + 2 * n);
    local_cluster_of(binary, &["up", "--nodes", &n.to_string(), "--dir", d, "--lb-port", &lb.to_string(), "--base-port", &(lb + 1).to_string(), "--peer-base-port", &(lb + 1 + n).to_string()]);
    let client = common::client(&dir.path().join("admin.kubeconfig")).await;
    // Stopped first, then its directory removed.
    (Box::new((LocalCluster(dir.path().to_path_buf()), dir)), client)
}

/// The workloads against a fresh server of build `binary`.
async fn run(label: &str, binary: &std::path::Path, nodes: usize) -> Figures {
    println!("\n{label}: {}", binary.display());
    let (_server, client) = start(binary, nodes).await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");

    let (lat, el) = creates(&api, "single", 1_000, 1).await;
    let create_1_p50 = p50_ms(&lat);
    report("create, 1 client", lat, el);
    let (lat, el) = creates(&api, "c32", 16_000, 32).await;
    let create_32 = report("create, 32 clients", lat, el);

    // Each of 16 clients updates its own 10 objects in turn: read, change, replace.
    let (lat, el) = concurrently(4_000, 16, {
        let api = api.clone();
        move |c, i| {
            let api = api.clone();
            async move { read_modify_write(&api, &format!("c32-{c}-{}", i % 10), i).await }
        }
    })
    .await;
    let update_16 = report("update (read-modify-write), 16 clients", lat, el);

    let names: Vec<String> = (0..1_000).map(|i| format!("single-0-{i}")).collect();
    let total: usize = std::env::var("BENCH_GETS").ok().and_then(|n| n.parse().ok()).unwrap_or(40_000);
    let (lat, el) = gets(&api, &names, &GetParams::any(), total, 16).await;
    let get_any_16 = report("get rv=0, 16 clients", lat, el);

    let ns: Api<Namespace> = Api::all(client.clone());
    let mut list_ns = Namespace::default();
    list_ns.metadata.name = Some("list10k".into());
    ns.create(&PostParams::default(), &list_ns).await.expect("namespace");
    let list_api: Api<ConfigMap> = Api::namespaced(client.clone(), "list10k");
    creates(&list_api, "l", 10_000, 32).await;
    // The root CA publisher's ConfigMap may be there too.
    let items = list_api.list(&ListParams::default()).await.expect("list");
    assert!(items.items.len() >= 10_000, "{} items", items.items.len());
    // Timed as the server answers it: the body read whole, not decoded by the client.
    let mut lat = Vec::new();
    let started = Instant::now();
    for _ in 0..20 {
        let t = Instant::now();
        let request = http::Request::get("/api/v1/namespaces/list10k/configmaps").body(Vec::new()).unwrap();
        let body = client.request_text(request).await.expect("list");
        assert!(body.len() > 10_000 * 1024, "{} bytes", body.len());
        lat.push(t.elapsed());
    }
    let list_10k_p50 = p50_ms(&lat);
    report("list 10,000 (consistent)", lat, started.elapsed());
    Figures { create_1_p50, create_32, update_16, get_any_16, list_10k_p50 }
}

/// Reads the object `name`, changes its payload and replaces it, again on a conflict.
async fn read_modify_write(api: &Api<ConfigMap>, name: &str, i: usize) {
    loop {
        let mut cm = api.get(name).await.expect("get");
        cm.data = Some([("payload".to_string(), format!("{i:08}{}", "x".repeat(1024 - 108)))].into());
        match api.replace(name, &PostParams::default(), &cm).await {
            Ok(_) => return,
            Err(kube::Error::Api(s)) if s.code == 409 => continue,
            Err(e) => panic!("update {name}: {e}"),
        }
    }
}

fn p50_ms(lat: &[Duration]) -> f64 {
    let mut sorted = lat.to_vec();
    sorted.sort();
    percentile(&sorted, 0.5).as_secs_f64() * 1e3
}
