//! Terminating pods, finished: with no kubelet to report that a pod's containers stopped, a pod
//! deleted with a grace period ([`machinery::grace`]) is deleted for good once its
//! `deletionTimestamp` has passed and its finalizers are gone, on the Raft leader. Terminating
//! pods are tracked from the shared informer's events (one scan when leadership begins); their
//! deadlines are looked at every second.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use raft_store::{Event, EventType};

use crate::context::Context;
use crate::loopback::request;
use machinery::error::{ApiError, ApiResult};
use machinery::delete_options::DeleteOptions;
use machinery::grace;
use crate::loopback::Client;
use machinery::registry::{self, ResourceInfo};
use access::request::Verb;

fn pods() -> &'static ResourceInfo {
    registry::lookup("", "v1", "pods").expect("pods are served")
}

pub struct PodGc {
    /// Acts as `pod-garbage-collector`.
    client: Client,
    /// Terminating pods by key, with their uid.
    pending: Mutex<BTreeMap<String, String>>,
    /// Whether `pending` was filled from a scan since the watch (re)started.
    primed: AtomicBool,
}

impl PodGc {
    pub fn new(client: Client) -> PodGc {
        PodGc { client, pending: Default::default(), primed: Default::default() }
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, String>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[async_trait::async_trait]
impl crate::controllers::leading::LeaderController for PodGc {
    fn name(&self) -> &'static str {
        "podgc"
    }

    fn watches(&self) -> Vec<String> {
        vec![pods().key_prefix()]
    }

    fn recheck(&self) -> Option<Duration> {
        Some(Duration::from_secs(1))
    }

    fn restarted(&self) {
        self.primed.store(false, Ordering::SeqCst);
    }

    async fn sync(&self, ctx: &Context) -> ApiResult<()> {
        let informer = ctx.informers.informer(&pods().key_prefix()).await;
        if !self.primed.swap(true, Ordering::SeqCst) {
            let all = informer.list();
            let mut pending = self.pending();
            pending.clear();
            for item in &all {
                let Ok(pod) = machinery::stored::parse(item) else { continue };
                if pod["metadata"].get("deletionTimestamp").is_some() {
                    let meta = &pod["metadata"];
                    let key = pods().key(meta["namespace"].as_str(), meta["name"].as_str().unwrap_or_default());
                    pending.insert(key, meta["uid"].as_str().unwrap_or_default().to_string());
                }
            }
        }
        let candidates: Vec<(String, String)> = self.pending().iter().map(|(k, u)| (k.clone(), u.clone())).collect();
        for (key, uid) in candidates {
            let Some(found) = informer.get(&key) else {
                self.pending().remove(&key);
                continue;
            };
            let pod = machinery::stored::parse(&found)?;
            if pod["metadata"]["uid"] != uid.as_str() {
                self.pending().remove(&key);
                continue;
            }
            let no_finalizers = pod["metadata"]["finalizers"].as_array().is_none_or(Vec::is_empty);
            if no_finalizers && grace::expired(&pod) {
                let meta = &pod["metadata"];
                let req = request(pods(), meta["namespace"].as_str(), meta["name"].as_str().unwrap_or_default(), Verb::Delete);
                let opts = DeleteOptions { uid: Some(uid), grace_period: Some(0), ..Default::default() };
                match self.client.delete(&req, &opts).await {
                    Ok(()) | Err(ApiError::NotFound { .. }) | Err(ApiError::Conflict { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(())
    }

    async fn changed(&self, _ctx: &Context, event: &Event) -> ApiResult<bool> {
        if event.kind == EventType::Deleted {
            self.pending().remove(&event.key);
            return Ok(false);
        }
        // Only a terminating pod is tracked: the others are not parsed.
        if !machinery::stored::mentions(&event.object, machinery::stored::DELETION_TIMESTAMP) {
            return Ok(false);
        }
        let Ok(pod) = machinery::stored::parse(&event.object) else { return Ok(false) };
        if pod["metadata"].get("deletionTimestamp").is_some() {
            self.pending().insert(event.key.clone(), pod["metadata"]["uid"].as_str().unwrap_or_default().to_string());
        }
        Ok(false)
    }
}
