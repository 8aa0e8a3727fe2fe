//! API Priority and Fairness: create throughput at 32 clients (a user classified in
//! `global-default`) with the default flowcontrol configuration against APF off
//! (`--enable-priority-and-fairness=false`), and the latency of an exempt (`system:masters`)
//! client's GETs (consistent ones, and ones the watch cache answers) alone against while a flood
//! of creates from another user, on a runtime of its own, fills its priority level. Run with
//! `cargo bench -p apiserver --bench apf`.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use common::{configmap, creates, gets, report, Server};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, RoleRef, Subject};
use kube::api::{GetParams, PostParams};
use kube::Api;

/// Rounds of creates per configuration.
const ROUNDS: usize = 5;

/// Lets `user` do anything through a ClusterRoleBinding (which does not make it exempt).
async fn bind_cluster_admin(admin: &kube::Client, user: &str) {
    let mut b = ClusterRoleBinding {
        role_ref: RoleRef { api_group: "rbac.authorization.k8s.io".into(), kind: "ClusterRole".into(), name: "cluster-admin".into() },
        subjects: Some(vec![Subject { api_group: Some("rbac.authorization.k8s.io".into()), kind: "User".into(), name: user.into(), ..Default::default() }]),
        ..Default::default()
    };
    b.metadata.name = Some(format!("bench-{user}"));
    Api::<ClusterRoleBinding>::all(admin.clone()).create(&PostParams::default(), &b).await.expect("binding");
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

    // An exempt client's GETs, alone and while 256 clients of another user flood creates.
    let server = Server::start(&[]);
    let admin = server.client().await;
    bind_cluster_admin(&admin, "flood").await;
    let api: Api<ConfigMap> = Api::namespaced(admin.clone(), "default");
    let names: Vec<String> = (0..50).map(|i| format!("probe-{i}")).collect();
    for n in &names {
        api.create(&PostParams::default(), &configmap(n)).await.expect("create");
    }
    let (lat, el) = gets(&api, &names, &GetParams::default(), 2_000, 1).await;
    report("get consistent, exempt, idle", lat, el);
    let (lat, el) = gets(&api, &names, &GetParams::any(), 2_000, 1).await;
    report("get rv=0, exempt, idle", lat, el);

    // The flood runs on a runtime of its own (its own two threads), so that the exempt client's
    // figures hold the server's delay and not the load generator's task queue.
    let flood_runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let flood_kubeconfig = server.user_kubeconfig("flood", &[]);
    let stop = Arc::new(AtomicBool::new(false));
    let (done, refused) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let flood = {
        let (stop, done, refused) = (stop.clone(), done.clone(), refused.clone());
        flood_runtime.spawn(async move {
            let flood = common::client(&flood_kubeconfig).await;
            let tasks: Vec<_> = (0..256)
                .map(|c| {
                    let (api, stop, done, refused) = (Api::<ConfigMap>::namespaced(flood.clone(), "default"), stop.clone(), done.clone(), refused.clone());
                    tokio::spawn(async move {
                        let mut i = 0;
                        while !stop.load(Ordering::Relaxed) {
                            match api.create(&PostParams::default(), &configmap(&format!("flood-{c}-{i}"))).await {
                                Ok(_) => done.fetch_add(1, Ordering::Relaxed),
                                Err(_) => refused.fetch_add(1, Ordering::Relaxed),
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
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    let levels = admin.request_text(http::Request::get("/debug/api_priority_and_fairness/dump_priority_levels").body(vec![]).unwrap()).await.expect("dump");
    let (before, started) = (done.load(Ordering::Relaxed), std::time::Instant::now());
    let (lat, el) = gets(&api, &names, &GetParams::default(), 2_000, 1).await;
    report("get consistent, exempt, during flood", lat, el);
    // The same GETs from the watch cache (`resourceVersion=0`), which wait for no apply.
    let (lat, el) = gets(&api, &names, &GetParams::any(), 2_000, 1).await;
    report("get rv=0, exempt, during flood", lat, el);
    let (flooded, el) = (done.load(Ordering::Relaxed) - before, started.elapsed());
    stop.store(true, Ordering::Relaxed);
    let _ = flood.await;
    flood_runtime.shutdown_background();
    println!("{:<40} {:.0} creates/s accepted meanwhile, {} refused (429) in all", "flood (256 clients, global-default)", flooded as f64 / el.as_secs_f64(), refused.load(Ordering::Relaxed));
    if let Some(row) = levels.lines().find(|l| l.starts_with("global-default")) {
        println!("{:<40} {}", "global-default during the flood", row.split_whitespace().collect::<Vec<_>>().join(" "));
    }
}
