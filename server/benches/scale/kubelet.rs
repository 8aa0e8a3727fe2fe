//! One simulated node, doing what a kubelet does to the API server: under its own client
//! certificate (`system:node:<name>` in `system:nodes`, so through the Node authorizer and
//! NodeRestriction), it registers its Node and Lease, renews the Lease every 10 s, reports its
//! status every 60 s, lists and watches the pods bound to it (`spec.nodeName=<name>`), watches
//! the ConfigMap and Secret its pods use (one watch per object, as the kubelet's watch-based
//! manager), reports each pod Running once it lands, and on a pod's deletion reports it stopped
//! and deletes it for good.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions, WatchEvent, WatchParams};
use kube::Api;
use tokio::sync::watch;

use super::objects;
use super::reflector::{reflect, Seen};
use super::sli::{Call, Scope, Sli};

const LEASE_EVERY: Duration = Duration::from_secs(10);
const STATUS_EVERY: Duration = Duration::from_secs(60);

pub struct Kubelet {
    pub name: String,
    index: usize,
    client: kube::Client,
    sli: Arc<Sli>,
    /// Pods this node reported Running, and those it is taking down (until their deletion is
    /// seen).
    started: Mutex<HashSet<String>>,
    stopping: Mutex<HashSet<String>>,
    /// Namespaces whose ConfigMap and Secret this node watches.
    watched: Mutex<HashSet<String>>,
    containers: AtomicU64,
    /// How many of its pods run now.
    pub running: AtomicU64,
    stop: watch::Receiver<bool>,
}

fn call(verb: &'static str, resource: &'static str, scope: Scope) -> Call {
    Call { verb, resource, scope }
}

impl Kubelet {
    pub fn new(name: String, index: usize, client: kube::Client, sli: Arc<Sli>, stop: watch::Receiver<bool>) -> Arc<Kubelet> {
        Arc::new(Kubelet {
            name,
            index,
            client,
            sli,
            started: Default::default(),
            stopping: Default::default(),
            watched: Default::default(),
            containers: AtomicU64::new(0),
            running: AtomicU64::new(0),
            stop,
        })
    }

    /// Registers the Node and creates its Lease, owned by the Node (so that they go together).
    pub async fn register(&self) -> Result<Lease, kube::Error> {
        let nodes: Api<Node> = Api::all(self.client.clone());
        let node = self.sli.time(call("POST", "nodes", Scope::Object), nodes.create(&PostParams::default(), &objects::node(&self.name, self.index))).await?;
        let leases: Api<Lease> = Api::namespaced(self.client.clone(), "kube-node-lease");
        let mut lease = objects::lease(&self.name, &objects::now());
        lease.metadata.owner_references = Some(vec![k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
            api_version: "v1".into(),
            kind: "Node".into(),
            name: self.name.clone(),
            uid: node.metadata.uid.unwrap_or_default(),
            ..Default::default()
        }]);
        self.sli.time(call("POST", "leases", Scope::Object), leases.create(&PostParams::default(), &lease)).await
    }

    /// Runs the node's loops until `stop` turns true.
    pub fn run(self: &Arc<Self>, lease: Lease) -> Vec<tokio::task::JoinHandle<()>> {
        let stop = self.stop.clone();
        vec![
            tokio::spawn(self.clone().renew(lease, stop.clone())),
            tokio::spawn(self.clone().report(stop.clone())),
            tokio::spawn(self.clone().pods(stop)),
        ]
    }

    async fn renew(self: Arc<Self>, mut lease: Lease, mut stop: watch::Receiver<bool>) {
        let leases: Api<Lease> = Api::namespaced(self.client.clone(), "kube-node-lease");
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + jitter(self.index, LEASE_EVERY), LEASE_EVERY);
        while until(&mut tick, &mut stop).await {
            if let Some(spec) = lease.spec.as_mut() {
                spec.renew_time = Some(MicroTime(k8s_openapi::jiff::Timestamp::now()));
            }
            match self.sli.time(call("PUT", "leases", Scope::Object), leases.replace(&self.name, &PostParams::default(), &lease)).await {
                Ok(renewed) => lease = renewed,
                Err(_) => {
                    if let Ok(current) = self.sli.time(call("GET", "leases", Scope::Object), leases.get(&self.name)).await {
                        lease = current;
                    }
                }
            }
        }
    }

    async fn report(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        let nodes: Api<Node> = Api::all(self.client.clone());
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + jitter(self.index, STATUS_EVERY), STATUS_EVERY);
        while until(&mut tick, &mut stop).await {
            let patch = Patch::Strategic(objects::heartbeat(&objects::now()));
            let _ = self.sli.time(call("PATCH", "nodes/status", Scope::Object), nodes.patch_status(&self.name, &PatchParams::default(), &patch)).await;
        }
    }

    /// Lists and watches the pods bound to this node.
    async fn pods(self: Arc<Self>, stop: watch::Receiver<bool>) {
        let pods: Api<Pod> = Api::all(self.client.clone());
        let selector = format!("spec.nodeName={}", self.name);
        let me = self.clone();
        reflect(pods, &selector, call("LIST", "pods:node", Scope::Cluster), &self.sli, stop, |how, pod| match how {
            Seen::Deleted => me.gone(&pod),
            _ => me.clone().seen(pod),
        })
        .await;
    }

    /// A pod bound to this node: started once, taken down once deleted.
    fn seen(self: Arc<Self>, pod: Pod) {
        let Some(name) = pod.metadata.name.clone() else { return };
        let ns = pod.metadata.namespace.clone().unwrap_or_default();
        let key = format!("{ns}/{name}");
        if pod.metadata.deletion_timestamp.is_some() {
            if self.stopping.lock().unwrap().insert(key.clone()) {
                tokio::spawn(async move { self.stop_pod(&ns, &name, &key, pod.metadata.uid.clone()).await });
            }
            return;
        }
        if self.started.lock().unwrap().insert(key) {
            self.sli.delivered(&format!("bind/{ns}/{name}"));
            let stop = self.stop.clone();
            tokio::spawn(async move { self.start_pod(&ns, &name, stop).await });
        }
    }

    async fn start_pod(self: Arc<Self>, ns: &str, name: &str, stop: watch::Receiver<bool>) {
        if self.watched.lock().unwrap().insert(ns.to_string()) {
            tokio::spawn(self.clone().watch_one::<ConfigMap>(ns.to_string(), "settings", "configmaps", stop.clone()));
            tokio::spawn(self.clone().watch_one::<Secret>(ns.to_string(), "credentials", "secrets", stop));
        }
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), ns);
        let container = self.containers.fetch_add(1, Ordering::Relaxed) + ((self.index as u64) << 32);
        let pod_ip = format!("10.{}.{}.{}", 64 + self.index / 256, self.index % 256, container % 250 + 2);
        let patch = Patch::Strategic(objects::running(&objects::ip(self.index), &pod_ip, container));
        self.sli.expect(&format!("status/{ns}/{name}"));
        if self.sli.time(call("PATCH", "pods/status", Scope::Object), pods.patch_status(name, &PatchParams::default(), &patch)).await.is_ok() {
            self.sli.written(&format!("status/{ns}/{name}"));
            self.running.fetch_add(1, Ordering::Relaxed);
        } else {
            // Not started: the pod's next event tries again.
            self.started.lock().unwrap().remove(&format!("{ns}/{name}"));
        }
    }

    /// As the kubelet once a deleted pod's grace period is over: its final status, then the
    /// delete that removes it, on the uid it had.
    async fn stop_pod(self: Arc<Self>, ns: &str, name: &str, key: &str, uid: Option<String>) {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), ns);
        let patch = Patch::Strategic(objects::stopped());
        let _ = self.sli.time(call("PATCH", "pods/status", Scope::Object), pods.patch_status(name, &PatchParams::default(), &patch)).await;
        let params = DeleteParams { grace_period_seconds: Some(0), preconditions: Some(Preconditions { uid, resource_version: None }), ..Default::default() };
        let _ = self.sli.time(call("DELETE", "pods:final", Scope::Object), pods.delete(name, &params)).await;
        if self.started.lock().unwrap().remove(key) {
            self.running.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// A pod deleted for good: a pod of its name is a new one.
    fn gone(&self, pod: &Pod) {
        let key = format!("{}/{}", pod.metadata.namespace.as_deref().unwrap_or_default(), pod.metadata.name.as_deref().unwrap_or_default());
        self.stopping.lock().unwrap().remove(&key);
    }

    /// Watches one object its pods use, by name, as long as the node runs, as client-go's
    /// reflector does: list, then watch from the list's revision, and when the watch times out,
    /// watch again from the last revision seen (bookmarks move it on); list again only after
    /// 410 Gone or a failed call.
    async fn watch_one<K>(self: Arc<Self>, ns: String, name: &'static str, resource: &'static str, mut stop: watch::Receiver<bool>)
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope> + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
        K::DynamicType: Default,
    {
        let api: Api<K> = Api::namespaced(self.client.clone(), &ns);
        let selector = format!("metadata.name={name}");
        let mut resume: Option<String> = None;
        while !*stop.borrow() {
            let rv = match resume.take() {
                Some(rv) => rv,
                None => match self.sli.time(call("LIST", resource, Scope::Namespace), api.list(&ListParams::default().fields(&selector))).await {
                    Ok(listed) => listed.metadata.resource_version.unwrap_or_default(),
                    // No pod of this node uses it any more (the Node authorizer says so): the
                    // kubelet's manager stops watching it; a later pod here starts a new watch.
                    Err(kube::Error::Api(status)) if status.code == 403 => {
                        self.watched.lock().unwrap().remove(&ns);
                        return;
                    }
                    Err(_) => {
                        tokio::time::sleep(Duration::from_secs(5)).await;
                        continue;
                    }
                },
            };
            let params = WatchParams::default().fields(&selector).timeout(290);
            let Ok(stream) = api.watch(&params, &rv).await else { continue };
            let mut stream = stream.boxed();
            let mut last = rv;
            resume = loop {
                let event = tokio::select! {
                    event = stream.next() => event,
                    _ = stop.changed() => return,
                };
                match event {
                    Some(Ok(WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o))) => {
                        last = o.meta().resource_version.clone().unwrap_or(last);
                    }
                    Some(Ok(WatchEvent::Bookmark(b))) => last = b.metadata.resource_version,
                    // Timed out: watch again from where it got to.
                    None => break Some(last),
                    // 410 Gone, or the stream broke: list again.
                    Some(Ok(WatchEvent::Error(_)) | Err(_)) => break None,
                }
            };
        }
    }
}

/// A node's offset into its period, so that nodes spread their calls over it.
fn jitter(index: usize, period: Duration) -> Duration {
    Duration::from_millis((index as u64 * 7919) % period.as_millis() as u64)
}

/// Waits for the next tick; false once `stop` turned true.
async fn until(tick: &mut tokio::time::Interval, stop: &mut watch::Receiver<bool>) -> bool {
    tokio::select! {
        _ = tick.tick() => !*stop.borrow(),
        _ = stop.changed() => false,
    }
}
