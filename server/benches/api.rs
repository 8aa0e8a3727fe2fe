//! The benchmark: starts the release server on a fresh data directory and measures, with
//! 1 KiB ConfigMaps, create throughput and latency (1 and 32 clients), consistent and rv=0 GET
//! latency, a full LIST of 10,000 objects, watch delivery latency to 100 watchers, and RSS
//! after 100,000 objects (settled, and its peak over the fill and the snapshots it causes).
//! Run with `cargo bench -p apiserver --bench api`; set `BENCH_OBJECTS` to change the 100,000.

mod common;

use common::{configmap, creates, report, rss_mib, CpuMeter, RssPeak, Server};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{GetParams, ListParams, PostParams, WatchEvent, WatchParams};
use kube::Api;

#[tokio::main]
async fn main() {
    let objects: usize = std::env::var("BENCH_OBJECTS").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000);
    // Without the root CA publisher, a new namespace holds exactly the ConfigMaps created in it.
    let server = Server::start(&["--controllers=*,-root-ca-cert-publisher"]);
    let client = server.client().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");

    let (lat, el) = creates(&api, "single", 2_000, 1).await;
    report("create, 1 client", lat, el);
    let cpu = CpuMeter::start(&[("server".into(), server.pid())]);
    let (lat, el) = creates(&api, "c32", 16_000, 32).await;
    report("create, 32 clients", lat, el);
    cpu.report(16_000);

    for (name, params) in [("get consistent (rv unset)", GetParams::default()), ("get rv=0", GetParams::any())] {
        let started = Instant::now();
        let mut lat = Vec::new();
        for i in 0..2_000 {
            let t = Instant::now();
            let cm = format!("single-0-{}", i % 2000);
            api.get_with(&cm, &params).await.expect("get");
            lat.push(t.elapsed());
        }
        report(name, lat, started.elapsed());
    }

    // LIST of 10,000: a namespace holding exactly that many.
    let ns: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let mut list_ns = k8s_openapi::api::core::v1::Namespace::default();
    list_ns.metadata.name = Some("list10k".into());
    ns.create(&PostParams::default(), &list_ns).await.expect("namespace");
    let list_api: Api<ConfigMap> = Api::namespaced(client.clone(), "list10k");
    creates(&list_api, "l", 10_000, 32).await;
    let mut lat = Vec::new();
    let started = Instant::now();
    for _ in 0..20 {
        let t = Instant::now();
        let items = list_api.list(&ListParams::default()).await.expect("list");
        assert_eq!(items.items.len(), 10_000);
        lat.push(t.elapsed());
    }
    report("list 10,000 (consistent)", lat, started.elapsed());

    // Watch delivery to 100 watchers: time from issuing a write to each watcher seeing it.
    let watch_api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let sent: Arc<std::sync::Mutex<std::collections::HashMap<String, Instant>>> = Default::default();
    let rv = watch_api.list_metadata(&ListParams::default().limit(1)).await.unwrap().metadata.resource_version.unwrap();
    let updates = 200;
    let mut watchers = Vec::new();
    for _ in 0..100 {
        let api = watch_api.clone();
        let sent = sent.clone();
        let rv = rv.clone();
        watchers.push(tokio::spawn(async move {
            let mut stream = api.watch(&WatchParams::default().labels("bench=watch"), &rv).await.unwrap().boxed();
            let mut lat = Vec::new();
            while lat.len() < updates {
                match stream.try_next().await {
                    Ok(Some(WatchEvent::Added(cm))) => {
                        let name = cm.metadata.name.unwrap_or_default();
                        if let Some(t) = sent.lock().unwrap().get(&name) {
                            lat.push(t.elapsed());
                        }
                    }
                    Ok(Some(_)) => {}
                    _ => break,
                }
            }
            lat
        }));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let started = Instant::now();
    for i in 0..updates {
        let mut cm = configmap(&format!("watched-{i}"));
        cm.metadata.labels = Some([("bench".to_string(), "watch".to_string())].into());
        sent.lock().unwrap().insert(format!("watched-{i}"), Instant::now());
        watch_api.create(&PostParams::default(), &cm).await.unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut lat = Vec::new();
    for w in watchers {
        lat.extend(w.await.unwrap());
    }
    report("watch delivery, 100 watchers", lat, started.elapsed());

    // RSS with `objects` ConfigMaps stored in all. A snapshot of the state is built every
    // `--snapshot-count` entries, during the fill or just after it: the peak is followed from
    // the fill's start until the RSS settles (two samples a second apart agree).
    let have = 2_000 + 16_000 + 10_000 + updates;
    let peak = RssPeak::start(server.pid());
    if objects > have {
        let (_, el) = creates(&api, "rss", objects - have, 32).await;
        println!("filled to {objects} objects in {:.1} s", el.as_secs_f64());
    }
    println!("{:<40} {:.0} MiB with {objects} objects", "RSS", rss_mib(server.pid()));
    let mut last = 0.0f64;
    for _ in 0..30 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = rss_mib(server.pid());
        if (now - last).abs() < 1.0 {
            break;
        }
        last = now;
    }
    let snapshot = std::fs::metadata(server.data_dir().join("snapshot")).map(|m| m.len() as f64 / (1 << 20) as f64).unwrap_or(0.0);
    println!("{:<40} {last:.0} MiB settled, {:.0} MiB at the peak (fill and snapshots)", "RSS", peak.stop());
    println!("{:<40} {snapshot:.0} MiB", "last snapshot file");
}
