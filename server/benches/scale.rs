//! The scale harness: a large cluster's control-plane traffic, made the way real nodes and
//! controllers make it, against this server or any Kubernetes API server.
//!
//! ```sh
//! cargo bench -p apiserver --bench scale -- [--kubeconfig ADMIN_KUBECONFIG --ca-dir DIR] \
//!     [--nodes N] [--pods-per-node P] [--rate PODS_PER_S] [--steady SECONDS] [--informers K] \
//!     [--replicas R] [--idle-watches W]
//! ```
//!
//! `DIR` holds the cluster CA's `ca.crt` and `ca.key`, which mint each simulated node's client
//! certificate. Without `--kubeconfig` the harness brings up its own `R` replicas (three by
//! default) behind HAProxy (`deploy/local-cluster`, release build) and reports their CPU and
//! memory too; with `--idle-watches W` it first opens W watches that see no event and reports the
//! replicas' memory per watch.
//!
//! Every simulated node, and each of the control plane's clients (the scheduler, each informer,
//! the load test's reads), speak HTTP/2 over one connection each, as client-go does; the pods are
//! created and deleted through a pool of connections, one per 100 nodes, as SIG Scalability's
//! ClusterLoader2 spreads its calls over its clients, so that they do not queue behind one
//! connection's 100 streams.
//!
//! Phases: N nodes register (`kubelet`: Node, Lease, renewals, status, watches); P pods per node
//! are created at `--rate` in namespaces of 100, bound by the scheduler and reported Running by
//! their nodes (density); the traffic holds for `--steady` seconds with namespaced LISTs and GETs
//! (`control::load`) and cluster-wide informers; a tenth of the pods are deleted and created again
//! (churn); every pod is deleted (teardown). Deletes go at `--rate` too. Each phase prints its
//! SLIs; the last line sums the run against Kubernetes' SLOs (mutating and single-object or
//! namespaced reads p99 ≤ 1 s, cluster-wide LIST p99 ≤ 30 s) and this project's targets (100 ms,
//! 100 ms, 5 s, watch delivery p99 ≤ 1 s).

mod common;
#[path = "scale/control.rs"]
mod control;
#[path = "scale/h2.rs"]
mod h2;
#[path = "scale/kubelet.rs"]
mod kubelet;
#[path = "scale/objects.rs"]
mod objects;
#[path = "scale/reflector.rs"]
mod reflector;
#[path = "scale/sli.rs"]
mod sli;

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::ports::free_ports;
use common::user_cert::write_kubeconfig;
use common::{cpu_time, local_cluster, rss_mib, LocalCluster};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, Pod, Secret};
use kube::api::{DeleteParams, PostParams};
use kube::Api;
use sli::{percentile, Phase, Scope, Sli};
use tokio::sync::{watch, Semaphore};

/// Pods per namespace.
const PER_NAMESPACE: usize = 100;
/// Simulated nodes per connection that pods are created and deleted through (SIG
/// Scalability's ClusterLoader2 makes one client per 100 nodes).
const NODES_PER_CREATOR: usize = 100;

struct Args {
    kubeconfig: Option<PathBuf>,
    ca_dir: Option<PathBuf>,
    nodes: usize,
    pods_per_node: usize,
    rate: u64,
    steady: Duration,
    informers: usize,
    replicas: usize,
    idle_watches: usize,
}

fn args() -> Args {
    let mut a = Args { kubeconfig: None, ca_dir: None, nodes: 100, pods_per_node: 30, rate: 100, steady: Duration::from_secs(60), informers: 3, replicas: 3, idle_watches: 0 };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--kubeconfig" => a.kubeconfig = Some(value().into()),
            "--ca-dir" => a.ca_dir = Some(value().into()),
            "--nodes" => a.nodes = value().parse().expect("--nodes N"),
            "--pods-per-node" => a.pods_per_node = value().parse().expect("--pods-per-node P"),
            "--rate" => a.rate = value().parse().expect("--rate PODS_PER_S"),
            "--steady" => a.steady = Duration::from_secs(value().parse().expect("--steady SECONDS")),
            "--informers" => a.informers = value().parse().expect("--informers K"),
            "--replicas" => a.replicas = value().parse().expect("--replicas R"),
            "--idle-watches" => a.idle_watches = value().parse().expect("--idle-watches W"),
            "--bench" => {}
            other => panic!("unknown argument {other}"),
        }
    }
    a
}

pub fn pod_name(ns: &str, i: usize) -> String {
    format!("{ns}-pod-{i}")
}

/// The servers' processes, when the harness started them: CPU and memory per phase.
struct Servers {
    pids: Vec<u32>,
}

impl Servers {
    fn cpu(&self) -> Vec<Duration> {
        self.pids.iter().map(|p| cpu_time(*p)).collect()
    }

    /// The replicas' resident memory, all told, in MiB.
    fn rss(&self) -> f64 {
        self.pids.iter().map(|p| rss_mib(*p)).sum()
    }

    fn print(&self, before: &[Duration], took: Duration) {
        for (i, (pid, was)) in self.pids.iter().zip(before).enumerate() {
            let used = cpu_time(*pid).saturating_sub(*was);
            println!("  replica {}: CPU {:.0}% of a core, RSS {:.0} MiB", i + 1, 100.0 * used.as_secs_f64() / took.as_secs_f64(), rss_mib(*pid));
        }
    }
}

/// All figures of the run, for the last line.
#[derive(Default)]
struct Totals {
    mutating: Vec<Duration>,
    reads: Vec<Duration>,
    cluster_lists: Vec<Duration>,
    watch: Vec<Duration>,
    server_errors: u64,
}

impl Totals {
    fn add(&mut self, p: &Phase) {
        self.mutating.extend(p.merged(|c| c.mutating()));
        self.reads.extend(p.merged(|c| !c.mutating() && c.scope != Scope::Cluster));
        self.cluster_lists.extend(p.merged(|c| c.verb == "LIST" && c.resource == "pods" && c.scope == Scope::Cluster));
        self.watch.extend(p.watch.iter().copied());
        self.server_errors += p.errors.iter().filter(|(what, _)| what.rsplit(' ').next().is_some_and(|code| code.starts_with('5'))).map(|(_, n)| n).sum::<u64>();
    }
}

/// Waits until `done` holds or `within` passed; says which.
async fn wait_for(within: Duration, mut done: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + within;
    while Instant::now() < until {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    done()
}

#[tokio::main]
async fn main() {
    let a = args();
    let own = tempfile::tempdir().unwrap();
    let (_cluster, kubeconfig, ca_dir, servers) = match (&a.kubeconfig, &a.ca_dir) {
        (Some(k), Some(c)) => (None, k.clone(), c.clone(), None),
        (None, None) => {
            let d = own.path().to_str().unwrap().to_string();
            let lb = free_ports(7);
            local_cluster(&["up", "--nodes", &a.replicas.to_string(), "--dir", &d, "--lb-port", &lb.to_string(), "--base-port", &(lb + 1).to_string(), "--peer-base-port", &(lb + 4).to_string()]);
            let pids = std::fs::read_to_string(own.path().join("pids")).unwrap();
            let pids = pids.lines().filter(|l| l.starts_with("node-")).filter_map(|l| l.split_whitespace().nth(1)?.parse().ok()).collect();
            (Some(LocalCluster(own.path().to_path_buf())), own.path().join("admin.kubeconfig"), own.path().join("ca").join("pki"), Some(Servers { pids }))
        }
        _ => panic!("--kubeconfig and --ca-dir go together"),
    };
    let admin = h2::client(&kubeconfig).await;
    let mut creators = Vec::new();
    for _ in 0..a.nodes.div_ceil(NODES_PER_CREATOR) {
        creators.push(h2::client(&kubeconfig).await);
    }
    if let (Some(servers), true) = (&servers, a.idle_watches > 0) {
        idle_watches(&kubeconfig, a.idle_watches, servers).await;
    }
    let sli = Arc::new(Sli::default());
    let (stop_tx, stop) = watch::channel(false);
    let mut totals = Totals::default();
    let total_pods = a.nodes * a.pods_per_node;
    // Names of this run's own, so that runs against one cluster do not meet.
    let run = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() % 100_000;
    let namespaces: Arc<Vec<String>> = Arc::new((0..total_pods.div_ceil(PER_NAMESPACE).max(1)).map(|i| format!("scale-{run}-{i}")).collect());
    println!("{} nodes, {} pods/node ({total_pods} pods in {} namespaces), pods created at {}/s, {} informers of each kind", a.nodes, a.pods_per_node, namespaces.len(), a.rate, a.informers);

    let phase = |name: &str, started: Instant, cpu: &Option<Vec<Duration>>, totals: &mut Totals| {
        let p = sli.take();
        p.print(name, started.elapsed());
        if let (Some(s), Some(before)) = (&servers, cpu) {
            s.print(before, started.elapsed());
        }
        totals.add(&p);
    };

    // Namespaces, each with the ConfigMap and Secret its pods use.
    for ns in namespaces.iter() {
        let mut n = Namespace::default();
        n.metadata.name = Some(ns.clone());
        Api::<Namespace>::all(admin.clone()).create(&PostParams::default(), &n).await.expect("a namespace");
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some("settings".into());
        cm.data = Some([("LOG_LEVEL".to_string(), "info".to_string())].into());
        Api::<ConfigMap>::namespaced(admin.clone(), ns).create(&PostParams::default(), &cm).await.expect("a ConfigMap");
        let mut secret = Secret::default();
        secret.metadata.name = Some("credentials".into());
        secret.string_data = Some([("TOKEN".to_string(), "not-a-real-token".to_string())].into());
        Api::<Secret>::namespaced(admin.clone(), ns).create(&PostParams::default(), &secret).await.expect("a Secret");
    }

    // Register: every node with its own certificate and connection.
    let cpu = servers.as_ref().map(Servers::cpu);
    let started = Instant::now();
    let creds = tempfile::tempdir().unwrap();
    let names: Arc<Vec<String>> = Arc::new((0..a.nodes).map(|i| format!("node-{run}-{i:05}")).collect());
    let seats = Arc::new(Semaphore::new(32));
    let mut registering = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let (seats, sli, stop, name) = (seats.clone(), sli.clone(), stop.clone(), name.clone());
        let file = creds.path().join(format!("{name}.kubeconfig"));
        let (kubeconfig, ca_dir) = (kubeconfig.clone(), ca_dir.clone());
        registering.push(tokio::spawn(async move {
            let _seat = seats.acquire().await;
            write_kubeconfig(&kubeconfig, &ca_dir, &format!("system:node:{name}"), &["system:nodes"], &file);
            let node = kubelet::Kubelet::new(name, i, h2::client(&file).await, sli, stop);
            let lease = node.register().await.unwrap_or_else(|e| panic!("node {} did not register: {e}", node.name));
            let tasks = node.run(lease);
            (node, tasks)
        }));
    }
    let mut kubelets = Vec::new();
    let mut tasks = Vec::new();
    for r in registering {
        let (node, t) = r.await.unwrap();
        kubelets.push(node);
        tasks.extend(t);
    }
    println!("a Node is {} bytes of JSON", objects::json_size(&objects::node("node-00000", 0)));
    phase("register", started, &cpu, &mut totals);

    // The control plane's clients.
    tasks.push(tokio::spawn(control::scheduler(h2::client(&kubeconfig).await, names.clone(), sli.clone(), stop.clone())));
    for i in 0..a.informers {
        tasks.extend(control::informers(h2::client(&kubeconfig).await, i == 0, &sli, &stop));
    }

    // Density: the pods created at the rate, bound, and running.
    let cpu = servers.as_ref().map(Servers::cpu);
    let started = Instant::now();
    let running = || kubelets.iter().map(|k| k.running.load(Ordering::Relaxed)).sum::<u64>();
    create_pods(&creators, &namespaces, (0..total_pods).collect(), a.rate, &sli).await;
    let all_running = wait_for(Duration::from_secs(120), || running() >= total_pods as u64).await;
    println!("{} of {total_pods} pods running{}", running(), if all_running { "" } else { " (gave up waiting)" });
    phase("density", started, &cpu, &mut totals);

    // Steady state with the load test's reads.
    let cpu = servers.as_ref().map(Servers::cpu);
    let started = Instant::now();
    let (load_stop_tx, load_stop) = watch::channel(false);
    let load = tokio::spawn(control::load(h2::client(&kubeconfig).await, namespaces.clone(), total_pods / namespaces.len(), 20, sli.clone(), load_stop));
    tokio::time::sleep(a.steady).await;
    load_stop_tx.send(true).ok();
    load.await.ok();
    phase("steady", started, &cpu, &mut totals);

    // Churn: a tenth of the pods deleted, each node finishing its own, and created again.
    let cpu = servers.as_ref().map(Servers::cpu);
    let started = Instant::now();
    let churned: Vec<usize> = (0..total_pods).step_by(10).collect();
    delete_pods(&creators, &namespaces, &churned, a.rate, &sli).await;
    let gone = wait_for(Duration::from_secs(120), || running() <= (total_pods - churned.len()) as u64).await;
    create_pods(&creators, &namespaces, churned, a.rate, &sli).await;
    let back = wait_for(Duration::from_secs(120), || running() >= total_pods as u64).await;
    println!("churn: {} pods running again{}", running(), if gone && back { "" } else { " (gave up waiting)" });
    phase("churn", started, &cpu, &mut totals);

    // Teardown: every pod deleted, the nodes finishing them.
    let cpu = servers.as_ref().map(Servers::cpu);
    let started = Instant::now();
    delete_pods(&creators, &namespaces, &(0..total_pods).collect::<Vec<_>>(), a.rate, &sli).await;
    let down = wait_for(Duration::from_secs(120), || running() == 0).await;
    println!("teardown: {} pods still running{}", running(), if down { "" } else { " (gave up waiting)" });
    phase("teardown", started, &cpu, &mut totals);
    stop_tx.send(true).ok();
    for t in tasks {
        t.abort();
    }
    summary(&a, &mut totals);
    // What the run leaves behind goes (untimed), for the next run on the same cluster.
    for name in names.iter() {
        let _ = Api::<Node>::all(admin.clone()).delete(name, &DeleteParams::default()).await;
    }
    for ns in namespaces.iter() {
        let _ = Api::<Namespace>::all(admin.clone()).delete(ns, &DeleteParams::default()).await;
    }
}

/// Memory per idle watch: `count` watches of names no object has (streams of connections of
/// 90, under the server's default of 100), the replicas' resident memory before and after.
async fn idle_watches(kubeconfig: &std::path::Path, count: usize, servers: &Servers) {
    use futures::StreamExt;
    const PER_CONNECTION: usize = 90;
    let before = servers.rss();
    let mut streams = Vec::new();
    for c in 0..count.div_ceil(PER_CONNECTION) {
        let configmaps: Api<ConfigMap> = Api::namespaced(h2::client(kubeconfig).await, "default");
        for i in 0..PER_CONNECTION.min(count - c * PER_CONNECTION) {
            let params = kube::api::WatchParams::default().fields(&format!("metadata.name=idle-{c}-{i}")).timeout(3600);
            streams.push(configmaps.watch(&params, "0").await.expect("an idle watch").boxed());
        }
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    let after = servers.rss();
    println!("{count} idle watches: the replicas' RSS {before:.0} MiB -> {after:.0} MiB, {:.2} KiB per watch", (after - before) * 1024.0 / count as f64);
}

/// Creates the pods numbered `which` (spread over the namespaces) at `rate` a second, as a
/// ReplicaSet controller does, each through the next of `clients`.
async fn create_pods(clients: &[kube::Client], namespaces: &Arc<Vec<String>>, which: Vec<usize>, rate: u64, sli: &Arc<Sli>) {
    let mut tick = tokio::time::interval(Duration::from_micros(1_000_000 / rate.max(1)));
    let mut running = tokio::task::JoinSet::new();
    for i in which {
        tick.tick().await;
        let ns = namespaces[i % namespaces.len()].clone();
        let name = pod_name(&ns, i / namespaces.len());
        let (client, sli) = (clients[i % clients.len()].clone(), sli.clone());
        running.spawn(async move {
            let pods: Api<Pod> = Api::namespaced(client, &ns);
            let call = sli::Call { verb: "POST", resource: "pods", scope: Scope::Object };
            let _ = sli.time(call, pods.create(&PostParams::default(), &objects::pod(&name, &ns))).await;
        });
    }
    while running.join_next().await.is_some() {}
}

/// Deletes the pods numbered `which` gracefully at `rate` a second, as a controller scaling
/// down does (each through the next of `clients`): their nodes finish them.
async fn delete_pods(clients: &[kube::Client], namespaces: &Arc<Vec<String>>, which: &[usize], rate: u64, sli: &Arc<Sli>) {
    let mut tick = tokio::time::interval(Duration::from_micros(1_000_000 / rate.max(1)));
    let mut running = tokio::task::JoinSet::new();
    for &i in which {
        tick.tick().await;
        let ns = namespaces[i % namespaces.len()].clone();
        let name = pod_name(&ns, i / namespaces.len());
        let (client, sli) = (clients[i % clients.len()].clone(), sli.clone());
        running.spawn(async move {
            let pods: Api<Pod> = Api::namespaced(client, &ns);
            let call = sli::Call { verb: "DELETE", resource: "pods", scope: Scope::Object };
            let _ = sli.time(call, pods.delete(&name, &DeleteParams::default())).await;
        });
    }
    while running.join_next().await.is_some() {}
}

fn summary(a: &Args, t: &mut Totals) {
    for v in [&mut t.mutating, &mut t.reads, &mut t.cluster_lists, &mut t.watch] {
        v.sort();
    }
    let p99 = |v: &[Duration]| percentile(v, 0.99);
    let (m, r, l, w) = (p99(&t.mutating), p99(&t.reads), p99(&t.cluster_lists), p99(&t.watch));
    let mut missed = Vec::new();
    if m > Duration::from_secs(1) {
        missed.push(format!("mutating p99 {:.0} ms > 1 s", m.as_secs_f64() * 1e3));
    }
    if r > Duration::from_secs(1) {
        missed.push(format!("reads p99 {:.0} ms > 1 s", r.as_secs_f64() * 1e3));
    }
    if l > Duration::from_secs(30) {
        missed.push(format!("cluster LIST p99 {:.1} s > 30 s", l.as_secs_f64()));
    }
    let mut targets = Vec::new();
    for (what, got, limit) in [("mutating", m, 0.1), ("reads", r, 0.1), ("cluster LIST", l, 5.0), ("watch", w, 1.0)] {
        if got.as_secs_f64() > limit {
            targets.push(format!("{what} p99 {:.0} ms > {:.0} ms", got.as_secs_f64() * 1e3, limit * 1e3));
        }
    }
    if t.server_errors > 0 {
        targets.push(format!("{} 5xx answers", t.server_errors));
    }
    println!("targets (100 ms, 100 ms, 5 s, watch 1 s, no 5xx): {}", if targets.is_empty() { "met".to_string() } else { format!("missed: {}", targets.join(", ")) });
    println!(
        "{} nodes, {} pods/node: mutating p99 {:.1} ms, reads p99 {:.1} ms, cluster LIST p99 {:.2} s, watch p99 {:.1} ms: {}",
        a.nodes,
        a.pods_per_node,
        m.as_secs_f64() * 1e3,
        r.as_secs_f64() * 1e3,
        l.as_secs_f64(),
        w.as_secs_f64() * 1e3,
        if missed.is_empty() { "SLO met".to_string() } else { format!("SLO violated: {}", missed.join(", ")) }
    );
}
