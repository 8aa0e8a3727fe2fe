//! The loopback client: how the server's own controllers and post-start hooks write, as
//! kube-apiserver's loopback client and kube-controller-manager's clients do. Every call is an
//! HTTP request sent through the same router, filter chain and handlers as a remote client's
//! (only TLS is skipped): authenticated as the client's identity ([`Loopback`]), authorized,
//! admitted, audited and counted by flow control like any request. A controller never calls a
//! handler function.

use axum::body::Body;
use axum::response::Response;
use axum::Router;
use http::{header, Method, Request};
use serde_json::{json, Value};
use tower::ServiceExt;

use access::authn::loopback::Loopback;
use access::request::{ResourceRequest, Verb};
use machinery::delete_options::DeleteOptions;
use machinery::error::{ApiError, ApiResult};
use machinery::patch::PatchKind;
use machinery::prepare::FieldValidation;
use machinery::registry::ResourceInfo;

mod typed;
mod watch;
pub use typed::Api;

/// The field manager the server's own writes are recorded under.
const MANAGER: &str = "kube-apiserver";

/// How many times an update is tried again after a conflict with another writer.
const UPDATE_RETRIES: usize = 16;

/// The media type of the bodies the client sends and reads.
const JSON: &str = "application/json";

/// A client acting as one identity; cheap to clone.
#[derive(Clone)]
pub struct Client {
    router: Router,
    identity: Loopback,
}

impl Client {
    pub fn new(router: Router, identity: Loopback) -> Client {
        Client { router, identity }
    }

    /// The same server, as another identity.
    pub fn as_identity(&self, identity: Loopback) -> Client {
        Client { router: self.router.clone(), identity }
    }

    /// The object `req` names, read consistently.
    pub async fn get(&self, req: &ResourceRequest) -> ApiResult<Value> {
        self.send(Method::GET, &path(req, true), None, JSON).await
    }

    /// Creates an object in `req`'s collection (unknown fields refused).
    pub async fn create(&self, req: &ResourceRequest, obj: Value) -> ApiResult<()> {
        let query = format!("?fieldManager={MANAGER}&fieldValidation=Strict");
        self.send(Method::POST, &format!("{}{query}", path(req, false)), Some(obj), JSON).await.map(|_| ())
    }

    /// Replaces the object `req` names with what `mutate` makes of its current state, reading
    /// it again and retrying when another writer got there first (client-go's
    /// `RetryOnConflict`). Nothing is sent when `mutate` changes nothing.
    pub async fn update(
        &self,
        req: &ResourceRequest,
        validation: FieldValidation,
        mut mutate: impl FnMut(&Value) -> ApiResult<Value>,
    ) -> ApiResult<()> {
        let target = format!("{}?fieldManager={MANAGER}&fieldValidation={}", path(req, true), validation.as_str());
        for _ in 0..UPDATE_RETRIES {
            let current = self.get(req).await?;
            let new = mutate(&current)?;
            if new == current {
                return Ok(());
            }
            match self.send(Method::PUT, &target, Some(new), JSON).await {
                Err(ApiError::Conflict { .. }) => continue,
                other => return other.map(|_| ()),
            }
        }
        Err(ApiError::Conflict {
            group: req.info.group.to_string(),
            resource: req.info.resource.to_string(),
            name: req.name().to_string(),
            message: format!("{} {:?} kept changing: gave up after {UPDATE_RETRIES} tries", req.info.resource, req.name()),
        })
    }

    /// Replaces the object `req` names with `obj` as given, its `resourceVersion` the
    /// precondition, without reading it first (client-go's Update of an informer's copy, for a
    /// controller that may not read the object directly); a conflict is the caller's to handle.
    pub async fn replace(&self, req: &ResourceRequest, obj: Value) -> ApiResult<Value> {
        self.send(Method::PUT, &format!("{}?fieldManager={MANAGER}", path(req, true)), Some(obj), JSON).await
    }

    /// Every object in `req`'s collection (in its namespace, or in all), read consistently: the
    /// `List` as the server answers it.
    pub async fn list(&self, req: &ResourceRequest) -> ApiResult<Value> {
        self.send(Method::GET, &path(req, false), None, JSON).await
    }

    /// Patches the object `req` names (a JSON, merge or strategic merge patch) and returns it
    /// as stored.
    pub async fn patch(&self, req: &ResourceRequest, kind: PatchKind, patch: Value) -> ApiResult<Value> {
        let target = format!("{}?fieldManager={MANAGER}", path(req, true));
        self.send(Method::PATCH, &target, Some(patch), kind.media_type()).await
    }

    /// Server-side apply of `obj` to the object `req` names as field manager `manager`, taking
    /// over conflicting fields when `force` is set; returns the object as stored.
    pub async fn apply(&self, req: &ResourceRequest, manager: &str, force: bool, obj: Value) -> ApiResult<Value> {
        let target = format!("{}?fieldManager={manager}&force={force}", path(req, true));
        self.send(Method::PATCH, &target, Some(obj), PatchKind::Apply.media_type()).await
    }

    /// Deletes the object `req` names.
    pub async fn delete(&self, req: &ResourceRequest, opts: &DeleteOptions) -> ApiResult<()> {
        let mut body = json!({"kind": "DeleteOptions", "apiVersion": "v1"});
        if let Some(p) = opts.propagation {
            body["propagationPolicy"] = json!(p.as_str());
        }
        if let Some(uid) = &opts.uid {
            body["preconditions"]["uid"] = json!(uid);
        }
        if let Some(rv) = opts.resource_version {
            body["preconditions"]["resourceVersion"] = json!(rv.to_string());
        }
        if let Some(grace) = opts.grace_period {
            body["gracePeriodSeconds"] = json!(grace);
        }
        self.send(Method::DELETE, &path(req, true), Some(body), JSON).await.map(|_| ())
    }

    /// One request through the router; a refusal comes back as the error its `Status` names.
    async fn send(&self, method: Method, uri: &str, body: Option<Value>, content_type: &str) -> ApiResult<Value> {
        let response = self.respond(method, uri, body, content_type).await?;
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.map_err(ApiError::internal)?;
        Ok(serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    }

    /// One request through the router, answered with a success; a refusal comes back as the
    /// error its `Status` names.
    async fn respond(&self, method: Method, uri: &str, body: Option<Value>, content_type: &str) -> ApiResult<Response> {
        let body = match &body {
            Some(v) => Body::from(serde_json::to_vec(v).map_err(ApiError::internal)?),
            None => Body::empty(),
        };
        let mut request = Request::builder()
            .method(method)
            .uri(uri)
            .header(header::ACCEPT, "application/json")
            .header(header::CONTENT_TYPE, content_type)
            .header(header::USER_AGENT, "kube-apiserver/loopback")
            .body(body)
            .map_err(ApiError::internal)?;
        request.extensions_mut().insert(self.identity.clone());
        let response = self.router.clone().oneshot(request).await.unwrap_or_else(|e| match e {});
        let code = response.status();
        if code.is_success() {
            return Ok(response);
        }
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.map_err(ApiError::internal)?;
        let value: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Err(ApiError::from_status(code.as_u16(), &value))
    }
}

/// The URL path of `req`'s object (`named`), or of its collection.
fn path(req: &ResourceRequest, named: bool) -> String {
    let info = req.info;
    let mut path = info.api_root();
    if let Some(ns) = &req.namespace {
        path.push_str(&format!("/namespaces/{ns}"));
    }
    path.push('/');
    path.push_str(info.resource);
    if named {
        path.push('/');
        path.push_str(req.name());
        if let Some(sub) = &req.subresource {
            path.push('/');
            path.push_str(sub);
        }
    }
    path
}

/// An object (or, without a name, a collection) as a client of the server names it, and as the
/// watch cache keys it; the client sends it as its own identity.
pub fn request(info: &'static ResourceInfo, namespace: Option<&str>, name: &str, verb: Verb) -> ResourceRequest {
    ResourceRequest {
        info,
        namespace: namespace.map(str::to_string),
        name: (!name.is_empty()).then(|| name.to_string()),
        subresource: None,
        verb,
        user: access::UserInfo::loopback(),
    }
}
