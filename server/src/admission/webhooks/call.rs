//! One call to an admission webhook: where it is (`clientConfig.url`, or a Service resolved to
//! an address through its Endpoints), the `AdmissionReview` v1 sent, and the answer read back.

use std::time::Duration;

use base64::Engine as _;
use raft_store::Store;
use serde_json::{json, Value};

use crate::admission::{Operation, Request};
use crate::webhook::Endpoint;

/// What a webhook answered.
pub struct Answer {
    pub allowed: bool,
    pub status: Value,
    /// A JSON patch to apply (mutating webhooks).
    pub patch: Option<Vec<u8>>,
    pub warnings: Vec<String>,
}

fn get(store: &Store, key: &str) -> Result<Option<Value>, String> {
    match store.cache().get(key, None).map_err(|e| e.to_string())? {
        Some(o) => serde_json::from_slice(&o.data).map(Some).map_err(|e| e.to_string()),
        None => Ok(None),
    }
}

/// The endpoint a webhook's `clientConfig` names.
pub fn endpoint(store: &Store, client_config: &Value) -> Result<Endpoint, String> {
    let ca = match client_config["caBundle"].as_str().filter(|c| !c.is_empty()) {
        Some(b64) => {
            let pem = base64::engine::general_purpose::STANDARD.decode(b64).map_err(|e| format!("caBundle: {e}"))?;
            Some(String::from_utf8(pem).map_err(|_| "caBundle is not PEM".to_string())?)
        }
        None => None,
    };
    if let Some(url) = client_config["url"].as_str() {
        return Endpoint::new(url, ca.as_deref(), None, None, None);
    }
    let service = &client_config["service"];
    let (namespace, name) = (service["namespace"].as_str().unwrap_or_default(), service["name"].as_str().unwrap_or_default());
    let port = service["port"].as_i64().unwrap_or(443);
    let path = service["path"].as_str().unwrap_or("/");
    let svc = get(store, &format!("/registry/services/{namespace}/{name}"))?.ok_or_else(|| format!("service \"{namespace}/{name}\" not found"))?;
    let svc_port = svc["spec"]["ports"].as_array().into_iter().flatten().find(|p| p["port"].as_i64() == Some(port)).cloned().unwrap_or(json!({"port": port}));
    let endpoints = get(store, &format!("/registry/endpoints/{namespace}/{name}"))?.ok_or_else(|| format!("service \"{namespace}/{name}\" has no endpoints"))?;
    let subset = endpoints["subsets"].as_array().into_iter().flatten().find(|s| s["addresses"].as_array().is_some_and(|a| !a.is_empty()));
    let subset = subset.ok_or_else(|| format!("service \"{namespace}/{name}\" has no ready endpoints"))?;
    let ip = subset["addresses"][0]["ip"].as_str().unwrap_or_default();
    let target = match &svc_port["targetPort"] {
        Value::Number(n) => n.as_i64().unwrap_or(port),
        Value::String(named) => subset["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["name"].as_str() == Some(named))
            .and_then(|p| p["port"].as_i64())
            .ok_or_else(|| format!("service \"{namespace}/{name}\" has no port named {named:?}"))?,
        _ => port,
    };
    let host = if ip.contains(':') { format!("[{ip}]") } else { ip.to_string() };
    Endpoint::new(&format!("https://{host}:{target}{path}"), ca.as_deref(), None, None, Some(&format!("{name}.{namespace}.svc")))
}

/// The `request` of an AdmissionReview for a write (also what match conditions see).
pub fn admission_request(r: &Request<'_>, object: Option<&Value>, uid: &str) -> Value {
    let info = r.req.info;
    let kind = json!({"group": info.group, "version": info.version, "kind": info.kind});
    let resource = json!({"group": info.group, "version": info.version, "resource": info.resource});
    let user = &r.req.user;
    let name = crate::admission::matching::name_of(r);
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
    })
}
