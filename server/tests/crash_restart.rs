//! Durability: every acknowledged write survives `kill -9`, the resourceVersion sequence
//! continues after a restart, and SIGTERM exits cleanly.

mod support;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ListParams, PostParams};
use kube::Api;
use support::TestServer;

#[tokio::test]
async fn acknowledged_writes_survive_kill_9() {
    let mut s = TestServer::start(&[]).await;
    let api: Api<ConfigMap> = Api::namespaced(s.client().await, "default");
    let tasks: Vec<_> = (0..8)
        .map(|t| {
            let api = api.clone();
            tokio::spawn(async move {
                let mut acked = Vec::new();
                for i in 0..25 {
                    let cm: ConfigMap = serde_json::from_value(serde_json::json!({"metadata": {"name": format!("c-{t}-{i}")}})).unwrap();
                    let c = api.create(&PostParams::default(), &cm).await.unwrap();
                    acked.push((c.metadata.name.unwrap(), c.metadata.resource_version.unwrap()));
                }
                acked
            })
        })
        .collect();
    let mut acked = Vec::new();
    for t in tasks {
        acked.extend(t.await.unwrap());
    }
    s.restart().await;
    let api: Api<ConfigMap> = Api::namespaced(s.client().await, "default");
    let list = api.list(&ListParams::default()).await.unwrap();
    let stored: std::collections::HashMap<_, _> = list
        .items
        .iter()
        .map(|c| (c.metadata.name.clone().unwrap(), c.metadata.resource_version.clone().unwrap()))
        .collect();
    let mut max = 0u64;
    for (name, rv) in &acked {
        assert_eq!(stored.get(name), Some(rv), "{name} lost or changed");
        max = max.max(rv.parse().unwrap());
    }
    let cm: ConfigMap = serde_json::from_value(serde_json::json!({"metadata": {"name": "after"}})).unwrap();
    let next: u64 = api.create(&PostParams::default(), &cm).await.unwrap().metadata.resource_version.unwrap().parse().unwrap();
    assert!(next > max);
    assert!(s.sigterm().success());
}
