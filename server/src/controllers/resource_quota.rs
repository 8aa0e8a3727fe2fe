//! The resource quota controller, as kube-controller-manager runs it, on the Raft leader: a
//! quota gets `status.hard` from its `spec.hard` and `status.used` counted from its namespace's
//! objects ([`admission::resource_quota::usage`], the counting admission charges by). A
//! namespace is counted again when one of its quotas is created or its `spec.hard` changes,
//! when an object in it is deleted (its usage given back), and when a pod, Service or claim in it
//! changes what it uses; every quota is counted again every five minutes (the
//! controller-manager's default resync). It reads through the shared informer of every key
//! (the garbage collector's) and writes each status as
//! `system:serviceaccount:kube-system:resourcequota-controller` from the informer's copy,
//! which is all its default role allows (list, watch, update of `resourcequotas/status`); it
//! is off with `--controllers=-resourcequota`.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use raft_store::{Event, EventType, Object};
use serde_json::Value;

use admission::resource_list::{equal, mask, read, write, ResourceList};
use admission::resource_quota::evaluators::Evaluator;
use admission::resource_quota::scopes::terminating;
use admission::resource_quota::{usage, PREFIX};
use access::request::{ResourceRequest, Verb};
use machinery::error::{ApiError, ApiResult};
use machinery::registry::{self, ResourceInfo};

use crate::context::Context;
use crate::controllers::informer::Informer;
use crate::loopback::{request, Client};

/// Every key: the informer the garbage collector shares.
const ROOT: &str = "/registry/";

/// kube-controller-manager's `--resource-quota-sync-period` default.
const RESYNC: Duration = Duration::from_secs(5 * 60);

fn quotas() -> &'static ResourceInfo {
    registry::lookup("", "v1", "resourcequotas").expect("resourcequotas are served")
}

pub struct QuotaController {
    /// Acts as `resourcequota-controller`.
    client: Client,
    /// Namespaces to count again at the next sync; none: every namespace.
    dirty: Mutex<BTreeSet<String>>,
    /// Set when the informer listed again: every namespace is due.
    full: AtomicBool,
}

impl QuotaController {
    pub fn new(client: Client) -> QuotaController {
        QuotaController { client, dirty: Default::default(), full: AtomicBool::new(true) }
    }

    fn dirty(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.dirty.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts the namespace's quotas again and writes the statuses that changed.
    async fn sync_namespace(&self, informer: &Informer, namespace: &str) -> ApiResult<()> {
        for stored in informer.list_under(&quotas().list_prefix(Some(namespace))) {
            let quota = machinery::stored::parse(&stored)?;
            let Some(status) = status(informer, namespace, &quota) else { continue };
            let mut updated = quota.clone();
            updated["status"] = status;
            let name = quota["metadata"]["name"].as_str().unwrap_or_default();
            let req = ResourceRequest { subresource: Some("status".into()), ..request(quotas(), Some(namespace), name, Verb::Update) };
            match self.client.replace(&req, updated).await {
                Ok(_) | Err(ApiError::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Marks the namespace for counting when it has quotas; returns whether it did.
    fn touch(&self, informer: &Informer, namespace: &str) -> bool {
        if !has_quotas(informer, namespace) {
            return false;
        }
        self.dirty().insert(namespace.to_string());
        true
    }
}

fn has_quotas(informer: &Informer, namespace: &str) -> bool {
    informer.holds_under(&quotas().list_prefix(Some(namespace)))
}

/// The quota's new status, when it differs from the one it has: `hard` as the spec's, `used`
/// as counted (what cannot be counted keeps its value), both kept to the names `hard` has.
fn status(informer: &Informer, namespace: &str, quota: &Value) -> Option<Value> {
    let hard = read(&quota["spec"]["hard"]);
    let counted = usage::calculate(quota, &hard, |group, resource| {
        let info = registry::served().find(|r| r.group == group && r.resource == resource && r.namespaced)?;
        Some(informer.list_under(&info.list_prefix(Some(namespace))).iter().filter_map(|o| machinery::stored::parse(o).ok()).collect())
    });
    let old_used = read(&quota["status"]["used"]);
    let mut used = old_used.clone();
    used.extend(counted);
    let used = mask(&used, hard.keys());
    let current = &quota["status"];
    let unchanged = current["hard"].is_object() && current["used"].is_object() && equal(&hard, &read(&current["hard"])) && equal(&used, &old_used);
    (!unchanged).then(|| serde_json::json!({"hard": write(&hard), "used": write(&used)}))
}

/// Whether a change of a pod, Service or claim moves what its quotas count.
fn moves_usage(info: &ResourceInfo, old: &Value, new: &Value) -> bool {
    let Some(evaluator) = Evaluator::of(info.group, info.resource).filter(|e| !matches!(e, Evaluator::Count(_))) else { return false };
    let (before, after): (ResourceList, ResourceList) = (evaluator.usage(old), evaluator.usage(new));
    !equal(&before, &after) || (evaluator == Evaluator::Pods && terminating(old) != terminating(new))
}

fn parse(object: &Object) -> Option<Value> {
    machinery::stored::parse(object).ok()
}

#[async_trait::async_trait]
impl crate::controllers::leading::LeaderController for QuotaController {
    fn name(&self) -> &'static str {
        "resourcequota"
    }

    fn watches(&self) -> Vec<String> {
        vec![ROOT.into()]
    }

    fn recheck(&self) -> Option<Duration> {
        Some(RESYNC)
    }

    fn restarted(&self) {
        self.full.store(true, Ordering::SeqCst);
    }

    /// The namespaces marked since the last sync, or (at start, after a relist, at the
    /// periodic resync) every namespace with quotas.
    async fn sync(&self, ctx: &Context) -> ApiResult<()> {
        let informer = ctx.informers.informer(ROOT).await;
        let marked = std::mem::take(&mut *self.dirty());
        let namespaces: BTreeSet<String> = match self.full.swap(false, Ordering::SeqCst) || marked.is_empty() {
            true => informer.list_under(&quotas().key_prefix()).iter().filter_map(parse).filter_map(|q| q["metadata"]["namespace"].as_str().map(String::from)).collect(),
            false => marked,
        };
        let mut failed = None;
        for namespace in namespaces {
            if let Err(e) = self.sync_namespace(&informer, &namespace).await {
                // Counted again at the retry (a conflict: the informer has not seen a charge yet).
                self.dirty().insert(namespace);
                failed = Some(e);
            }
        }
        failed.map_or(Ok(()), Err)
    }

    async fn changed(&self, ctx: &Context, event: &Event) -> ApiResult<bool> {
        let informer = ctx.informers.informer(ROOT).await;
        if let Some(rest) = event.key.strip_prefix(PREFIX) {
            let namespace = rest.split_once('/').map_or(rest, |(ns, _)| ns);
            let due = match (event.kind, event.prev.as_ref().and_then(parse), parse(&event.object)) {
                (EventType::Added, ..) => true,
                // Only a new `spec.hard` is the controller's to answer; status writes are not.
                (EventType::Modified, Some(old), Some(new)) => !equal(&read(&old["spec"]["hard"]), &read(&new["spec"]["hard"])),
                _ => false,
            };
            return Ok(due && self.touch(&informer, namespace));
        }
        let interesting = match event.kind {
            EventType::Deleted => true,
            EventType::Modified => ["pods", "services", "persistentvolumeclaims"].iter().any(|r| event.key.starts_with(&format!("{ROOT}{r}/"))),
            _ => false,
        };
        // Quotas count namespaced objects, whose keys end in `namespace/name`: in a namespace
        // without quotas nothing is parsed.
        let namespace = event.key.rsplit('/').nth(1).unwrap_or_default();
        if !interesting || !has_quotas(&informer, namespace) {
            return Ok(false);
        }
        let Some(object) = parse(&event.object) else { return Ok(false) };
        let Some(namespace) = object["metadata"]["namespace"].as_str() else { return Ok(false) };
        if event.kind == EventType::Modified {
            let (Some((info, ..)), Some(old)) = (registry::parse_key(&event.key, "v1"), event.prev.as_ref().and_then(parse)) else { return Ok(false) };
            if !moves_usage(info, &old, &object) {
                return Ok(false);
            }
        }
        Ok(self.touch(&informer, namespace))
    }
}
