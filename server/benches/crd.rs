//! The custom resource benchmark: creates of a custom resource whose version has a
//! 20-property schema and three CEL rules, against creates of ConfigMaps of the same size
//! (about 1 KiB), 32 clients, 4,000 of each per round, two rounds alternating. Run with
//! `cargo bench -p apiserver --bench crd`.

mod common;

use std::time::{Duration, Instant};

use common::{concurrently, report, Server};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ApiResource, DynamicObject, PostParams};
use kube::Api;
use serde_json::{json, Map, Value};

const WRITES: usize = 4_000;
const CLIENTS: usize = 32;
const PROPERTIES: usize = 20;

/// The definition: 20 string properties of bounded length, three rules across them.
fn definition() -> Value {
    let properties: Map<String, Value> =
        (0..PROPERTIES).map(|i| (format!("field{i:02}"), json!({"type": "string", "maxLength": 64, "pattern": "^[a-z0-9-]*$"}))).collect();
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "records.bench.example.com"},
        "spec": {
            "group": "bench.example.com", "scope": "Namespaced",
            "names": {"plural": "records", "kind": "Record"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": {
                    "type": "object",
                    "properties": properties,
                    "required": ["field00"],
                    "x-kubernetes-validations": [
                        {"rule": "self.field00.size() > 0"},
                        {"rule": "self.field01 != self.field02"},
                        {"rule": "!has(self.field19) || self.field19.startsWith('v')"},
                    ],
                }},
            }}}],
        },
    })
}

/// A spec of 20 values, as large as the ConfigMap's payload.
fn spec(c: usize, i: usize) -> Value {
    let value = |n: usize| format!("v{n:02}-{c}-{i}-{}", "x".repeat(30));
    Value::Object((0..PROPERTIES).map(|n| (format!("field{n:02}"), json!(value(n)))).collect())
}

fn configmap(name: &str, c: usize, i: usize) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_string());
    let data = spec(c, i).as_object().expect("object").iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string())).collect();
    cm.data = Some(data);
    cm
}

#[tokio::main]
async fn main() {
    let server = Server::start(&[]);
    let client = server.client().await;
    let crds: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ApiResource { group: "apiextensions.k8s.io".into(), version: "v1".into(), api_version: "apiextensions.k8s.io/v1".into(), kind: "CustomResourceDefinition".into(), plural: "customresourcedefinitions".into() },
    );
    crds.create(&PostParams::default(), &serde_json::from_value(definition()).expect("definition")).await.expect("create the definition");
    let ar = ApiResource { group: "bench.example.com".into(), version: "v1".into(), api_version: "bench.example.com/v1".into(), kind: "Record".into(), plural: "records".into() };
    let records: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
    let deadline = Instant::now() + Duration::from_secs(30);
    while records.list(&Default::default()).await.is_err() {
        assert!(Instant::now() < deadline, "the definition was not established");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let configmaps: Api<ConfigMap> = Api::namespaced(client, "default");
    let sample = serde_json::to_vec(&configmap("x", 0, 0)).expect("json").len();
    println!("objects: {PROPERTIES} values, about {sample} bytes; {CLIENTS} clients, {WRITES} creates per round");
    let mut rates = [Vec::new(), Vec::new()];
    for round in 0..2 {
        for custom in [false, true] {
            let (records, configmaps, ar) = (records.clone(), configmaps.clone(), ar.clone());
            let (lat, el) = concurrently(WRITES, CLIENTS, move |c, i| {
                let (records, configmaps, ar) = (records.clone(), configmaps.clone(), ar.clone());
                async move {
                    let name = format!("r{round}-{c}-{i}");
                    if custom {
                        let mut obj = DynamicObject::new(&name, &ar);
                        obj.data = json!({"spec": spec(c, i)});
                        records.create(&PostParams::default(), &obj).await.expect("create a custom resource");
                    } else {
                        configmaps.create(&PostParams::default(), &configmap(&name, c, i)).await.expect("create a configmap");
                    }
                }
            })
            .await;
            let what = if custom { "custom resource create" } else { "ConfigMap create" };
            rates[usize::from(custom)].push(report(&format!("round {round}: {what}"), lat, el));
        }
    }
    let mean = |r: &[f64]| r.iter().sum::<f64>() / r.len() as f64;
    println!("custom resource creates: {:.0}% of ConfigMap creates (target >= 70%)", 100.0 * mean(&rates[1]) / mean(&rates[0]));
}
