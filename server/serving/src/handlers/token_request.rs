//! `POST serviceaccounts/{name}/token`: a TokenRequest (`authentication.k8s.io/v1`) answered
//! with a signed token for the account, for the requested audiences (this server's when none),
//! living `expirationSeconds` (an hour by default, capped by
//! `--service-account-max-token-expiration`), optionally bound to a Pod, Secret or Node that must
//! exist with the given uid, as `kubectl create token` asks.

use http::StatusCode;
use serde_json::{json, Value};

use super::reply::Reply;
use super::write::parse;
use access::serviceaccount::claims::{Bound, Ref};
use crate::context::Ctx;
use machinery::error::{ApiError, ApiResult, Cause};
use machinery::registry;
use access::request::ResourceRequest;

const GROUP: &str = "authentication.k8s.io";
const DEFAULT_EXPIRATION: i64 = 3600;
const MIN_EXPIRATION: i64 = 600;
const MAX_EXPIRATION: i64 = 1 << 32;
/// What kubelets ask for, to be given [`EXTENDED_EXPIRATION`] with a warning at this age.
const KUBELET_EXPIRATION: i64 = 3607;
const EXTENDED_EXPIRATION: i64 = 365 * 24 * 3600;

/// Reads `resource` `name` (in `namespace`) from this replica.
fn get(ctx: &Ctx, resource: &str, namespace: Option<&str>, name: &str) -> ApiResult<Option<Value>> {
    let info = registry::lookup("", "v1", resource).ok_or_else(|| ApiError::internal(format!("{resource} are not served")))?;
    ctx.store.cache().get(&info.key(namespace, name), None)?.map(|o| parse(&o)).transpose()
}

fn not_found(resource: &str, name: &str) -> ApiError {
    ApiError::NotFound { group: String::new(), resource: resource.into(), name: name.into() }
}

/// The bound object must be the one the client means: same uid when it gives one.
fn check_uid(obj: &Value, reference: &Value, kind: &str) -> ApiResult<Ref> {
    let uid = obj["metadata"]["uid"].as_str().unwrap_or_default().to_string();
    let name = obj["metadata"]["name"].as_str().unwrap_or_default().to_string();
    if let Some(want) = reference["uid"].as_str().filter(|u| !u.is_empty()) {
        if want != uid {
            return Err(ApiError::Conflict {
                group: String::new(),
                resource: kind.into(),
                name: name.clone(),
                message: format!(
                    "Operation cannot be fulfilled on {kind} \"{name}\": the UID in the bound object reference ({want}) does not match the UID in record. The object might have been deleted and then recreated"
                ),
            });
        }
    }
    Ok(Ref { name, uid })
}

pub async fn create(ctx: &Ctx, req: &ResourceRequest, body: Value) -> ApiResult<Reply> {
    let namespace = req.namespace.clone().unwrap_or_default();
    let name = req.name().to_string();
    let spec = &body["spec"];
    let requested = spec["expirationSeconds"].as_i64().unwrap_or(DEFAULT_EXPIRATION);
    // Static validation's errors name no object, as Kubernetes' do.
    let invalid = |detail: &str| ApiError::Invalid {
        group: GROUP.into(),
        kind: "TokenRequest".into(),
        name: String::new(),
        causes: vec![Cause::new("FieldValueInvalid", "spec.expirationSeconds", format!("Invalid value: {requested}: {detail}"))],
    };
    if requested < MIN_EXPIRATION {
        return Err(invalid("may not specify a duration less than 10 minutes"));
    }
    if requested > MAX_EXPIRATION {
        return Err(invalid("may not specify a duration larger than 2^32 seconds"));
    }
    let ns = Some(namespace.as_str());
    let account = get(ctx, "serviceaccounts", ns, &name)?.ok_or_else(|| not_found("serviceaccounts", &name))?;
    let tokens = &ctx.tokens;
    let mut bound = Bound {
        issuer: tokens.issuer().to_string(),
        audiences: spec["audiences"].as_array().into_iter().flatten().filter_map(Value::as_str).map(String::from).collect(),
        namespace: namespace.clone(),
        account: Ref { name: name.clone(), uid: account["metadata"]["uid"].as_str().unwrap_or_default().to_string() },
        now: chrono::Utc::now().timestamp(),
        expiration_seconds: requested,
        jti: uuid::Uuid::new_v4().to_string(),
        ..Default::default()
    };
    let kube_audiences = bound.audiences.is_empty() || bound.audiences.iter().all(|a| tokens.api_audiences.contains(a));
    if bound.audiences.is_empty() {
        bound.audiences = tokens.api_audiences.clone();
    }
    let reference = &spec["boundObjectRef"];
    if let Some(kind) = reference["kind"].as_str().filter(|k| !k.is_empty()) {
        let api_version = reference["apiVersion"].as_str().unwrap_or("v1");
        let object = reference["name"].as_str().unwrap_or_default();
        match (api_version, kind) {
            ("v1" | "", "Pod") => {
                let pod = get(ctx, "pods", ns, object)?.ok_or_else(|| not_found("pods", object))?;
                if pod["spec"]["serviceAccountName"].as_str().unwrap_or("default") != name {
                    return Err(ApiError::bad_request(format!("cannot bind token for serviceaccount \"{name}\" to pod running with different serviceaccount name.")));
                }
                bound.pod = Some(check_uid(&pod, reference, "pods")?);
                if let Some(node) = pod["spec"]["nodeName"].as_str().filter(|n| !n.is_empty()) {
                    let uid = get(ctx, "nodes", None, node)?.and_then(|n| n["metadata"]["uid"].as_str().map(String::from)).unwrap_or_default();
                    bound.node = Some(Ref { name: node.to_string(), uid });
                }
            }
            ("v1" | "", "Secret") => {
                let secret = get(ctx, "secrets", ns, object)?.ok_or_else(|| not_found("secrets", object))?;
                bound.secret = Some(check_uid(&secret, reference, "secrets")?);
            }
            ("v1" | "", "Node") => {
                let node = get(ctx, "nodes", None, object)?.ok_or_else(|| not_found("nodes", object))?;
                bound.node = Some(check_uid(&node, reference, "nodes")?);
            }
            _ => {
                // Go's `GroupVersionKind` as text: `GROUP/VERSION, Kind=KIND`.
                let given = reference["apiVersion"].as_str().unwrap_or_default();
                let (group, version) = given.rsplit_once('/').unwrap_or(("", given));
                return Err(ApiError::bad_request(format!("cannot bind token to object of type {group}/{version}, Kind={kind}")));
            }
        }
    }
    if let Some(max) = tokens.max_expiration {
        bound.expiration_seconds = bound.expiration_seconds.min(max);
    }
    if tokens.extend_expiration && bound.pod.is_some() && requested == KUBELET_EXPIRATION && kube_audiences {
        bound.warn_after = Some(bound.now + KUBELET_EXPIRATION);
        bound.expiration_seconds = EXTENDED_EXPIRATION;
    }
    let token = tokens.sign(&bound.claims()).map_err(ApiError::internal)?;
    let expires = chrono::DateTime::from_timestamp(bound.now + bound.expiration_seconds, 0).unwrap_or_default();
    let granted = requested.min(tokens.max_expiration.unwrap_or(i64::MAX));
    // The answer names the account (its uid too) and the time, as Kubernetes' token REST does;
    // a bound object reference is written even when absent.
    let out_spec = json!({"audiences": bound.audiences, "expirationSeconds": granted, "boundObjectRef": reference});
    let reply = json!({
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"name": name, "namespace": namespace, "uid": account["metadata"]["uid"], "creationTimestamp": machinery::meta::now()},
        "spec": out_spec,
        "status": {"token": token, "expirationTimestamp": expires.format("%Y-%m-%dT%H:%M:%SZ").to_string()},
    });
    Ok(Reply::Document { code: StatusCode::CREATED, value: reply })
}
