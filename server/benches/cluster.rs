//! The cluster benchmark: three release nodes started by `deploy/local-cluster` behind HAProxy,
//! 1 KiB ConfigMaps. Create throughput at 32 and 128 clients through the balancer, straight at
//! the leader and straight at a follower; consistent and rv=0 GET throughput on each node;
//! leader-kill recovery (from `kill -9` of the leader to the next acknowledged write through the
//! balancer). Each create figure is also given as a share of a single node's at the same number
//! of clients, measured in the same run just before and just after the cluster's create
//! phases, because this machine's speed drifts by up to 2x over minutes. Each create phase also
//! prints, per node, the entries, time and log writer CPU per log flush. Then the latency rows
//! (`cluster/latency.rs`), each against the single node. Run with `cargo bench -p apiserver
//! --bench cluster`; `-- latency` runs the latency rows alone.

mod common;
#[path = "cluster/latency.rs"]
mod latency;

use std::process::Command;
use std::time::{Duration, Instant};

use common::ports::free_ports;
use common::{client, configmap, creates, gets, local_cluster, report, thread_cpu_time, CpuMeter, LocalCluster, Server};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{GetParams, PostParams};
use kube::Api;

/// The nodes' `--snapshot-count`, on the single node and the cluster alike. A snapshot copies
/// the whole state; with the default (50,000) the cluster, which takes more writes in this
/// bench, would build one on every node inside one create phase and the single node none.
/// With this count neither builds one while measured.
const SNAPSHOT_COUNT: &str = "1000000";

/// Creates on the single node at 32 and at 128 clients; returns (clients, throughput) of each.
async fn single_node_creates(server: &Server, api: &Api<ConfigMap>, when: &str) -> Vec<(usize, f64)> {
    let node = [server.client().await];
    let mut rates = Vec::new();
    for (clients, total) in [(32, 8_000), (128, 16_000)] {
        let cpu = CpuMeter::start(&[("server".into(), server.pid())]);
        let flushes = FlushMeter::start(&node, &[server.pid()]).await;
        let (lat, el) = creates(api, &format!("{when}{clients}"), total, clients).await;
        rates.push((clients, report(&format!("single node, create {clients} clients"), lat, el)));
        cpu.report(total);
        flushes.report(&node, |_| "server".into()).await;
    }
    rates
}

#[tokio::main]
async fn main() {
    // `cargo bench -p apiserver --bench cluster -- latency` runs the latency rows alone.
    let only_latency = std::env::args().any(|a| a == "latency");
    let single = Server::start(&["--snapshot-count", SNAPSHOT_COUNT]);
    let single_api: Api<ConfigMap> = Api::default_namespaced(single.client().await);
    let mut single_rates = if only_latency { Vec::new() } else { single_node_creates(&single, &single_api, "before").await };

    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap().to_string();
    let lb = free_ports(7);
    let (base, peer) = (lb + 1, lb + 4);
    local_cluster(&[
        "up", "--nodes", "3", "--dir", &d, "--lb-port", &lb.to_string(), "--base-port", &base.to_string(), "--peer-base-port", &peer.to_string(),
        "--", "--snapshot-count", SNAPSHOT_COUNT,
    ]);
    let cluster = LocalCluster(dir.path().to_path_buf());
    let through_lb: Api<ConfigMap> = Api::default_namespaced(client(&dir.path().join("admin.kubeconfig")).await);
    let mut nodes = Vec::new();
    for i in 1..=3 {
        nodes.push(client(&dir.path().join(format!("node-{i}.kubeconfig"))).await);
    }
    let leader_id = leader_of(&nodes[0]).await;
    let on_leader: Api<ConfigMap> = Api::default_namespaced(nodes[leader_id as usize - 1].clone());
    let follower_id = if leader_id == 1 { 2 } else { 1 };
    let on_follower: Api<ConfigMap> = Api::default_namespaced(nodes[follower_id - 1].clone());
    println!("leader: node {leader_id}");

    // Every process of the cluster, named for the CPU report.
    let procs: Vec<(String, u32)> = std::fs::read_to_string(dir.path().join("pids"))
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(name, pid)| {
            let role = if name == format!("node-{leader_id}") { " (leader)" } else { "" };
            (format!("{name}{role}"), pid.trim().parse().unwrap())
        })
        .collect();
    // The nodes' process ids, in node order, for their log writer threads' CPU.
    let node_pids: Vec<u32> = (1..=3).map(|i| procs.iter().find(|(name, _)| name.starts_with(&format!("node-{i}"))).expect("node pid").1).collect();
    let single_client = single.client().await;
    if !only_latency {
        let mut cluster_rates: Vec<(String, usize, f64)> = Vec::new();
        for (name, api, prefix, total, clients) in [
            ("create via LB, 32 clients".to_string(), &through_lb, "lb32", 8_000, 32),
            ("create via LB, 128 clients".to_string(), &through_lb, "lb128", 16_000, 128),
            ("create on the leader, 32 clients".to_string(), &on_leader, "ld32", 8_000, 32),
            ("create on the leader, 128 clients".to_string(), &on_leader, "ld128", 16_000, 128),
            (format!("create on node {follower_id} (follower), 32 clients"), &on_follower, "fl32", 8_000, 32),
            (format!("create on node {follower_id} (follower), 128 clients"), &on_follower, "fl128", 16_000, 128),
        ] {
            let cpu = CpuMeter::start(&procs);
            let flushes = FlushMeter::start(&nodes, &node_pids).await;
            let (lat, el) = creates(api, prefix, total, clients).await;
            cluster_rates.push((name.clone(), clients, report(&name, lat, el)));
            cpu.report(total);
            flushes.report(&nodes, |i| format!("node-{}", i + 1)).await;
        }
        single_rates.extend(single_node_creates(&single, &single_api, "after").await);
        for (name, clients, rate) in &cluster_rates {
            let at: Vec<f64> = single_rates.iter().filter(|(c, _)| c == clients).map(|(_, r)| *r).collect();
            let single_rate = at.iter().sum::<f64>() / at.len() as f64;
            println!(
                "{name:<40} {:.0}% of the single node at {clients} clients ({single_rate:.0} ops/s, mean of before and after)",
                rate * 100.0 / single_rate
            );
        }

        let names: Vec<String> = (0..1000).map(|i| format!("lb32-{}-{}", i % 32, i / 32)).collect();
        for (i, node) in nodes.iter().enumerate() {
            let api: Api<ConfigMap> = Api::default_namespaced(node.clone());
            let role = if i as u64 + 1 == leader_id { "leader" } else { "follower" };
            for (what, params) in [("consistent", GetParams::default()), ("rv=0", GetParams::any())] {
                let (lat, el) = gets(&api, &names, &params, 1_000, 1).await;
                report(&format!("GET {what}, node {} ({role}), 1 client", i + 1), lat, el);
                let (lat, el) = gets(&api, &names, &params, 8_000, 32).await;
                report(&format!("GET {what}, node {} ({role}), 32 clients", i + 1), lat, el);
            }
        }

    }
    latency::rows(&single_client, &through_lb.clone().into_client(), &nodes, leader_id).await;
    drop(single);
    if only_latency {
        return;
    }

    // Leader kill: time from SIGKILL to the next write acknowledged through the balancer.
    let pids = std::fs::read_to_string(dir.path().join("pids")).unwrap();
    let pid = pids.lines().find_map(|l| l.strip_prefix(&format!("node-{leader_id} "))).unwrap().trim().to_string();
    let killed = Instant::now();
    assert!(Command::new("kill").args(["-9", &pid]).status().unwrap().success());
    let mut n = 0;
    loop {
        n += 1;
        if through_lb.create(&PostParams::default(), &configmap(&format!("recovery-{n}"))).await.is_ok() {
            break;
        }
        assert!(killed.elapsed() < Duration::from_secs(30), "no write within 30 s of the leader kill");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    println!("{:<40} {:.0} ms ({n} attempts)", "leader kill -> next acknowledged write", killed.elapsed().as_secs_f64() * 1e3);
    drop(cluster);
}

/// A node's `/metrics` text.
async fn metrics_text(node: &kube::Client) -> String {
    node.request_text(http::Request::get("/metrics").body(vec![]).unwrap()).await.expect("metrics")
}

/// A sample's value from a node's `/metrics` (0 when absent).
async fn metric(node: &kube::Client, name: &str) -> f64 {
    metrics_text(node)
        .await
        .lines()
        .find_map(|l| l.strip_prefix(name).filter(|rest| rest.starts_with(['{', ' '])))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

/// Each node's log flushes over one phase: entries and time per flush (from its metrics), and
/// the CPU its log writer thread spent per flush.
struct FlushMeter {
    pids: Vec<u32>,
    /// Per node: flushes, entries flushed, seconds spent, and the writer's CPU so far.
    start: Vec<(f64, f64, f64, Duration)>,
}

impl FlushMeter {
    async fn start(nodes: &[kube::Client], pids: &[u32]) -> FlushMeter {
        FlushMeter { pids: pids.to_vec(), start: Self::read(nodes, pids).await }
    }

    async fn read(nodes: &[kube::Client], pids: &[u32]) -> Vec<(f64, f64, f64, Duration)> {
        let mut out = Vec::new();
        for (node, pid) in nodes.iter().zip(pids) {
            out.push((
                metric(node, "etcd_disk_wal_fsync_duration_seconds_count").await,
                metric(node, "apiserver_raft_log_flushed_entries_total").await,
                metric(node, "etcd_disk_wal_fsync_duration_seconds_sum").await,
                thread_cpu_time(*pid, "raft-log-writer"),
            ));
        }
        out
    }

    async fn report(&self, nodes: &[kube::Client], name: impl Fn(usize) -> String) {
        let end = Self::read(nodes, &self.pids).await;
        let per_node: Vec<String> = self
            .start
            .iter()
            .zip(&end)
            .enumerate()
            .map(|(i, (b, a))| {
                let n = (a.0 - b.0).max(1.0);
                let writer = a.3.saturating_sub(b.3).as_secs_f64();
                format!("{} {:.1} entries, {:.2} ms, {:.0} µs of writer CPU", name(i), (a.1 - b.1) / n, (a.2 - b.2) * 1e3 / n, writer * 1e6 / n)
            })
            .collect();
        println!("    per log flush: {}", per_node.join("; "));
    }
}

/// The leader's id as a node's `/metrics` reports it.
async fn leader_of(node: &kube::Client) -> u64 {
    for _ in 0..100 {
        let id = metric(node, "apiserver_raft_leader_id").await as u64;
        if id != 0 {
            return id;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no leader");
}
