//! What the benchmarks share: a single release server, the 1 KiB ConfigMap, concurrent creates,
//! latency reports and CPU per operation.

#![allow(dead_code)]

#[path = "../../tests/common/ports.rs"]
pub mod ports;
#[path = "../../tests/common/user_cert.rs"]
pub mod user_cert;
#[path = "../../tests/common/webhook_server.rs"]
pub mod webhook_server;
#[path = "../../tests/common/oidc_issuer.rs"]
pub mod oidc_issuer;
#[path = "../../tests/common/otlp_receiver.rs"]
pub mod otlp_receiver;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::PostParams;
use kube::Api;

/// Runs `deploy/local-cluster ARGS` with this package's release build.
pub fn local_cluster(args: &[&str]) {
    local_cluster_of(&binary(), args)
}

/// Runs `deploy/local-cluster ARGS` with the server build `binary`.
pub fn local_cluster_of(binary: &Path, args: &[&str]) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/local-cluster");
    let status = Command::new(script).args(args).env("APISERVER_BIN", binary).status().expect("deploy/local-cluster");
    assert!(status.success(), "deploy/local-cluster {args:?} failed");
}

/// A cluster `deploy/local-cluster` started in this directory; stopped when dropped.
pub struct LocalCluster(pub std::path::PathBuf);

impl Drop for LocalCluster {
    fn drop(&mut self) {
        local_cluster(&["down", "--dir", self.0.to_str().unwrap()]);
    }
}

/// A single-node release server on a fresh data directory; stopped when dropped.
pub struct Server {
    child: Child,
    dir: tempfile::TempDir,
    kubeconfig: std::path::PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The server binary a bench runs: `BENCH_APISERVER` when set (another build, for an A/B
/// comparison in one sitting), else this package's release build.
pub fn binary() -> std::path::PathBuf {
    std::env::var_os("BENCH_APISERVER").map_or_else(|| env!("CARGO_BIN_EXE_apiserver").into(), Into::into)
}

impl Server {
    /// Starts the server with `flags` besides its data directory and port.
    pub fn start(flags: &[&str]) -> Server {
        Server::start_binary(&binary(), flags)
    }

    /// Starts the server binary `binary` with `flags` besides its data directory and port.
    pub fn start_binary(binary: &Path, flags: &[&str]) -> Server {
        let dir = tempfile::tempdir().expect("tempdir");
        let port = ports::free_port();
        let child = Command::new(binary)
            .args(["--data-dir", dir.path().to_str().unwrap(), "--secure-port", &port.to_string()])
            .args(flags)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start apiserver");
        let kubeconfig = dir.path().join("admin.kubeconfig");
        Server { child, dir, kubeconfig }
    }

    /// A client for `user` in `groups` (a client certificate from the server's CA).
    pub async fn user_client(&self, user: &str, groups: &[&str]) -> kube::Client {
        client(&self.user_kubeconfig(user, groups)).await
    }

    /// A kubeconfig for `user` in `groups`, for a client made elsewhere (on another runtime).
    pub fn user_kubeconfig(&self, user: &str, groups: &[&str]) -> std::path::PathBuf {
        let dir = self.kubeconfig.parent().expect("data directory");
        let path = dir.join(format!("{user}.kubeconfig"));
        user_cert::write_kubeconfig(&self.kubeconfig, &dir.join("pki"), user, groups, &path);
        path
    }

    /// A client presenting a bearer token instead of the admin's certificate.
    pub async fn token_client(&self, token: &str) -> kube::Client {
        let path = self.kubeconfig.with_file_name("token.kubeconfig");
        user_cert::write_token_kubeconfig(&self.kubeconfig, token, &path);
        client(&path).await
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn data_dir(&self) -> &Path {
        self.dir.path()
    }

    /// A client, once the server has written its kubeconfig and answers `/readyz` with `ok`.
    pub async fn client(&self) -> kube::Client {
        for _ in 0..300 {
            if let Some(client) = try_client(&self.kubeconfig).await {
                // Ready as a load balancer sees it: every post-start hook done (the flowcontrol
                // configuration among them), so that no phase measures the server's start.
                let ready = client.request_text(http::Request::get("/readyz").body(vec![]).unwrap()).await;
                if ready.is_ok_and(|r| r.trim() == "ok") {
                    return client;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("server did not become ready");
    }
}

pub fn configmap(name: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_string());
    cm.data = Some([("payload".to_string(), "x".repeat(1024 - 100))].into());
    cm
}

pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// Prints a phase's throughput and latency percentiles; returns the throughput (ops/s).
pub fn report(name: &str, mut lat: Vec<Duration>, elapsed: Duration) -> f64 {
    lat.sort();
    let rate = lat.len() as f64 / elapsed.as_secs_f64();
    println!(
        "{name:<40} n={:<7} {:>9.0} ops/s  p50 {:>7.2} ms  p99 {:>7.2} ms",
        lat.len(),
        rate,
        percentile(&lat, 0.5).as_secs_f64() * 1e3,
        percentile(&lat, 0.99).as_secs_f64() * 1e3
    );
    rate
}

/// Runs `op(client, i)` `total` times over `clients` concurrent tasks (the first
/// `total % clients` clients do one more); returns each call's latency and the elapsed time.
pub async fn concurrently<F, Fut>(total: usize, clients: usize, op: F) -> (Vec<Duration>, Duration)
where
    F: Fn(usize, usize) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let started = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|c| {
            let per = total / clients + usize::from(c < total % clients);
            let op = op.clone();
            tokio::spawn(async move {
                let mut lat = Vec::with_capacity(per);
                for i in 0..per {
                    let t = Instant::now();
                    op(c, i).await;
                    lat.push(t.elapsed());
                }
                lat
            })
        })
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    (all, started.elapsed())
}

/// `total` creates of `{prefix}-{client}-{i}` over `clients` concurrent tasks.
pub async fn creates(api: &Api<ConfigMap>, prefix: &str, total: usize, clients: usize) -> (Vec<Duration>, Duration) {
    let (api, prefix) = (api.clone(), prefix.to_string());
    concurrently(total, clients, move |c, i| {
        let (api, name) = (api.clone(), format!("{prefix}-{c}-{i}"));
        async move {
            api.create(&PostParams::default(), &configmap(&name)).await.expect("create");
        }
    })
    .await
}

/// `total` GETs of the `names` in turn over `clients` concurrent tasks.
pub async fn gets(api: &Api<ConfigMap>, names: &[String], params: &kube::api::GetParams, total: usize, clients: usize) -> (Vec<Duration>, Duration) {
    let (api, names, params) = (api.clone(), names.to_vec(), params.clone());
    concurrently(total, clients, move |c, i| {
        let (api, params) = (api.clone(), params.clone());
        let name = names[(c * 7919 + i) % names.len()].clone();
        async move {
            api.get_with(&name, &params).await.expect("get");
        }
    })
    .await
}

/// A client from a kubeconfig file.
pub async fn client(kubeconfig: &std::path::Path) -> kube::Client {
    try_client(kubeconfig).await.unwrap_or_else(|| panic!("no client from {}", kubeconfig.display()))
}

/// A client from a kubeconfig file, if it exists and is complete.
async fn try_client(kubeconfig: &std::path::Path) -> Option<kube::Client> {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig).ok()?;
    let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default()).await.ok()?;
    kube::Client::try_from(cfg).ok()
}

/// Resident memory of process `pid` in MiB, from `/proc/PID/status`.
pub fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)).and_then(|kb| kb.parse::<f64>().ok()).unwrap_or(0.0) / 1024.0
}

/// The highest resident memory of a process, sampled every 50 ms on a thread until stopped.
pub struct RssPeak {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<f64>,
}

impl RssPeak {
    pub fn start(pid: u32) -> Self {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut peak = 0.0f64;
            while !stopped.load(std::sync::atomic::Ordering::Relaxed) {
                peak = peak.max(rss_mib(pid));
                std::thread::sleep(Duration::from_millis(50));
            }
            peak.max(rss_mib(pid))
        });
        RssPeak { stop, thread }
    }

    /// The peak in MiB.
    pub fn stop(self) -> f64 {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.join().unwrap_or(0.0)
    }
}

/// CPU time (user and system) process `pid` has used so far, from `/proc/PID/stat` (whose
/// times are in units of 1/100 s on Linux).
pub fn cpu_time(pid: u32) -> Duration {
    stat_cpu(&format!("/proc/{pid}/stat"))
}

/// CPU time the threads of process `pid` named `name` have used so far.
pub fn thread_cpu_time(pid: u32, name: &str) -> Duration {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Duration::ZERO };
    tasks
        .flatten()
        .filter(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == name))
        .map(|t| stat_cpu(&t.path().join("stat").to_string_lossy()))
        .sum()
}

/// The user and system time in a `stat` file of `/proc`.
fn stat_cpu(path: &str) -> Duration {
    let stat = std::fs::read_to_string(path).unwrap_or_default();
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

/// The CPU each process spends per operation over one measured phase.
pub struct CpuMeter {
    start: Vec<(String, u32, Duration)>,
}

impl CpuMeter {
    /// Starts measuring the named processes (and this one, as the load generator).
    pub fn start(procs: &[(String, u32)]) -> Self {
        let mut all: Vec<(String, u32)> = procs.to_vec();
        all.push(("load generator".into(), std::process::id()));
        CpuMeter { start: all.into_iter().map(|(name, pid)| (name, pid, cpu_time(pid))).collect() }
    }

    /// Prints the CPU per operation of each process over `ops` operations, and their sum.
    pub fn report(&self, ops: usize) {
        let per_op = |d: Duration| d.as_secs_f64() * 1e6 / ops as f64;
        let parts: Vec<(String, f64)> =
            self.start.iter().map(|(name, pid, at)| (name.clone(), per_op(cpu_time(*pid).saturating_sub(*at)))).collect();
        let total: f64 = parts.iter().map(|(_, us)| us).sum();
        let list: Vec<String> = parts.iter().map(|(name, us)| format!("{name} {us:.0}")).collect();
        println!("    CPU per op (µs): {}; total {total:.0}", list.join(", "));
    }
}
