//! The server-side apply benchmark: 4,000 server-side applies (each changing one value of a
//! 1 KiB ConfigMap, 32 clients) against 4,000 unconditional updates (PUT without a
//! resourceVersion) doing the same, two rounds each, alternating, and the bytes
//! `managedFields` add to a stored object. Run with
//! `cargo bench -p apiserver --bench apply`.

mod common;

use common::{concurrently, creates, report, Server};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Patch, PatchParams, PostParams};
use kube::Api;

const OBJECTS: usize = 400;
const WRITES: usize = 4_000;
const CLIENTS: usize = 32;

#[tokio::main]
async fn main() {
    let server = Server::start(&[]);
    let admin = server.client().await;
    let api: Api<ConfigMap> = Api::namespaced(admin, "default");
    creates(&api, "obj", OBJECTS, 8).await;
    let names: Vec<String> = (0..OBJECTS).map(|i| format!("obj-{}-{}", i % 8, i / 8)).collect();
    for round in 0..2 {
        for apply in [false, true] {
            let (api2, names2) = (api.clone(), names.clone());
            let (lat, el) = concurrently(WRITES, CLIENTS, move |c, i| {
                let (api, name) = (api2.clone(), names2[(c * 7919 + i) % names2.len()].clone());
                async move {
                    let mut cm = common::configmap(&name);
                    cm.data.get_or_insert_default().insert("counter".into(), format!("{round}-{c}-{i}"));
                    if apply {
                        let body = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": cm.data});
                        api.patch(&name, &PatchParams::apply("bench").force(), &Patch::Apply(body)).await.expect("apply");
                    } else {
                        api.replace(&name, &PostParams::default(), &cm).await.expect("update");
                    }
                }
            })
            .await;
            let what = if apply { "server-side apply" } else { "update" };
            report(&format!("round {round}: {what}, {CLIENTS} clients"), lat, el);
        }
    }
    let stored = api.get(&names[0]).await.expect("get");
    let with = serde_json::to_vec(&stored).expect("json").len();
    let mut bare = stored.clone();
    bare.metadata.managed_fields = None;
    let without = serde_json::to_vec(&bare).expect("json").len();
    println!("managedFields add {} bytes to a {} byte object ({} entries)", with - without, without, stored.metadata.managed_fields.map_or(0, |m| m.len()));
}
