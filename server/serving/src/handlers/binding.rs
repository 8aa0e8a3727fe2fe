//! Binding a pod to a node, as a scheduler does: `POST pods/{name}/binding` or `POST bindings`
//! with a Binding whose target is the node. The pod gets `spec.nodeName` (once: a bound pod is a
//! 409), the Binding's annotations and labels, and a `PodScheduled` condition; the answer is a
//! success `Status`.

use http::StatusCode;
use serde_json::{json, Value};

use machinery::prepare::FieldValidation;
use super::reply::Reply;
use super::write::{self, Update};
use crate::context::Ctx;
use machinery::error::{ApiError, ApiResult, Cause};
use machinery::registry;
use access::request::{ResourceRequest, Verb};

pub async fn create(ctx: &Ctx, req: &ResourceRequest, binding: Value, dry_run: bool) -> ApiResult<Reply> {
    let pod = match req.subresource.as_deref() {
        Some(_) => req.name().to_string(),
        None => binding["metadata"]["name"].as_str().unwrap_or_default().to_string(),
    };
    let target = &binding["target"];
    let node = target["name"].as_str().unwrap_or_default().to_string();
    let invalid = |field: &str, message: &str| ApiError::Invalid {
        group: String::new(),
        kind: "Binding".into(),
        name: pod.clone(),
        causes: vec![Cause::new("FieldValueRequired", field, message)],
    };
    if pod.is_empty() {
        return Err(invalid("metadata.name", "Required value: name or generateName is required"));
    }
    if node.is_empty() {
        return Err(invalid("target.name", "Required value"));
    }
    if !matches!(target["kind"].as_str(), None | Some("") | Some("Node")) {
        return Err(ApiError::Invalid {
            group: String::new(),
            kind: "Binding".into(),
            name: pod,
            causes: vec![Cause::new("FieldValueNotSupported", "target.kind", "Unsupported value: must be empty or 'Node'")],
        });
    }
    let pods = registry::lookup("", "v1", "pods").ok_or_else(|| ApiError::internal("pods are not served"))?;
    let pod_req = ResourceRequest {
        info: pods,
        namespace: req.namespace.clone(),
        name: Some(pod.clone()),
        subresource: Some("binding".into()),
        verb: Verb::Update,
        user: req.user.clone(),
    };
    let (annotations, labels) = (binding["metadata"]["annotations"].clone(), binding["metadata"]["labels"].clone());
    let opts = Update { precondition: None, validation: FieldValidation::Ignore, duplicates: Vec::new(), dry_run, manager: None };
    write::update(ctx, &pod_req, opts, &mut Vec::new(), |old| {
        let conflict = |message: String| ApiError::Conflict { group: String::new(), resource: "pods".into(), name: pod.clone(), message };
        if old["metadata"].get("deletionTimestamp").is_some() {
            return Err(conflict(format!("Operation cannot be fulfilled on pods/binding \"{pod}\": pod {pod} is being deleted, cannot be assigned to a host")));
        }
        if let Some(bound) = old["spec"]["nodeName"].as_str().filter(|n| !n.is_empty()) {
            return Err(conflict(format!("Operation cannot be fulfilled on pods/binding \"{pod}\": pod {pod} is already assigned to node \"{bound}\"")));
        }
        let mut new = old.clone();
        new["spec"]["nodeName"] = json!(node);
        for (field, extra) in [("annotations", &annotations), ("labels", &labels)] {
            for (k, v) in extra.as_object().into_iter().flatten() {
                new["metadata"][field][k] = v.clone();
            }
        }
        let mut conditions: Vec<Value> = old["status"]["conditions"].as_array().cloned().unwrap_or_default();
        conditions.retain(|c| c["type"] != "PodScheduled");
        conditions.push(json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": machinery::meta::now()}));
        new["status"]["conditions"] = json!(conditions);
        Ok(new)
    })
    .await?;
    Ok(Reply::Document {
        code: StatusCode::CREATED,
        value: json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
    })
}
