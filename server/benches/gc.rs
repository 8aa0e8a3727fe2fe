//! The garbage-collector benchmark: one owner ConfigMap with 10,000 dependent ConfigMaps (created
//! by 32 clients), then the owner deleted with the default Background propagation; measures the
//! time until the last dependent is gone. Run with `cargo bench -p apiserver --bench gc`.

mod common;

use std::time::{Duration, Instant};

use common::{concurrently, Server};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::{Api, ResourceExt};

const DEPENDENTS: usize = 10_000;

#[tokio::main]
async fn main() {
    let server = Server::start(&[]);
    let admin = server.client().await;
    let api: Api<ConfigMap> = Api::namespaced(admin, "default");
    let owner = api.create(&PostParams::default(), &common::configmap("owner")).await.expect("owner");
    let reference = k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: "owner".into(),
        uid: owner.uid().expect("uid"),
        ..Default::default()
    };
    let (_, elapsed) = concurrently(DEPENDENTS, 32, {
        let api = api.clone();
        move |c, i| {
            let (api, reference) = (api.clone(), reference.clone());
            async move {
                let mut cm = common::configmap(&format!("dep-{c}-{i}"));
                cm.metadata.owner_references = Some(vec![reference]);
                cm.metadata.labels = Some([("gc-bench".to_string(), "dependent".to_string())].into());
                api.create(&PostParams::default(), &cm).await.expect("dependent");
            }
        }
    })
    .await;
    println!("created {DEPENDENTS} dependents in {:.2} s", elapsed.as_secs_f64());

    let started = Instant::now();
    api.delete("owner", &DeleteParams::default()).await.expect("delete the owner");
    // Only the dependents (the namespace also holds kube-root-ca.crt).
    let lp = ListParams::default().labels("gc-bench=dependent").limit(1);
    loop {
        let left = api.list_metadata(&lp).await.expect("list");
        if left.items.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!("deleting an owner of {DEPENDENTS} dependents (Background): all gone after {:.2} s", started.elapsed().as_secs_f64());
}
