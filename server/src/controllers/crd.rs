//! The definitions' controller, on the Raft leader: accepts a definition's names unless another
//! definition of the group holds one of them (`NamesAccepted`), then establishes it
//! (`Established`, the storage version recorded in `storedVersions`); a definition being deleted
//! is `Terminating` while its custom resources are deleted, and loses the
//! `customresourcecleanup.apiextensions.k8s.io` finalizer once none is left.

use serde_json::{json, Value};

use machinery::crd::definition::{set_condition, CLEANUP_FINALIZER};
use machinery::crd::served::{condition, PREFIX};
use crate::context::Context;
use crate::loopback::request;
use machinery::error::{ApiError, ApiResult};
use crate::loopback::Client;
use machinery::prepare::FieldValidation;
use machinery::registry::{self, ResourceInfo};
use access::request::{ResourceRequest, Verb};


fn definitions() -> &'static ResourceInfo {
    registry::lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions").expect("definitions are served")
}

pub struct CrdController {
    pub client: Client,
}

#[async_trait::async_trait]
impl crate::controllers::leading::LeaderController for CrdController {
    fn name(&self) -> &'static str {
        "crd"
    }

    fn watches(&self) -> Vec<String> {
        vec![PREFIX.to_string()]
    }

    /// Custom resources of a deleted definition go away under other keys: look again.
    fn recheck(&self) -> Option<std::time::Duration> {
        Some(std::time::Duration::from_secs(1))
    }

    async fn sync(&self, ctx: &Context) -> ApiResult<()> {
        let all = ctx.informers.informer(PREFIX).await.list();
        let crds: Vec<Value> = all.iter().filter_map(|o| machinery::stored::parse(o).ok()).collect();
        for crd in &crds {
            let name = crd["metadata"]["name"].as_str().unwrap_or_default();
            let result = if crd["metadata"].get("deletionTimestamp").is_some() {
                clean_up(&self.client, crd).await
            } else {
                let status = status(crd, &crds);
                if status == crd["status"] {
                    continue;
                }
                write_status(&self.client, name, status).await
            };
            match result {
                Ok(()) | Err(ApiError::NotFound { .. }) | Err(ApiError::Conflict { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// The names a definition asks for, in the order Kubernetes checks them for conflicts.
fn names_of(names: &Value) -> Vec<String> {
    let one = |k: &str| names[k].as_str().filter(|s| !s.is_empty()).map(str::to_string);
    let short = names["shortNames"].as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_string);
    one("plural").into_iter().chain(one("singular")).chain(short).chain(one("kind")).chain(one("listKind")).collect()
}

/// The status the controller wants for `crd`, given every definition.
fn status(crd: &Value, all: &[Value]) -> Value {
    let group = &crd["spec"]["group"];
    let wanted = &crd["spec"]["names"];
    let taken: Vec<String> = all
        .iter()
        .filter(|o| o["metadata"]["name"] != crd["metadata"]["name"] && &o["spec"]["group"] == group)
        .flat_map(|o| names_of(&o["status"]["acceptedNames"]))
        .collect();
    let conflict = names_of(wanted).into_iter().find(|n| taken.contains(n));
    let mut status = crd["status"].clone();
    if !status.is_object() {
        status = json!({});
    }
    let accepted = match &conflict {
        None => {
            status["acceptedNames"] = wanted.clone();
            set_condition(&mut status, "NamesAccepted", true, "NoConflicts", "no conflicts found");
            true
        }
        Some(n) => {
            if status.get("acceptedNames").is_none() {
                status["acceptedNames"] = json!({"plural": "", "kind": ""});
            }
            set_condition(&mut status, "NamesAccepted", false, "NameConflict", &format!("\"{n}\" is already in use"));
            false
        }
    };
    if accepted && !condition(crd, "Established") {
        set_condition(&mut status, "Established", true, "InitialNamesAccepted", "the initial names have been accepted");
    } else if !accepted && !condition(crd, "Established") {
        set_condition(&mut status, "Established", false, "NotAccepted", "not all names are accepted");
    }
    let storage = crd["spec"]["versions"].as_array().into_iter().flatten().find(|v| v["storage"] == true).and_then(|v| v["name"].as_str());
    let mut stored: Vec<Value> = status["storedVersions"].as_array().cloned().unwrap_or_default();
    if let Some(v) = storage {
        if !stored.iter().any(|s| s == v) {
            stored.push(json!(v));
        }
    }
    status["storedVersions"] = json!(stored);
    status
}

async fn write_status(client: &Client, name: &str, status: Value) -> ApiResult<()> {
    let req = ResourceRequest { subresource: Some("status".into()), ..request(definitions(), None, name, Verb::Update) };
    client.update(&req, FieldValidation::Ignore, |old| {
        let mut new = old.clone();
        new["status"] = status.clone();
        Ok(new)
    })
    .await
}

/// Deletes the definition's custom resources; once none is left, lets the definition go.
async fn clean_up(client: &Client, crd: &Value) -> ApiResult<()> {
    let name = crd["metadata"]["name"].as_str().unwrap_or_default();
    let finalizers = crd["metadata"]["finalizers"].as_array().cloned().unwrap_or_default();
    if !finalizers.iter().any(|f| f == CLEANUP_FINALIZER) {
        return Ok(());
    }
    let group = crd["spec"]["group"].as_str().unwrap_or_default();
    let plural = crd["spec"]["names"]["plural"].as_str().unwrap_or_default();
    // Still served while it terminates (for lists and deletes); never served, it has none.
    let served = registry::served().find(|r| r.group == group && r.resource == plural);
    let mut remaining = 0;
    if let Some(info) = served {
        let list = || async { client.list(&request(info, None, "", Verb::List)).await.map(|l| l["items"].as_array().cloned().unwrap_or_default()) };
        for obj in list().await? {
            let meta = &obj["metadata"];
            if meta.get("deletionTimestamp").is_some() {
                continue;
            }
            let req = request(info, meta["namespace"].as_str(), meta["name"].as_str().unwrap_or_default(), Verb::Delete);
            match client.delete(&req, &Default::default()).await {
                Ok(()) | Err(ApiError::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        remaining = list().await?.len();
    }
    let mut status = crd["status"].clone();
    let message = if remaining == 0 { "CustomResource deletion is complete".to_string() } else { format!("CustomResource deletion is in progress: {remaining} remaining") };
    set_condition(&mut status, "Terminating", true, if remaining == 0 { "InstanceDeletionCompleted" } else { "InstanceDeletionInProgress" }, &message);
    if status != crd["status"] {
        write_status(client, name, status).await?;
    }
    if remaining > 0 {
        return Ok(());
    }
    let req = request(definitions(), None, name, Verb::Update);
    client.update(&req, FieldValidation::Ignore, |old| {
        let mut new = old.clone();
        let kept: Vec<Value> = new["metadata"]["finalizers"].as_array().cloned().unwrap_or_default().into_iter().filter(|f| f != CLEANUP_FINALIZER).collect();
        new["metadata"]["finalizers"] = json!(kept);
        Ok(new)
    })
    .await
}
