//! The garbage collector, as kube-controller-manager runs it, on the Raft leader
//! ([`crate::controllers::leading`]): an object whose owners (its `ownerReferences`, matched by uid, name and
//! kind, in its own namespace or cluster-scoped) are all gone is deleted; references to owners
//! that are gone are dropped from objects that still have one; an owner deleted with the
//! `Orphan` policy (the `orphan` finalizer) releases its dependents, then loses the finalizer;
//! one deleted in the `Foreground` (the `foregroundDeletion` finalizer) has its dependents
//! deleted first and goes once none that blocks it (`blockOwnerDeletion`) is left. Dependents
//! are found through [`graph`], kept from the shared informer's events.

pub mod graph;

use std::sync::Mutex;

use futures::StreamExt;
use raft_store::{Event, EventType};
use serde_json::Value;

use crate::context::Context;
use crate::loopback::request;
use machinery::error::{ApiError, ApiResult};
use machinery::delete_options::{DeleteOptions, Propagation, FOREGROUND_FINALIZER, ORPHAN_FINALIZER};
use crate::loopback::Client;
use machinery::prepare::FieldValidation;
use machinery::registry;
use machinery::stored::{mentions, DELETION_TIMESTAMP};
use access::request::Verb;
use graph::{Graph, OwnerRef};

/// Every stored object lives under this prefix.
const ROOT: &str = "/registry/";
/// `metadata.ownerReferences`'s name as `mentions` looks for it.
const OWNER_REFERENCES: &str = "\"ownerReferences\"";
/// Dependents decided about at once (their deletes share the log's flushes).
const PARALLEL: usize = 32;

pub struct GarbageCollector {
    /// Acts as `generic-garbage-collector`.
    client: Client,
    graph: Mutex<Graph>,
}

/// What became of one owner reference.
enum OwnerState {
    /// Present and not waiting for its dependents.
    Solid,
    /// Present, being deleted in the foreground.
    Waiting,
    /// Gone (or another object with that name now).
    Dangling,
}

fn has_finalizer(obj: &Value, name: &str) -> bool {
    obj["metadata"]["finalizers"].as_array().is_some_and(|f| f.iter().any(|v| v == name))
}

fn deleting(obj: &Value) -> bool {
    obj["metadata"].get("deletionTimestamp").is_some()
}

fn settled(result: ApiResult<()>) -> ApiResult<()> {
    match result {
        // Gone already, or changed under us (the next event brings it back).
        Ok(()) | Err(ApiError::NotFound { .. }) | Err(ApiError::Conflict { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

impl GarbageCollector {
    pub fn new(client: Client) -> GarbageCollector {
        GarbageCollector { client, graph: Default::default() }
    }

    fn graph(&self) -> std::sync::MutexGuard<'_, Graph> {
        self.graph.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The object an owner reference of a dependent in `namespace` names, if it still exists
    /// with that uid. Found in the informer, it is there; not found (or another uid), a live
    /// read confirms it before anything is decided on its absence, as kube-controller-manager's
    /// collector does.
    async fn owner(&self, ctx: &Context, owner: &OwnerRef, namespace: Option<&str>) -> ApiResult<Option<Value>> {
        let (group, version) = owner.api_version.rsplit_once('/').unwrap_or(("", owner.api_version.as_str()));
        let Some(info) = registry::lookup_group_kind(group, version, &owner.kind) else { return Ok(None) };
        // A namespaced owner is looked for in the dependent's namespace only; a cluster-scoped
        // dependent cannot have one.
        let ns = match (info.namespaced, namespace) {
            (true, Some(ns)) => Some(ns),
            (true, None) => return Ok(None),
            (false, _) => None,
        };
        let same = |obj: &Value| obj["metadata"]["uid"] == owner.uid.as_str();
        if let Some(found) = ctx.informers.informer(ROOT).await.get(&info.key(ns, &owner.name)) {
            let obj = machinery::stored::parse(&found)?;
            if same(&obj) {
                return Ok(Some(obj));
            }
        }
        match self.client.get(&request(info, ns, &owner.name, Verb::Get)).await {
            Ok(obj) => Ok(same(&obj).then_some(obj)),
            Err(ApiError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// [`GarbageCollector::attempt`] for each of `keys`, [`PARALLEL`] at a time; the first
    /// error, after all have been tried.
    async fn attempt_all(&self, ctx: &Context, keys: Vec<String>) -> ApiResult<()> {
        let results: Vec<ApiResult<()>> = futures::stream::iter(keys)
            .map(|key| async move { self.attempt(ctx, &key).await })
            .buffer_unordered(PARALLEL)
            .collect()
            .await;
        results.into_iter().collect()
    }

    /// Decides about one dependent: deleted when no owner is left, references to gone (or
    /// foreground-deleting) owners dropped when one is.
    async fn attempt(&self, ctx: &Context, key: &str) -> ApiResult<()> {
        let Some(dep) = self.graph().get(key).cloned() else { return Ok(()) };
        if dep.deleting {
            return Ok(());
        }
        let Some((info, ns, name)) = registry::parse_key(key, "") else { return Ok(()) };
        let mut states = Vec::new();
        for owner in &dep.owners {
            let state = match self.owner(ctx, owner, ns.as_deref()).await? {
                None => OwnerState::Dangling,
                Some(o) if deleting(&o) && has_finalizer(&o, FOREGROUND_FINALIZER) => OwnerState::Waiting,
                Some(_) => OwnerState::Solid,
            };
            states.push((owner.uid.clone(), state));
        }
        let req = request(info, ns.as_deref(), &name, Verb::Update);
        if states.iter().any(|(_, s)| matches!(s, OwnerState::Solid)) {
            let drop: Vec<String> = states.into_iter().filter(|(_, s)| !matches!(s, OwnerState::Solid)).map(|(u, _)| u).collect();
            if drop.is_empty() {
                return Ok(());
            }
            return settled(Self::drop_owners(&self.client, &req, &dep.uid, &drop).await);
        }
        let waiting = states.iter().any(|(_, s)| matches!(s, OwnerState::Waiting));
        let propagation = if waiting && self.graph().has_dependents(&dep.uid) { Propagation::Foreground } else { Propagation::Background };
        tracing::debug!(%key, ?propagation, "garbage collector deletes an object whose owners are gone");
        let opts = DeleteOptions { uid: Some(dep.uid.clone()), propagation: Some(propagation), ..Default::default() };
        settled(self.client.delete(&request(info, ns.as_deref(), &name, Verb::Delete), &opts).await)
    }

    /// Removes the references to `owners` from the object `req` names (if it is still `uid`).
    async fn drop_owners(client: &Client, req: &access::request::ResourceRequest, uid: &str, owners: &[String]) -> ApiResult<()> {
        client.update(req, FieldValidation::Ignore, |old| {
            if old["metadata"]["uid"] != uid {
                return Err(ApiError::Conflict { group: String::new(), resource: String::new(), name: String::new(), message: "recreated".into() });
            }
            let mut new = old.clone();
            if let Some(refs) = new.get_mut("metadata").and_then(|m| m.get_mut("ownerReferences")).and_then(Value::as_array_mut) {
                refs.retain(|r| !owners.iter().any(|o| r["uid"] == o.as_str()));
                if refs.is_empty() {
                    new["metadata"].as_object_mut().map(|m| m.remove("ownerReferences"));
                }
            }
            Ok(new)
        })
        .await
    }

    /// Acts on an owner being deleted with the `orphan` or `foregroundDeletion` finalizer.
    async fn finalize_owner(&self, key: &str, obj: &Value) -> ApiResult<()> {
        if !deleting(obj) {
            return Ok(());
        }
        let uid = obj["metadata"]["uid"].as_str().unwrap_or_default().to_string();
        let Some((info, ns, name)) = registry::parse_key(key, obj["apiVersion"].as_str().unwrap_or_default()) else { return Ok(()) };
        let owner_req = request(info, ns.as_deref(), &name, Verb::Update);
        if has_finalizer(obj, ORPHAN_FINALIZER) {
            let deps = self.graph().dependents_of(&uid);
            for dep_key in deps {
                let Some(dep) = self.graph().get(&dep_key).cloned() else { continue };
                let Some((dinfo, dns, dname)) = registry::parse_key(&dep_key, "") else { continue };
                settled(Self::drop_owners(&self.client, &request(dinfo, dns.as_deref(), &dname, Verb::Update), &dep.uid, std::slice::from_ref(&uid)).await)?;
            }
            return settled(Self::remove_finalizer(&self.client, &owner_req, &uid, ORPHAN_FINALIZER).await);
        }
        if has_finalizer(obj, FOREGROUND_FINALIZER) {
            let mut blocking = false;
            let deps = self.graph().dependents_of(&uid);
            for dep_key in deps {
                let Some(dep) = self.graph().get(&dep_key).cloned() else { continue };
                blocking |= dep.owners.iter().any(|o| o.uid == uid && o.block_owner_deletion);
                if dep.deleting {
                    continue;
                }
                let Some((dinfo, dns, dname)) = registry::parse_key(&dep_key, "") else { continue };
                let propagation = if self.graph().has_dependents(&dep.uid) { Propagation::Foreground } else { Propagation::Background };
                let opts = DeleteOptions { uid: Some(dep.uid.clone()), propagation: Some(propagation), ..Default::default() };
                settled(self.client.delete(&request(dinfo, dns.as_deref(), &dname, Verb::Delete), &opts).await)?;
            }
            if !blocking {
                return settled(Self::remove_finalizer(&self.client, &owner_req, &uid, FOREGROUND_FINALIZER).await);
            }
        }
        Ok(())
    }

    async fn remove_finalizer(client: &Client, req: &access::request::ResourceRequest, uid: &str, finalizer: &str) -> ApiResult<()> {
        client.update(req, FieldValidation::Ignore, |old| {
            if old["metadata"]["uid"] != uid {
                return Err(ApiError::Conflict { group: String::new(), resource: String::new(), name: String::new(), message: "recreated".into() });
            }
            let mut new = old.clone();
            if let Some(list) = new.get_mut("metadata").and_then(|m| m.get_mut("finalizers")).and_then(Value::as_array_mut) {
                list.retain(|f| f != finalizer);
            }
            Ok(new)
        })
        .await
    }

    /// Owners of a dependent that just went, which may have been waiting for it.
    async fn recheck_owners(&self, ctx: &Context, owners: &[OwnerRef], namespace: Option<&str>) -> ApiResult<()> {
        for owner in owners {
            if let Some(obj) = self.owner(ctx, owner, namespace).await? {
                if deleting(&obj) && has_finalizer(&obj, FOREGROUND_FINALIZER) {
                    let (group, version) = owner.api_version.rsplit_once('/').unwrap_or(("", owner.api_version.as_str()));
                    if let Some(info) = registry::lookup_group_kind(group, version, &owner.kind) {
                        let ns = if info.namespaced { namespace } else { None };
                        self.finalize_owner(&info.key(ns, &owner.name), &obj).await?;
                    }
                }
            }
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl crate::controllers::leading::LeaderController for GarbageCollector {
    fn name(&self) -> &'static str {
        "garbagecollector"
    }

    fn watches(&self) -> Vec<String> {
        vec![ROOT.into()]
    }

    /// Rebuilds the graph from the informer, then looks at every dependent and every owner
    /// waiting to be finalized.
    async fn sync(&self, ctx: &Context) -> ApiResult<()> {
        let all = ctx.informers.informer(ROOT).await.list();
        let mut finalizing = Vec::new();
        {
            let mut graph = self.graph();
            graph.clear();
            for item in &all {
                let Ok(obj) = machinery::stored::parse(item) else { continue };
                let key = item_key(&obj);
                let Some(key) = key else { continue };
                graph.put(&key, &obj);
                if deleting(&obj) && (has_finalizer(&obj, ORPHAN_FINALIZER) || has_finalizer(&obj, FOREGROUND_FINALIZER)) {
                    finalizing.push((key, obj));
                }
            }
        }
        let keys = self.graph().keys();
        self.attempt_all(ctx, keys).await?;
        for (key, obj) in finalizing {
            self.finalize_owner(&key, &obj).await?;
        }
        Ok(())
    }

    async fn changed(&self, ctx: &Context, event: &Event) -> ApiResult<bool> {
        // Most writes neither name owners nor concern one: no need to parse them. A deletion
        // matters when anything has owners; a write when it names owners, is being deleted, or
        // was a dependent.
        let relevant = match event.kind {
            EventType::Deleted => !self.graph().is_empty(),
            _ => mentions(&event.object, OWNER_REFERENCES) || mentions(&event.object, DELETION_TIMESTAMP) || self.graph().get(&event.key).is_some(),
        };
        if !relevant {
            return Ok(false);
        }
        let Ok(obj) = machinery::stored::parse(&event.object) else { return Ok(false) };
        let namespace = obj["metadata"]["namespace"].as_str().map(str::to_string);
        if event.kind == EventType::Deleted {
            let gone = self.graph().remove(&event.key);
            let uid = obj["metadata"]["uid"].as_str().unwrap_or_default();
            let deps = self.graph().dependents_of(uid);
            self.attempt_all(ctx, deps).await?;
            if let Some(gone) = gone {
                self.recheck_owners(ctx, &gone.owners, namespace.as_deref()).await?;
            }
            return Ok(false);
        }
        // A dependent is looked at when it appears or its owners change, as kube-controller-manager's
        // graph builder does: a Lease renewed every ten seconds does not look its Node up each time.
        let changed = self.graph().put(&event.key, &obj);
        if changed && self.graph().get(&event.key).is_some() {
            self.attempt(ctx, &event.key).await?;
        }
        if deleting(&obj) && (has_finalizer(&obj, ORPHAN_FINALIZER) || has_finalizer(&obj, FOREGROUND_FINALIZER)) {
            self.finalize_owner(&event.key, &obj).await?;
        }
        Ok(false)
    }
}

/// The storage key of a listed object (the cache's list gives objects, not keys).
fn item_key(obj: &Value) -> Option<String> {
    let (group, version) = obj["apiVersion"].as_str()?.rsplit_once('/').map_or(("", obj["apiVersion"].as_str()?), |(g, v)| (g, v));
    let info = registry::lookup_group_kind(group, version, obj["kind"].as_str()?)?;
    let name = obj["metadata"]["name"].as_str()?;
    Some(info.key(obj["metadata"]["namespace"].as_str().filter(|_| info.namespaced), name))
}
