//! The control plane's clients of a simulated cluster: a scheduler that watches unscheduled pods
//! and binds each to a node in turn (16 bindings at once, as kube-scheduler's), informers that
//! list and watch every pod, node and EndpointSlice of the cluster (as kube-controller-manager,
//! kube-proxy-like and monitoring clients do), and the namespaced LISTs and GETs of SIG
//! Scalability's load test.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Binding, Node, ObjectReference, Pod};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{ListParams, PostParams, WatchEvent, WatchParams};
use kube::Api;
use tokio::sync::{watch, Semaphore};

use super::sli::{Call, Scope, Sli};

fn call(verb: &'static str, resource: &'static str, scope: Scope) -> Call {
    Call { verb, resource, scope }
}

/// Binds every unscheduled pod to the next of `nodes`, until `stop`.
pub async fn scheduler(client: kube::Client, nodes: Arc<Vec<String>>, sli: Arc<Sli>, mut stop: watch::Receiver<bool>) {
    let pods: Api<Pod> = Api::all(client.clone());
    let selector = "spec.nodeName=";
    let next = Arc::new(AtomicUsize::new(0));
    let binds = Arc::new(Semaphore::new(16));
    while !*stop.borrow() {
        let Ok(listed) = sli.time(call("LIST", "pods:pending", Scope::Cluster), pods.list(&ListParams::default().fields(selector))).await else {
            tokio::time::sleep(Duration::from_secs(1)).await;
            continue;
        };
        let mut rv = listed.metadata.resource_version.clone().unwrap_or_default();
        for pod in listed.items {
            bind(&client, pod, &nodes, &next, &binds, &sli);
        }
        loop {
            let Ok(stream) = pods.watch(&WatchParams::default().fields(selector).timeout(290), &rv).await else { break };
            let mut stream = stream.boxed();
            let gone = loop {
                let event = tokio::select! {
                    event = stream.try_next() => event,
                    _ = stop.changed() => return,
                };
                match event {
                    Ok(Some(WatchEvent::Added(pod))) => {
                        rv = pod.metadata.resource_version.clone().unwrap_or(rv);
                        bind(&client, pod, &nodes, &next, &binds, &sli);
                    }
                    Ok(Some(WatchEvent::Modified(pod) | WatchEvent::Deleted(pod))) => rv = pod.metadata.resource_version.clone().unwrap_or(rv),
                    Ok(Some(WatchEvent::Bookmark(b))) => rv = b.metadata.resource_version,
                    Ok(Some(WatchEvent::Error(e))) => break e.code == 410,
                    Ok(None) | Err(_) => break false,
                }
            };
            if gone {
                break;
            }
        }
    }
}

fn bind(client: &kube::Client, pod: Pod, nodes: &Arc<Vec<String>>, next: &Arc<AtomicUsize>, binds: &Arc<Semaphore>, sli: &Arc<Sli>) {
    if pod.metadata.deletion_timestamp.is_some() {
        return;
    }
    let (Some(name), Some(ns)) = (pod.metadata.name.clone(), pod.metadata.namespace.clone()) else { return };
    let node = nodes[next.fetch_add(1, Ordering::Relaxed) % nodes.len()].clone();
    let (client, binds, sli) = (client.clone(), binds.clone(), sli.clone());
    tokio::spawn(async move {
        let _seat = binds.acquire().await;
        let binding = Binding {
            metadata: kube::api::ObjectMeta { name: Some(name.clone()), namespace: Some(ns.clone()), ..Default::default() },
            target: ObjectReference { api_version: Some("v1".into()), kind: Some("Node".into()), name: Some(node), ..Default::default() },
        };
        let pods: Api<Pod> = Api::namespaced(client, &ns);
        sli.expect(&format!("bind/{ns}/{name}"));
        let posted = sli.time(call("POST", "pods/binding", Scope::Object), pods.create_subresource::<Binding, serde_json::Value>("binding", &name, &PostParams::default(), &binding)).await;
        if posted.is_ok() {
            sli.written(&format!("bind/{ns}/{name}"));
        }
    });
}

/// Lists and watches every object of `K` in the cluster until `stop`; `delivered` names the
/// writes whose events the run times (the first informer of pods times the kubelets' status
/// reports).
pub async fn informer<K>(client: kube::Client, resource: &'static str, sli: Arc<Sli>, times_status: bool, mut stop: watch::Receiver<bool>)
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
    K::DynamicType: Default,
{
    let api: Api<K> = Api::all(client);
    while !*stop.borrow() {
        let Ok(listed) = sli.time(call("LIST", resource, Scope::Cluster), api.list(&ListParams::default())).await else {
            tokio::time::sleep(Duration::from_secs(1)).await;
            continue;
        };
        let mut rv = listed.metadata.resource_version.clone().unwrap_or_default();
        loop {
            let Ok(stream) = api.watch(&WatchParams::default().timeout(290), &rv).await else { break };
            let mut stream = stream.boxed();
            let gone = loop {
                let event = tokio::select! {
                    event = stream.try_next() => event,
                    _ = stop.changed() => return,
                };
                match event {
                    Ok(Some(WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o))) => {
                        let meta = o.meta();
                        rv = meta.resource_version.clone().unwrap_or(rv);
                        if times_status {
                            sli.delivered(&format!("status/{}/{}", meta.namespace.as_deref().unwrap_or_default(), meta.name.as_deref().unwrap_or_default()));
                        }
                    }
                    Ok(Some(WatchEvent::Bookmark(b))) => rv = b.metadata.resource_version,
                    Ok(Some(WatchEvent::Error(e))) => break e.code == 410,
                    Ok(None) | Err(_) => break false,
                }
            };
            if gone {
                break;
            }
        }
    }
}

/// The cluster-wide informers: `count` each of pods, nodes and EndpointSlices.
pub fn informers(client: &kube::Client, count: usize, sli: &Arc<Sli>, stop: &watch::Receiver<bool>) -> Vec<tokio::task::JoinHandle<()>> {
    let mut tasks = Vec::new();
    for i in 0..count {
        tasks.push(tokio::spawn(informer::<Pod>(client.clone(), "pods", sli.clone(), i == 0, stop.clone())));
        tasks.push(tokio::spawn(informer::<Node>(client.clone(), "nodes", sli.clone(), false, stop.clone())));
        tasks.push(tokio::spawn(informer::<EndpointSlice>(client.clone(), "endpointslices", sli.clone(), false, stop.clone())));
    }
    tasks
}

/// Namespaced LISTs of pods and GETs of single pods, `per_second` of each, spread over the
/// namespaces, until `stop`.
pub async fn load(client: kube::Client, namespaces: Arc<Vec<String>>, pods_per_namespace: usize, per_second: u64, sli: Arc<Sli>, mut stop: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(Duration::from_micros(1_000_000 / per_second.max(1)));
    let mut i = 0usize;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.changed() => return,
        }
        let ns = namespaces[i % namespaces.len()].clone();
        let name = super::pod_name(&ns, (i / namespaces.len()) % pods_per_namespace.max(1));
        let (client, sli) = (client.clone(), sli.clone());
        i += 1;
        tokio::spawn(async move {
            let pods: Api<Pod> = Api::namespaced(client, &ns);
            let _ = sli.time(call("LIST", "pods", Scope::Namespace), pods.list(&ListParams::default())).await;
            let _ = sli.time(call("GET", "pods", Scope::Object), pods.get(&name)).await;
        });
    }
}
