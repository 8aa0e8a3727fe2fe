//! The namespace controller, on the Raft leader: a namespace being deleted is emptied (every
//! object in it deleted), its status conditions say what remains and which finalizers it waits
//! on, as Kubernetes' namespace controller reports them, and once nothing is left its `kubernetes`
//! finalizer is dropped so that it goes away.

use std::time::Duration;

use serde_json::{json, Value};

use crate::loopback::request;
use crate::context::Context;
use crate::loopback::Client;
use machinery::prepare::FieldValidation;
use access::request::{ResourceRequest, Verb};
use machinery::error::{ApiError, ApiResult};
use machinery::registry;

fn namespaces() -> &'static registry::ResourceInfo {
    registry::lookup("", "v1", "namespaces").expect("namespaces are served")
}

/// A pass over terminating namespaces every second while this node leads, acting as
/// `namespace-controller`; not at all when `--controllers` turns `namespace` off
/// (kube-controller-manager runs it instead).
pub async fn run(ctx: Context, client: Client) {
    if !ctx.settings.controller_enabled("namespace") {
        return;
    }
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tick.tick().await;
        if !ctx.store.is_leader() {
            continue;
        }
        if let Err(e) = finalize_namespaces(&ctx, &client).await {
            tracing::warn!(error = %e, "namespace controller pass failed");
        }
    }
}

/// One pass over terminating namespaces.
async fn finalize_namespaces(ctx: &Context, client: &Client) -> ApiResult<()> {
    let info = namespaces();
    let all = ctx.informers.informer(&info.key_prefix()).await.list();
    for obj in all.iter().filter(|o| machinery::stored::mentions(o, machinery::stored::DELETION_TIMESTAMP)) {
        let ns: Value = machinery::stored::parse(obj)?;
        if ns["metadata"].get("deletionTimestamp").is_none() {
            continue;
        }
        let name = ns["metadata"]["name"].as_str().unwrap_or_default().to_string();
        let mut remaining = 0;
        let mut left = Remaining::default();
        for res in registry::served().filter(|r| r.namespaced && r.verbs.contains(&"list") && r.verbs.contains(&"delete")) {
            let listed = client.list(&request(res, Some(&name), "", Verb::List)).await?;
            for v in listed["items"].as_array().into_iter().flatten() {
                remaining += 1;
                left.add(res, v);
                let item_name = v["metadata"]["name"].as_str().unwrap_or_default();
                if v["metadata"].get("deletionTimestamp").is_some() {
                    continue;
                }
                match client.delete(&request(res, Some(&name), item_name, Verb::Delete), &Default::default()).await {
                    Ok(()) | Err(ApiError::NotFound { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        let conditions = left.conditions(&ns["status"]["conditions"]);
        if ns["status"]["conditions"] != conditions {
            let req = ResourceRequest { subresource: Some("status".into()), ..request(info, None, &name, Verb::Update) };
            let set = |old: &Value| -> ApiResult<Value> {
                let mut new = old.clone();
                new["status"]["conditions"] = conditions.clone();
                Ok(new)
            };
            match client.update(&req, FieldValidation::Ignore, set).await {
                Ok(()) | Err(ApiError::NotFound { .. }) | Err(ApiError::Conflict { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        if remaining == 0 {
            let req = ResourceRequest { subresource: Some("finalize".into()), ..request(info, None, &name, Verb::Update) };
            let finalize = |old: &Value| -> ApiResult<Value> {
                let mut new = old.clone();
                new["spec"]["finalizers"] = json!([]);
                Ok(new)
            };
            match client.update(&req, FieldValidation::Ignore, finalize).await {
                Ok(()) | Err(ApiError::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

/// What is left in a terminating namespace: objects by resource, and the finalizers they wait on.
#[derive(Default)]
struct Remaining {
    resources: std::collections::BTreeMap<String, usize>,
    finalizers: std::collections::BTreeMap<String, usize>,
}

impl Remaining {
    fn add(&mut self, res: &registry::ResourceInfo, obj: &Value) {
        let name = if res.group.is_empty() { res.resource.to_string() } else { format!("{}.{}", res.resource, res.group) };
        *self.resources.entry(name).or_default() += 1;
        for f in obj["metadata"]["finalizers"].as_array().into_iter().flatten().filter_map(Value::as_str) {
            *self.finalizers.entry(f.to_string()).or_default() += 1;
        }
    }

    /// The namespace's status conditions, as Kubernetes' namespace controller reports them;
    /// a condition keeps its transition time while its status stays.
    fn conditions(&self, old: &Value) -> Value {
        let list = |m: &std::collections::BTreeMap<String, usize>, what: &str| {
            m.iter().map(|(k, n)| format!("{k} {what} {n} resource instances")).collect::<Vec<_>>().join(", ")
        };
        let (content, finalizers) = (!self.resources.is_empty(), !self.finalizers.is_empty());
        let rows = [
            ("NamespaceDeletionDiscoveryFailure", false, "ResourcesDiscovered", "All resources successfully discovered".to_string()),
            ("NamespaceDeletionGroupVersionParsingFailure", false, "ParsedGroupVersions", "All legacy kube types successfully parsed".to_string()),
            ("NamespaceDeletionContentFailure", false, "ContentDeleted", "All content successfully deleted, may be waiting on finalization".to_string()),
            if content {
                ("NamespaceContentRemaining", true, "SomeResourcesRemain", format!("Some resources are remaining: {}", list(&self.resources, "has")))
            } else {
                ("NamespaceContentRemaining", false, "ContentRemoved", "All content successfully removed".to_string())
            },
            if finalizers {
                ("NamespaceFinalizersRemaining", true, "SomeFinalizersRemain", format!("Some content in the namespace has finalizers remaining: {}", list(&self.finalizers, "in")))
            } else {
                ("NamespaceFinalizersRemaining", false, "ContentHasNoFinalizers", "All content-preserving finalizers finished".to_string())
            },
        ];
        let now = machinery::meta::now();
        Value::Array(
            rows.into_iter()
                .map(|(kind, on, reason, message)| {
                    let status = if on { "True" } else { "False" };
                    let before = old.as_array().and_then(|l| l.iter().find(|c| c["type"] == kind));
                    let time = match before {
                        Some(c) if c["status"] == status => c["lastTransitionTime"].clone(),
                        _ => json!(now),
                    };
                    json!({"type": kind, "status": status, "lastTransitionTime": time, "reason": reason, "message": message})
                })
                .collect(),
        )
    }
}
