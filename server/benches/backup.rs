//! The backup benchmark: a three-node release cluster (`deploy/local-cluster`) holding 100,000
//! 1 KiB ConfigMaps. `apiserver snapshot save` through a follower while the leader takes 1,000
//! creates a second: the save's throughput, the creates' p99 during it against the same load
//! without it, and the follower's resident memory over the save; then `apiserver snapshot
//! restore` of that file into a new single node's data directory, and the time until that node
//! serves. Then space under churn: a single node holding 1,000 ConfigMaps takes `BENCH_UPDATES`
//! (1,000,000) updates to them, and its database file and newest snapshot are set against the
//! live data. Run with `cargo bench -p apiserver --bench backup` (`BENCH_OBJECTS` sets the count
//! of the first part; `BENCH_ONLY=churn` runs the last part alone, `BENCH_ONLY=save` the first
//! without the restore and the churn; `BENCH_ROUNDS` repeats the load alone and during a save).

mod common;

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::ports::free_ports;
use common::{binary, client, concurrently, configmap, creates, local_cluster, percentile, rss_mib, LocalCluster, RssPeak, Server};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::PostParams;
use kube::Api;

/// The writes a second the leader takes while measured.
const RATE: u64 = 1_000;

/// What a paced load saw: the latencies of the creates that succeeded, sorted, and the errors.
struct Paced {
    latencies: Vec<Duration>,
    errors: Vec<String>,
}

/// Creates at `RATE` a second until `stop` is set (at least `at_least`).
async fn paced_creates(api: &Api<ConfigMap>, prefix: &str, at_least: Duration, stop: Arc<AtomicBool>) -> Paced {
    let mut tick = tokio::time::interval(Duration::from_micros(1_000_000 / RATE));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let started = Instant::now();
    let mut running = tokio::task::JoinSet::new();
    let mut n = 0;
    while started.elapsed() < at_least || !stop.load(Ordering::Relaxed) {
        tick.tick().await;
        let api = api.clone();
        let name = format!("{prefix}-{n}");
        n += 1;
        running.spawn(async move {
            let sent = Instant::now();
            api.create(&PostParams::default(), &configmap(&name)).await.map(|_| sent.elapsed()).map_err(|e| e.to_string())
        });
    }
    let (mut latencies, errors): (Vec<_>, Vec<_>) = running.join_all().await.into_iter().partition(Result::is_ok);
    let mut latencies: Vec<Duration> = latencies.drain(..).map(Result::unwrap).collect();
    latencies.sort();
    Paced { latencies, errors: errors.into_iter().map(Result::unwrap_err).collect() }
}

impl Paced {
    fn describe(&self) -> String {
        let mut out = format!("p99 {:.2} ms ({} creates)", p99_ms(&self.latencies), self.latencies.len());
        if let Some(first) = self.errors.first() {
            out.push_str(&format!(", {} failed (first: {first})", self.errors.len()));
        }
        out
    }
}

fn apiserver(args: &[&str]) -> String {
    let out = Command::new(binary()).args(args).output().expect("apiserver");
    assert!(out.status.success(), "apiserver {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn p99_ms(latencies: &[Duration]) -> f64 {
    percentile(latencies, 0.99).as_secs_f64() * 1e3
}

#[tokio::main]
async fn main() {
    if std::env::var("BENCH_ONLY").as_deref() == Ok("churn") {
        return churn().await;
    }
    let objects: usize = std::env::var("BENCH_OBJECTS").ok().and_then(|n| n.parse().ok()).unwrap_or(100_000);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap().to_string();
    let lb = free_ports(7);
    local_cluster(&["up", "--nodes", "3", "--dir", &d, "--lb-port", &lb.to_string(), "--base-port", &(lb + 1).to_string(), "--peer-base-port", &(lb + 4).to_string()]);
    let cluster = LocalCluster(dir.path().to_path_buf());
    let through_lb: Api<ConfigMap> = Api::default_namespaced(client(&dir.path().join("admin.kubeconfig")).await);
    let (el, _) = {
        let started = Instant::now();
        let (lat, _) = creates(&through_lb, "fill", objects, 128).await;
        (started.elapsed(), lat)
    };
    println!("filled {objects} ConfigMaps in {:.1} s", el.as_secs_f64());

    let mut nodes = Vec::new();
    for i in 1..=3 {
        nodes.push(client(&dir.path().join(format!("node-{i}.kubeconfig"))).await);
    }
    let metrics = nodes[0].request_text(http::Request::get("/metrics").body(vec![]).unwrap()).await.unwrap();
    let leader: usize = metrics.lines().find_map(|l| l.strip_prefix("apiserver_raft_leader_id ")).and_then(|v| v.parse().ok()).expect("a leader");
    let follower = if leader == 1 { 2 } else { 1 };
    let on_leader: Api<ConfigMap> = Api::default_namespaced(nodes[leader - 1].clone());
    let pids = std::fs::read_to_string(dir.path().join("pids")).unwrap();
    let follower_pid: u32 = pids.lines().find_map(|l| l.strip_prefix(&format!("node-{follower} "))).unwrap().trim().parse().unwrap();

    let rounds: usize = std::env::var("BENCH_ROUNDS").ok().and_then(|n| n.parse().ok()).unwrap_or(1);
    let file = dir.path().join("cluster.backup");
    for round in 1..=rounds {
        if rounds > 1 {
            println!("round {round} of {rounds}");
        }
        // The load alone.
        let without = paced_creates(&on_leader, &format!("alone-{round}"), Duration::from_secs(10), Arc::new(AtomicBool::new(true))).await;
        println!("creates at {RATE}/s on the leader, alone: {}", without.describe());

        // The load while a follower saves.
        let stop = Arc::new(AtomicBool::new(false));
        let load = tokio::spawn({
            let (api, stop, name) = (on_leader.clone(), stop.clone(), format!("during-{round}"));
            async move { paced_creates(&api, &name, Duration::from_secs(1), stop).await }
        });
        tokio::time::sleep(Duration::from_secs(1)).await;
        let rss_before = rss_mib(follower_pid);
        let peak = RssPeak::start(follower_pid);
        let kubeconfig = dir.path().join(format!("node-{follower}.kubeconfig"));
        let started = Instant::now();
        let saved = tokio::task::spawn_blocking({
            let (file, kubeconfig) = (file.clone(), kubeconfig.clone());
            move || apiserver(&["snapshot", "save", file.to_str().unwrap(), "--kubeconfig", kubeconfig.to_str().unwrap()])
        })
        .await
        .unwrap();
        let took = started.elapsed();
        let rss_peak = peak.stop();
        stop.store(true, Ordering::Relaxed);
        let during = load.await.unwrap();
        let bytes = std::fs::metadata(&file).unwrap().len();
        println!("{}", saved.trim());
        println!(
            "save through node {follower} (follower): {:.1} MiB in {:.2} s = {:.0} MiB/s; its RSS {rss_before:.0} MiB before, {rss_peak:.0} MiB at most (+{:.0} MiB)",
            bytes as f64 / (1 << 20) as f64,
            took.as_secs_f64(),
            bytes as f64 / (1 << 20) as f64 / took.as_secs_f64(),
            rss_peak - rss_before
        );
        println!("creates at {RATE}/s on the leader during the save: {}, {:.2}x of alone", during.describe(), p99_ms(&during.latencies) / p99_ms(&without.latencies));
    }
    if std::env::var("BENCH_ONLY").as_deref() == Ok("save") {
        return;
    }
    drop(cluster);

    // Restored into a new single node's data directory, which then starts and serves.
    let restored = tempfile::tempdir().unwrap();
    let data = restored.path().join("data");
    let started = Instant::now();
    apiserver(&["snapshot", "restore", file.to_str().unwrap(), "--data-dir", data.to_str().unwrap()]);
    let restore = started.elapsed();
    let port = free_ports(1);
    let mut node = Command::new(binary())
        .args(["--data-dir", data.to_str().unwrap(), "--secure-port", &port.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let serving = wait_ready(&data.join("admin.kubeconfig"), objects).await;
    println!(
        "restore of {objects} objects: {:.2} s to prepare the data directory, then {:.2} s until the node serves them",
        restore.as_secs_f64(),
        serving.as_secs_f64()
    );
    let _ = node.kill();
    let _ = node.wait();
    churn().await;
}

/// A figure from `/metrics`.
async fn metric(node: &kube::Client, name: &str) -> f64 {
    let text = node.request_text(http::Request::get("/metrics").body(vec![]).unwrap()).await.unwrap();
    text.lines().find_map(|l| l.strip_prefix(name).and_then(|rest| rest.strip_prefix(' '))).and_then(|v| v.parse().ok()).unwrap_or(0.0)
}

/// Updates 1,000 objects over and over on a single node; prints the database file's and the
/// newest snapshot's sizes against the live data.
async fn churn() {
    let updates: usize = std::env::var("BENCH_UPDATES").ok().and_then(|n| n.parse().ok()).unwrap_or(1_000_000);
    let server = Server::start(&[]);
    let node = server.client().await;
    let api: Api<ConfigMap> = Api::default_namespaced(node.clone());
    creates(&api, "churn", 1_000, 32).await;
    let names: Arc<Vec<String>> = Arc::new((0..1_000).map(|i| format!("churn-{}-{}", i % 32, i / 32)).collect());
    let clients = 64;
    let (_, el) = concurrently(updates, clients, {
        let (api, names) = (api.clone(), names.clone());
        move |c, i| {
            let (api, names) = (api.clone(), names.clone());
            async move {
                // Each client its own objects: no two writers race on one.
                let name = &names[(c + i * clients) % names.len()];
                let patch = serde_json::json!({"data": {"v": format!("{c}-{i}-{}", "x".repeat(1000))}});
                api.patch(name, &kube::api::PatchParams::default(), &kube::api::Patch::Merge(&patch)).await.expect("update");
            }
        }
    })
    .await;
    let live = metric(&node, "etcd_mvcc_db_total_size_in_use_in_bytes").await;
    let file = metric(&node, "etcd_mvcc_db_total_size_in_bytes").await;
    let snapshot = newest_snapshot(server.data_dir());
    let mib = |b: f64| b / (1 << 20) as f64;
    println!(
        "{updates} updates of 1,000 objects in {:.0} s: live data {:.1} MiB, raft.redb {:.1} MiB ({:.1}x), newest snapshot {:.1} MiB ({:.1}x)",
        el.as_secs_f64(),
        mib(live),
        mib(file),
        file / live,
        mib(snapshot),
        snapshot / live
    );
}

/// The size of the newest snapshot file under `data` (0 without one).
fn newest_snapshot(data: &Path) -> f64 {
    let mut newest: Option<(std::time::SystemTime, u64)> = None;
    let mut dirs = vec![data.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let (path, meta) = (entry.path(), entry.metadata().unwrap());
            if meta.is_dir() {
                dirs.push(path);
            } else if path.to_string_lossy().contains("snapshot") {
                let at = meta.modified().unwrap();
                if newest.is_none_or(|(t, _)| at > t) {
                    newest = Some((at, meta.len()));
                }
            }
        }
    }
    newest.map_or(0.0, |(_, len)| len as f64)
}

/// The time until the node whose kubeconfig is `kubeconfig` answers a list with `objects` or
/// more ConfigMaps.
async fn wait_ready(kubeconfig: &Path, objects: usize) -> Duration {
    let started = Instant::now();
    loop {
        assert!(started.elapsed() < Duration::from_secs(300), "the restored node did not serve within 5 minutes");
        if kubeconfig.exists() {
            let api: Api<ConfigMap> = Api::default_namespaced(client(kubeconfig).await);
            let page = api.list_metadata(&kube::api::ListParams::default().limit(1)).await;
            if let Ok(page) = page {
                let total = page.metadata.remaining_item_count.unwrap_or(0) as usize + page.items.len();
                if total >= objects {
                    return started.elapsed();
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
