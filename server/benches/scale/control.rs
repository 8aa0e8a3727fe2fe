//! The control plane's clients of a simulated cluster: a scheduler that watches unscheduled pods
//! and binds each to a node in turn (16 bindings at once, as kube-scheduler's), informers that
//! list and watch every pod, node and EndpointSlice of the cluster (as kube-controller-manager,
//! kube-proxy-like and monitoring clients do), and the namespaced LISTs and GETs of SIG
//! Scalability's load test.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Binding, Node, ObjectReference, Pod};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{ListParams, PostParams};
use kube::Api;
use tokio::sync::{watch, Semaphore};

use super::reflector::{reflect, Seen};
use super::sli::{Call, Scope, Sli};

fn call(verb: &'static str, resource: &'static str, scope: Scope) -> Call {
    Call { verb, resource, scope }
}

/// Binds every unscheduled pod to the next of `nodes`, until `stop`.
pub async fn scheduler(client: kube::Client, nodes: Arc<Vec<String>>, sli: Arc<Sli>, stop: watch::Receiver<bool>) {
    let pods: Api<Pod> = Api::all(client.clone());
    let next = Arc::new(AtomicUsize::new(0));
    let binds = Arc::new(Semaphore::new(16));
    reflect(pods, "spec.nodeName=", call("LIST", "pods:pending", Scope::Cluster), &sli, stop, |how, pod| {
        if matches!(how, Seen::Listed | Seen::Added) {
            bind(&client, pod, &nodes, &next, &binds, &sli);
        }
    })
    .await;
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

/// Lists and watches every object of `K` in the cluster until `stop`; the first informer of
/// pods times the kubelets' status reports (`times_status`).
pub async fn informer<K>(client: kube::Client, resource: &'static str, sli: Arc<Sli>, times_status: bool, stop: watch::Receiver<bool>)
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
    K::DynamicType: Default,
{
    let api: Api<K> = Api::all(client);
    reflect(api, "", call("LIST", resource, Scope::Cluster), &sli, stop, |how, object| {
        if times_status && how != Seen::Listed {
            let meta = object.meta();
            sli.delivered(&format!("status/{}/{}", meta.namespace.as_deref().unwrap_or_default(), meta.name.as_deref().unwrap_or_default()));
        }
    })
    .await;
}

/// One process's cluster-wide informers of pods, nodes and EndpointSlices over its `client`;
/// `times_status` for the first.
pub fn informers(client: kube::Client, times_status: bool, sli: &Arc<Sli>, stop: &watch::Receiver<bool>) -> Vec<tokio::task::JoinHandle<()>> {
    vec![
        tokio::spawn(informer::<Pod>(client.clone(), "pods", sli.clone(), times_status, stop.clone())),
        tokio::spawn(informer::<Node>(client.clone(), "nodes", sli.clone(), false, stop.clone())),
        tokio::spawn(informer::<EndpointSlice>(client, "endpointslices", sli.clone(), false, stop.clone())),
    ]
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
