//! What the benchmarks share: the 1 KiB ConfigMap, concurrent creates, and latency reports.

#![allow(dead_code)]

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::PostParams;
use kube::Api;

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

pub fn report(name: &str, mut lat: Vec<Duration>, elapsed: Duration) {
    lat.sort();
    println!(
        "{name:<40} n={:<7} {:>9.0} ops/s  p50 {:>7.2} ms  p99 {:>7.2} ms",
        lat.len(),
        lat.len() as f64 / elapsed.as_secs_f64(),
        percentile(&lat, 0.5).as_secs_f64() * 1e3,
        percentile(&lat, 0.99).as_secs_f64() * 1e3
    );
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
    let kc = kube::config::Kubeconfig::read_from(kubeconfig).expect("kubeconfig");
    let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default()).await.expect("config");
    kube::Client::try_from(cfg).expect("client")
}
