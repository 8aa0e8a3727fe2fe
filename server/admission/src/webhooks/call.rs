//! One call to an admission webhook: the `AdmissionReview` v1 sent, and the answer read back.

use std::time::Duration;

use base64::Engine as _;
use serde_json::{json, Value};

use crate::{Operation, Request};
use machinery::webhook::Endpoint;

/// What a webhook answered.
pub struct Answer {
    pub allowed: bool,
    pub status: Value,
    /// A JSON patch to apply (mutating webhooks).
    pub patch: Option<Vec<u8>>,
    pub warnings: Vec<String>,
    /// `auditAnnotations`, for the request's audit event.
    pub audit_annotations: Vec<(String, String)>,
}

/// The `request` of an AdmissionReview for a write (also what match conditions see).
pub fn admission_request(r: &Request<'_>, object: Option<&Value>, uid: &str) -> Value {
    let info = r.req.info;
    let kind = json!({"group": info.group, "version": info.version, "kind": info.kind});
    let resource = json!({"group": info.group, "version": info.version, "resource": info.resource});
    let user = &r.req.user;
    let name = crate::matching::name_of(r);
    let options_kind = match r.operation {
        Operation::Create => "CreateOptions",
        Operation::Update => "UpdateOptions",
        Operation::Delete => "DeleteOptions",
    };
    let mut request = json!({
        "uid": uid,
        "kind": kind, "resource": resource, "requestKind": kind, "requestResource": resource,
        "name": name, "namespace": r.req.namespace.clone().unwrap_or_default(),
        "operation": r.operation.as_str(),
        "userInfo": {"username": user.name, "uid": user.uid, "groups": user.groups, "extra": user.extra},
        "object": object.cloned().unwrap_or(Value::Null),
        "oldObject": r.old.cloned().unwrap_or(Value::Null),
        "dryRun": r.dry_run,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": options_kind},
    });
    if let Some(sub) = &r.req.subresource {
        request["subResource"] = json!(sub);
    }
    request
}

/// Sends the review and reads the answer, within `timeout`.
pub async fn call(endpoint: &Endpoint, request: Value, timeout: Duration) -> Result<Answer, String> {
    let uid = request["uid"].as_str().unwrap_or_default().to_string();
    let review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request});
    let body = serde_json::to_vec(&review).map_err(|e| e.to_string())?;
    let url = endpoint.url();
    let (status, answer) = endpoint.post_json(body, timeout).await.map_err(|e| format!("Post \"{url}\": {e}"))?;
    if !status.is_success() {
        return Err(format!("Post \"{url}\": the webhook answered {}", status.as_u16()));
    }
    let review: Value = serde_json::from_slice(&answer).map_err(|e| format!("the webhook's answer is not an AdmissionReview: {e}"))?;
    let response = &review["response"];
    if response.is_null() {
        return Err("webhook response was absent".into());
    }
    if response["uid"].as_str() != Some(uid.as_str()) {
        return Err(format!("expected response.uid=\"{uid}\", got \"{}\"", response["uid"].as_str().unwrap_or_default()));
    }
    let patch = match (response["patch"].as_str(), response["patchType"].as_str()) {
        (Some(p), Some("JSONPatch")) => Some(base64::engine::general_purpose::STANDARD.decode(p).map_err(|e| format!("the webhook's patch: {e}"))?),
        (Some(_), other) => return Err(format!("unsupported patch type {:?}", other.unwrap_or_default())),
        (None, _) => None,
    };
    Ok(Answer {
        allowed: response["allowed"].as_bool().unwrap_or(false),
        status: response["status"].clone(),
        patch,
        warnings: response["warnings"].as_array().into_iter().flatten().filter_map(Value::as_str).map(String::from).collect(),
        audit_annotations: response["auditAnnotations"]
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
            .filter(|(k, _)| !k.is_empty())
            .collect(),
    })
}
