//! Durability of the real binary: every acknowledged write survives `kill -9` with its
//! resourceVersion, revisions keep increasing after a restart, SIGTERM exits cleanly, and a
//! stopped node's database compacted by `apiserver defrag` shrinks and keeps every object.

use crate::common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{apiserver, configmap, rv, TestServer};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ListParams, PostParams};
use kube::{Api, ResourceExt};
use tokio::task::JoinHandle;

const WRITERS: usize = 8;
const PER_WRITER: usize = 25;

/// All ConfigMaps in `default` by name, with their resourceVersions.
async fn stored(api: &Api<ConfigMap>) -> BTreeMap<String, u64> {
    api.list(&ListParams::default()).await.unwrap().items.iter().map(|c| (c.name_any(), rv(c))).collect()
}

/// Starts `WRITERS` tasks creating `PER_WRITER` ConfigMaps each, named `{prefix}{writer}-{i}`; each
/// stops at its first failure and returns what was acknowledged. `acks` counts acknowledgements.
fn start_writers(api: &Api<ConfigMap>, prefix: &str, acks: &Arc<AtomicUsize>) -> Vec<JoinHandle<Vec<(String, u64)>>> {
    (0..WRITERS)
        .map(|w| {
            let (api, acks, prefix) = (api.clone(), acks.clone(), prefix.to_string());
            tokio::spawn(async move {
                let mut acked = Vec::new();
                for i in 0..PER_WRITER {
                    let Ok(created) =
                        api.create(&PostParams::default(), &configmap(&format!("{prefix}{w}-{i}"), &[])).await
                    else {
                        break;
                    };
                    acked.push((created.name_any(), rv(&created)));
                    acks.fetch_add(1, Ordering::SeqCst);
                }
                acked
            })
        })
        .collect()
}

async fn join_writers(writers: Vec<JoinHandle<Vec<(String, u64)>>>) -> BTreeMap<String, u64> {
    let mut acked = BTreeMap::new();
    for writer in writers {
        acked.extend(writer.await.unwrap());
    }
    acked
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_kill_9() {
    let mut s = TestServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let acks = Arc::new(AtomicUsize::new(0));
    // 200 writes, all acknowledged.
    let mut acked = join_writers(start_writers(&api, "w", &acks)).await;
    assert_eq!(acked.len(), WRITERS * PER_WRITER);
    let mut revisions: Vec<u64> = acked.values().copied().collect();
    revisions.sort_unstable();
    revisions.dedup();
    assert_eq!(revisions.len(), acked.len(), "two writes acknowledged with the same resourceVersion");

    // A second wave, killed while requests are in flight.
    let in_flight = start_writers(&api, "late", &acks);
    while acks.load(Ordering::SeqCst) < acked.len() + 40 && !in_flight.iter().all(JoinHandle::is_finished) {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    s.kill9();
    acked.extend(join_writers(in_flight).await);

    s.restart().await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let after = stored(&api).await;
    for (name, version) in &acked {
        assert_eq!(after.get(name), Some(version), "acknowledged {name} lost or changed by kill -9");
    }
    let max = after.values().max().copied().unwrap();
    let next = api.create(&PostParams::default(), &configmap("after-restart", &[])).await.unwrap();
    assert!(rv(&next) > max, "resourceVersion {} after a restart is not above {max}", rv(&next));
}

#[tokio::test]
async fn sigterm_exits_cleanly_and_keeps_data() {
    let mut s = TestServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let kept = api.create(&PostParams::default(), &configmap("kept", &[])).await.unwrap();
    let status = s.sigterm(Duration::from_secs(10)).expect("still running 10 s after SIGTERM");
    assert!(status.success(), "exit status after SIGTERM: {status}");

    s.restart().await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    assert_eq!(rv(&api.get("kept").await.unwrap()), rv(&kept));
}

#[tokio::test]
async fn defrag_shrinks_a_churned_database_and_keeps_every_object() {
    // Snapshots every 200 entries: the log behind them is purged, its pages left unused.
    let mut s = TestServer::start_with(&["--snapshot-count", "200"]).await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let payload = "x".repeat(20_000);
    let mut writers = Vec::new();
    for w in 0..8 {
        let (api, payload) = (api.clone(), payload.clone());
        writers.push(tokio::spawn(async move {
            let mut cm = configmap(&format!("churned-{w}"), &[]);
            api.create(&PostParams::default(), &cm).await.unwrap();
            for i in 0..150 {
                cm.data = Some([("v".to_string(), format!("{i}{payload}"))].into());
                api.replace(&format!("churned-{w}"), &PostParams::default(), &cm).await.unwrap();
            }
        }));
    }
    for w in writers {
        w.await.unwrap();
    }
    let before = stored(&api).await;
    let status = s.sigterm(Duration::from_secs(10)).expect("still running 10 s after SIGTERM");
    assert!(status.success(), "{status}");

    let data = s.data_dir();
    let out = apiserver(&["defrag", "--data-dir", data.to_str().unwrap()]);
    let sizes: Vec<f64> = out.split(" MiB").filter_map(|part| part.rsplit(' ').next()?.parse().ok()).collect();
    assert!(sizes.len() == 2 && sizes[1] < sizes[0] / 2.0, "{out}");
    assert!(apiserver(&["check", "--data-dir", data.to_str().unwrap()]).contains("no problem found"));

    s.restart().await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    assert_eq!(stored(&api).await, before);
    api.create(&PostParams::default(), &configmap("after-defrag", &[])).await.unwrap();
}
