//! API Priority and Fairness: create throughput at 32 clients (a user classified in
//! `global-default`) with the default flowcontrol configuration against APF off
//! (`--enable-priority-and-fairness=false`); then the latency of an exempt (`system:masters`)
//! client's GETs (consistent ones, and ones the watch cache answers) alone and while 256 clients
//! of another user fill `global-default` two ways: with reads that hold their seats while they
//! wait (the level full, the cores idle), and with creates (the level full, the cores
//! saturated). Run with `cargo bench -p apiserver --bench apf`.

mod common;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{configmap, creates, gets, report, Server};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, RoleRef, Subject};
use kube::api::{GetParams, PostParams};
use kube::Api;

/// Rounds of creates per configuration.
const ROUNDS: usize = 5;
/// Slices of the exempt client's GETs per phase, consistent and cached alternating slice by
/// slice, so that both kinds meet the same moments of a flood.
const SLICES: usize = 10;
const PER_SLICE: usize = 200;
/// Clients of the flooding user.
const FLOOD_CLIENTS: usize = 256;

/// Lets `user` do anything through a ClusterRoleBinding (which does not make it exempt).
async fn bind_cluster_admin(admin: &kube::Client, user: &str) {
    let mut b = ClusterRoleBinding {
        role_ref: RoleRef { api_group: Some("rbac.authorization.k8s.io".into()), kind: "ClusterRole".into(), name: "cluster-admin".into() },
        subjects: Some(vec![Subject { api_group: Some("rbac.authorization.k8s.io".into()), kind: "User".into(), name: user.into(), ..Default::default() }]),
        ..Default::default()
    };
    b.metadata.name = Some(format!("bench-{user}"));
    Api::<ClusterRoleBinding>::all(admin.clone()).create(&PostParams::default(), &b).await.expect("binding");
}

/// What the flooding user sends.
#[derive(Clone, Copy)]
enum Flood {
    /// Creates of ConfigMaps: each costs CPU, and together they saturate the cores.
    Creates,
    /// GETs of a namespace at a resourceVersion the server has not reached: each holds its
    /// seat for the 3 s a read waits for that revision (then 504), costing almost no CPU.
    Waiting,
}

/// A flood running on a tokio runtime of its own (its own two threads), so that the exempt
/// client's figures hold the server's delay and not the load generator's task queue.
struct Running {
    runtime: tokio::runtime::Runtime,
    stop: Arc<AtomicBool>,
    answered: Arc<AtomicUsize>,
    refused: Arc<AtomicUsize>,
    tasks: tokio::task::JoinHandle<()>,
    started: Instant,
}

fn start_flood(kubeconfig: PathBuf, kind: Flood) -> Running {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let (stop, answered, refused) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let tasks = {
        let (stop, answered, refused) = (stop.clone(), answered.clone(), refused.clone());
        runtime.spawn(async move {
            // Without kube-rs' retries (of 429, 503 and 504, up to 15 times): every request is
            // counted as it is answered, and a stopped flood ends after the request in flight.
            let kc = kube::config::Kubeconfig::read_from(&kubeconfig).expect("kubeconfig");
            let mut config = kube::Config::from_custom_kubeconfig(kc, &Default::default()).await.expect("config");
            config.default_retry = false;
            let client = kube::Client::try_from(config).expect("client");
            let tasks: Vec<_> = (0..FLOOD_CLIENTS)
                .map(|c| {
                    let (client, stop, answered, refused) = (client.clone(), stop.clone(), answered.clone(), refused.clone());
                    tokio::spawn(async move {
                        let (configmaps, namespaces) = (Api::<ConfigMap>::namespaced(client.clone(), "default"), Api::<Namespace>::all(client));
                        let mut i = 0;
                        while !stop.load(Ordering::Relaxed) {
                            let outcome = match kind {
                                Flood::Creates => configmaps.create(&PostParams::default(), &configmap(&format!("flood-{c}-{i}"))).await.map(|_| ()),
                                Flood::Waiting => namespaces.get_with("default", &GetParams::at("999999999")).await.map(|_| ()),
                            };
                            match outcome {
                                Err(kube::Error::Api(s)) if s.code == 429 => refused.fetch_add(1, Ordering::Relaxed),
                                _ => answered.fetch_add(1, Ordering::Relaxed),
                            };
                            i += 1;
                        }
                    })
                })
                .collect();
            for t in tasks {
                let _ = t.await;
            }
        })
    };
    Running { runtime, stop, answered, refused, tasks, started: Instant::now() }
}

impl Running {
    /// Stops the flood (each client ends after its request in flight); prints the rate of its
    /// answers and its 429s.
    async fn stop(self, label: &str) {
        let rate = self.answered.load(Ordering::Relaxed) as f64 / self.started.elapsed().as_secs_f64();
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.tasks.await;
        self.runtime.shutdown_background();
        println!("{:<40} {rate:.0}/s answered, {} refused (429)", format!("flood, {label}"), self.refused.load(Ordering::Relaxed));
    }
}

/// The sum and count of the server's handler time for GETs of ConfigMaps, from `/metrics`
/// (from the handler's start to its answer: after authentication, flow control and
/// authorization, before the response is written).
async fn handler_time(admin: &kube::Client) -> (f64, f64) {
    let text = admin.request_text(http::Request::get("/metrics").body(vec![]).unwrap()).await.expect("metrics");
    let series = r#"{verb="GET",group="",version="v1",resource="configmaps",subresource=""}"#;
    let value = |name: &str| {
        let prefix = format!("{name}{series} ");
        text.lines().find_map(|l| l.strip_prefix(prefix.as_str())).and_then(|v| v.trim().parse::<f64>().ok()).unwrap_or(0.0)
    };
    (value("apiserver_request_duration_seconds_sum"), value("apiserver_request_duration_seconds_count"))
}

/// The exempt client's GETs, consistent and from the watch cache (`resourceVersion=0`),
/// alternating slice by slice; prints both, and the mean time the server's handler took.
async fn exempt_gets(admin: &kube::Client, api: &Api<ConfigMap>, names: &[String], phase: &str) {
    let (mut lat, mut el) = ([Vec::new(), Vec::new()], [Duration::ZERO; 2]);
    let before = handler_time(admin).await;
    for _ in 0..SLICES {
        for (i, params) in [GetParams::default(), GetParams::any()].iter().enumerate() {
            let (l, e) = gets(api, names, params, PER_SLICE, 1).await;
            lat[i].extend(l);
            el[i] += e;
        }
    }
    let after = handler_time(admin).await;
    let [consistent, cached] = lat;
    report(&format!("get consistent, exempt, {phase}"), consistent, el[0]);
    report(&format!("get rv=0, exempt, {phase}"), cached, el[1]);
    println!("{:<40} {:.3} ms mean", format!("  in the handler, {phase}"), (after.0 - before.0) / (after.1 - before.1) * 1e3);
}

/// Prints `global-default`'s row of the priority-level dump (executing and waiting requests).
async fn print_level(admin: &kube::Client, phase: &str) {
    let levels = admin.request_text(http::Request::get("/debug/api_priority_and_fairness/dump_priority_levels").body(vec![]).unwrap()).await.expect("dump");
    if let Some(row) = levels.lines().find(|l| l.starts_with("global-default")) {
        println!("{:<40} {}", format!("global-default, {phase}"), row.split_whitespace().collect::<Vec<_>>().join(" "));
    }
}

#[tokio::main]
async fn main() {
    // Rounds alternate between the two servers, so that a slow phase of the machine falls on
    // both; the ratio is of the median rounds (one round's latency spike moves a mean by 10%).
    let mut rates: [Vec<f64>; 2] = Default::default();
    for round in 0..ROUNDS {
        for (i, (label, flags)) in [("APF on", &[][..]), ("APF off", &["--enable-priority-and-fairness=false"][..])].into_iter().enumerate() {
            let server = Server::start(flags);
            let admin = server.client().await;
            bind_cluster_admin(&admin, "bench-user").await;
            let user = server.user_client("bench-user", &[]).await;
            let (lat, el) = creates(&Api::namespaced(user, "default"), &format!("r{round}"), 8_000, 32).await;
            rates[i].push(report(&format!("create, 32 clients, {label}"), lat, el));
        }
    }
    let [on, off] = rates.map(|mut r| {
        r.sort_by(f64::total_cmp);
        r[r.len() / 2]
    });
    println!("{:<40} {on:.0}/s on, {off:.0}/s off: {:.1}%", "APF on / APF off (median of rounds)", 100.0 * on / off);

    let server = Server::start(&[]);
    let admin = server.client().await;
    bind_cluster_admin(&admin, "flood").await;
    bind_cluster_admin(&admin, "bystander").await;
    let api: Api<ConfigMap> = Api::namespaced(admin.clone(), "default");
    let names: Vec<String> = (0..50).map(|i| format!("probe-{i}")).collect();
    for n in &names {
        api.create(&PostParams::default(), &configmap(n)).await.expect("create");
    }
    exempt_gets(&admin, &api, &names, "idle").await;

    for (kind, phase) in [(Flood::Waiting, "full, idle cores"), (Flood::Creates, "full, busy cores")] {
        let flood = start_flood(server.user_kubeconfig("flood", &[]), kind);
        tokio::time::sleep(Duration::from_secs(3)).await;
        print_level(&admin, phase).await;
        exempt_gets(&admin, &api, &names, phase).await;
        // Another user classified in the same level, for contrast: it waits for a seat.
        let bystander = Api::<ConfigMap>::namespaced(server.user_client("bystander", &[]).await, "default");
        let (lat, el) = common::concurrently(5, 1, move |_, i| {
            let api = bystander.clone();
            async move {
                let _ = api.get(&format!("probe-{i}")).await;
            }
        })
        .await;
        report(&format!("get, another user, {phase}"), lat, el);
        flood.stop(phase).await;
    }
}
