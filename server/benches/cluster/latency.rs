//! The cluster bench's latency rows: what a user feels at ordinary load, each row measured on the
//! three nodes and on the single node in the same run. One client's creates (with the floor a
//! durable replicated write cannot beat), watch delivery to 100 watchers per node at 200
//! creates/s (with each node's log flushes slower than 8 ms meanwhile), consistent GETs at 16
//! clients on every node, and a consistent LIST of 10,000.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{GetParams, ListParams, PostParams, WatchEvent, WatchParams};
use kube::Api;

use crate::common::{configmap, creates, gets, percentile, report};
use crate::{metric, metrics_text};

/// Where a latency row runs: a name and a client per place (one place on the single node, the
/// balancer or each node on the cluster).
pub struct Place {
    pub name: String,
    pub client: kube::Client,
}

/// Creates by one client: `n` in turn, p50 and p99.
pub async fn one_client_creates(place: &Place, prefix: &str, n: usize) -> Duration {
    let api: Api<ConfigMap> = Api::default_namespaced(place.client.clone());
    let (lat, el) = creates(&api, prefix, n, 1).await;
    report(&format!("create, 1 client, {}", place.name), lat.clone(), el);
    p50(lat)
}

/// The mean time per log flush on each of `nodes` while `during` runs, from their metrics.
pub async fn flush_times<F: std::future::Future<Output = T>, T>(nodes: &[&kube::Client], during: F) -> (T, Vec<Duration>) {
    let read = async |node: &kube::Client| {
        (metric(node, "etcd_disk_wal_fsync_duration_seconds_count").await, metric(node, "etcd_disk_wal_fsync_duration_seconds_sum").await)
    };
    let mut before = Vec::new();
    for node in nodes {
        before.push(read(node).await);
    }
    let out = during.await;
    let mut means = Vec::new();
    for (node, (c0, s0)) in nodes.iter().zip(before) {
        let (c1, s1) = read(node).await;
        means.push(Duration::from_secs_f64((s1 - s0) / (c1 - c0).max(1.0)));
    }
    (out, means)
}

/// Each node's log flush histogram (bound, flushes at most that long; `+Inf` last), from its
/// metrics.
async fn flush_histogram(node: &kube::Client) -> Vec<(String, f64)> {
    metrics_text(node)
        .await
        .lines()
        .filter_map(|l| l.strip_prefix("etcd_disk_wal_fsync_duration_seconds_bucket{"))
        .filter_map(|l| {
            let (labels, n) = l.rsplit_once(' ')?;
            let bound = labels.split("le=\"").nth(1)?.split('"').next()?;
            Some((bound.to_string(), n.parse().ok()?))
        })
        .collect()
}

/// Prints, per place, the log flushes slower than 8 ms while `during` ran and the bucket of the
/// slowest: a pause every node shares (one disk under three logs) shows there.
pub async fn slow_flushes<F: std::future::Future<Output = T>, T>(places: &[Place], during: F) -> T {
    let mut before = Vec::new();
    for p in places {
        before.push(flush_histogram(&p.client).await);
    }
    let out = during.await;
    for (p, before) in places.iter().zip(before) {
        let after = flush_histogram(&p.client).await;
        let delta: Vec<(String, f64)> = after.iter().zip(&before).map(|((b, n1), (_, n0))| (b.clone(), n1 - n0)).collect();
        let total = delta.last().map_or(0.0, |(_, n)| *n);
        let fast = delta.iter().find(|(b, _)| b == "0.008").map_or(0.0, |(_, n)| *n);
        let slowest = delta.iter().find(|(_, n)| total > 0.0 && *n == total).map_or("none", |(b, _)| b.as_str());
        println!("  log flushes on {}: {total:.0}, {:.0} slower than 8 ms, the slowest at most {slowest} s", p.name, total - fast);
    }
    out
}

/// One GET of each kind, `n` times by one client: the difference of a consistent GET over an
/// rv=0 GET on the leader is a read index, one round trip to a quorum of followers.
pub async fn read_index_round_trip(leader: &kube::Client, names: &[String], n: usize) -> Duration {
    let api: Api<ConfigMap> = Api::default_namespaced(leader.clone());
    let (consistent, _) = gets(&api, names, &GetParams::default(), n, 1).await;
    let (any, _) = gets(&api, names, &GetParams::any(), n, 1).await;
    p50(consistent).saturating_sub(p50(any))
}

/// Watch delivery: `watchers[i]` clients on place `i` watch the label `bench=<tag>` from the current revision;
/// `writer` creates `creates` labelled ConfigMaps at `rate` per second (each create started on
/// its own tick, whatever the previous one's latency). Prints, per place, the time from issuing
/// a create to each of its watchers seeing it; returns each place's p50 and p99.
pub async fn watch_delivery(places: &[Place], watchers: &[usize], writer: &kube::Client, tag: &str, creates: usize, rate: u32) -> Vec<(Duration, Duration)> {
    let sent: Arc<Mutex<HashMap<String, Instant>>> = Default::default();
    let writer_api: Api<ConfigMap> = Api::default_namespaced(writer.clone());
    let rv = writer_api.list_metadata(&ListParams::default().limit(1)).await.expect("list").metadata.resource_version.expect("rv");
    let mut tasks = Vec::new();
    for (p, place) in places.iter().enumerate() {
        for _ in 0..watchers[p] {
            let api: Api<ConfigMap> = Api::default_namespaced(place.client.clone());
            let (sent, rv, label) = (sent.clone(), rv.clone(), format!("bench={tag}"));
            tasks.push((p, tokio::spawn(async move {
                let mut stream = api.watch(&WatchParams::default().labels(&label), &rv).await.expect("watch").boxed();
                let mut lat = Vec::with_capacity(creates);
                while lat.len() < creates {
                    match stream.try_next().await {
                        Ok(Some(WatchEvent::Added(cm))) => {
                            let at = sent.lock().unwrap().get(cm.metadata.name.as_deref().unwrap_or_default()).copied();
                            lat.extend(at.map(|t| t.elapsed()));
                        }
                        Ok(Some(_)) => {}
                        _ => break,
                    }
                }
                lat
            })));
        }
    }
    // Every watch is established (its first bytes are on their way) well within this.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let started = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_secs(1) / rate);
    let mut writes = Vec::new();
    for i in 0..creates {
        tick.tick().await;
        let (api, sent) = (writer_api.clone(), sent.clone());
        let mut cm = configmap(&format!("{tag}-{i}"));
        cm.metadata.labels = Some([("bench".to_string(), tag.to_string())].into());
        writes.push(tokio::spawn(async move {
            sent.lock().unwrap().insert(cm.metadata.name.clone().unwrap(), Instant::now());
            api.create(&PostParams::default(), &cm).await.expect("create");
        }));
    }
    for w in writes {
        w.await.unwrap();
    }
    let mut per_place: Vec<Vec<Duration>> = vec![Vec::new(); places.len()];
    for (p, task) in tasks {
        per_place[p].extend(task.await.unwrap());
    }
    let elapsed = started.elapsed();
    places
        .iter()
        .zip(per_place)
        .zip(watchers)
        .map(|((place, mut lat), watchers)| {
            assert_eq!(lat.len(), watchers * creates, "watchers on {} missed events", place.name);
            report(&format!("watch delivery, {watchers} watchers on {}", place.name), lat.clone(), elapsed);
            lat.sort();
            (percentile(&lat, 0.5), percentile(&lat, 0.99))
        })
        .collect()
}

/// Consistent GETs by `clients` clients on each place; returns each place's p50.
pub async fn consistent_gets(places: &[Place], names: &[String], clients: usize, n: usize) -> Vec<Duration> {
    let mut out = Vec::new();
    for place in places {
        let api: Api<ConfigMap> = Api::default_namespaced(place.client.clone());
        let (lat, el) = gets(&api, names, &GetParams::default(), n, clients).await;
        report(&format!("GET consistent, {clients} clients, {}", place.name), lat.clone(), el);
        out.push(p50(lat));
    }
    out
}

/// Fills namespace `ns` (created through `writer`) with 10,000 ConfigMaps.
pub async fn fill_10k(writer: &kube::Client, ns: &str) {
    let nss: Api<Namespace> = Api::all(writer.clone());
    let mut n = Namespace::default();
    n.metadata.name = Some(ns.to_string());
    nss.create(&PostParams::default(), &n).await.expect("namespace");
    creates(&Api::namespaced(writer.clone(), ns), "l", 10_000, 32).await;
}

/// Consistent LISTs of the 10,000 in `ns`, `n` in turn, on each place; returns each place's p50.
pub async fn consistent_lists(places: &[Place], ns: &str, n: usize) -> Vec<Duration> {
    let mut out = Vec::new();
    for place in places {
        let api: Api<ConfigMap> = Api::namespaced(place.client.clone(), ns);
        let mut lat = Vec::new();
        let started = Instant::now();
        for _ in 0..n {
            let t = Instant::now();
            let list = api.list(&ListParams::default()).await.expect("list");
            // Each namespace also holds its kube-root-ca.crt.
            assert!(list.items.len() >= 10_000);
            lat.push(t.elapsed());
        }
        report(&format!("LIST 10,000 consistent, {}", place.name), lat.clone(), started.elapsed());
        out.push(p50(lat));
    }
    out
}

/// The median of `lat`.
fn p50(mut lat: Vec<Duration>) -> Duration {
    lat.sort();
    percentile(&lat, 0.5)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Every latency row, the single node's and the cluster's, and a summary of them side by side.
/// `nodes` are the cluster's nodes in id order; `lb` reaches them through the balancer.
pub async fn rows(single: &kube::Client, lb: &kube::Client, nodes: &[kube::Client], leader_id: u64) {
    let leader = leader_id as usize - 1;
    let role = |i: usize| if i == leader { "leader" } else { "follower" };
    let one = [Place { name: "single node".into(), client: single.clone() }];
    let each: Vec<Place> = nodes.iter().enumerate().map(|(i, c)| Place { name: format!("node {} ({})", i + 1, role(i)), client: c.clone() }).collect();
    let follower = (0..nodes.len()).find(|i| *i != leader).expect("a follower");
    let via_lb = Place { name: "3 nodes via HAProxy".into(), client: lb.clone() };

    // One client's creates, and the floor of a durable replicated write.
    let (single_p50, single_flush) = flush_times(&[single], one_client_creates(&one[0], "one", 2_000)).await;
    let (lb_p50, flushes) = flush_times(&[&nodes[leader], &nodes[follower]], one_client_creates(&via_lb, "one-lb", 2_000)).await;
    one_client_creates(&each[leader], "one-ld", 1_000).await;
    one_client_creates(&each[follower], "one-fl", 1_000).await;
    let names = created("one-lb");
    let round_trip = read_index_round_trip(&nodes[leader], &names, 1_000).await;
    let path = single_p50.saturating_sub(single_flush[0]);
    let floor = path + flushes[0].max(round_trip + flushes[1]);
    println!(
        "floor of a 1-client create on 3 nodes: {:.2} ms = the single node's p50 without its flush ({:.2} - {:.2} ms) + the longer of the leader's flush ({:.2} ms) and a round trip to a follower ({:.2} ms, consistent minus rv=0 GET on the leader) plus its flush ({:.2} ms)",
        ms(floor), ms(single_p50), ms(single_flush[0]), ms(flushes[0]), ms(round_trip), ms(flushes[1])
    );

    // Watch delivery at 200 creates/s: 100 watchers on the single node; 100 spread over the
    // three nodes, the creates through the balancer.
    let single_watch = slow_flushes(&one, watch_delivery(&one, &[100], single, "watch", 1_000, 200)).await;
    let cluster_watch = slow_flushes(&each, watch_delivery(&each, &[34, 33, 33], lb, "watch", 1_000, 200)).await;

    // Consistent GETs at 16 clients, and consistent LISTs of 10,000.
    let single_get = consistent_gets(&one, &created("one"), 16, 8_000).await;
    let cluster_get = consistent_gets(&each, &names, 16, 8_000).await;
    fill_10k(single, "list10k").await;
    fill_10k(lb, "list10k").await;
    let single_list = consistent_lists(&one, "list10k", 20).await;
    let cluster_list = consistent_lists(&each, "list10k", 20).await;

    println!("\nlatency, single node against 3 nodes:");
    println!("  create, 1 client, p50: {:.2} ms against {:.2} ms via HAProxy (floor {:.2} ms)", ms(single_p50), ms(lb_p50), ms(floor));
    for (i, (p50, p99)) in cluster_watch.iter().enumerate() {
        println!(
            "  watch delivery p50 / p99: {:.2} / {:.2} ms against {:.2} / {:.2} ms on {}",
            ms(single_watch[0].0), ms(single_watch[0].1), ms(*p50), ms(*p99), each[i].name
        );
    }
    for (i, p50) in cluster_get.iter().enumerate() {
        println!("  GET consistent, 16 clients, p50: {:.2} ms against {:.2} ms on {}", ms(single_get[0]), ms(*p50), each[i].name);
    }
    for (i, p50) in cluster_list.iter().enumerate() {
        println!(
            "  LIST 10,000 consistent, p50: {:.1} ms against {:.1} ms on {} ({:.0}%)",
            ms(single_list[0]), ms(*p50), each[i].name, ms(*p50) * 100.0 / ms(single_list[0])
        );
    }
}

/// The names `one_client_creates` gave its first 1,000 creates under `prefix`.
fn created(prefix: &str) -> Vec<String> {
    (0..1000).map(|i| format!("{prefix}-0-{i}")).collect()
}
