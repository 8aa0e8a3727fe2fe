//! Request classification, as Kubernetes' RequestInfo: which resource, namespace, name,
//! subresource and verb a path and method address.

use std::sync::Arc;

use http::Method;

use crate::UserInfo;
use machinery::error::{ApiError, ApiResult};
use machinery::registry::{self, ResourceInfo};

/// The verb of a resource request, as RBAC and audit name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Get,
    List,
    Watch,
    Create,
    Update,
    Patch,
    Delete,
    DeleteCollection,
}

impl Verb {
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
        }
    }
}

/// A request addressed to a served resource.
#[derive(Debug, Clone)]
pub struct ResourceRequest {
    pub info: &'static ResourceInfo,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub subresource: Option<String>,
    pub verb: Verb,
    /// Who asks (after impersonation): admission and the review APIs look at it.
    pub user: Arc<UserInfo>,
}

impl ResourceRequest {
    /// Storage key of the named object.
    pub fn key(&self) -> String {
        self.info.key(self.namespace.as_deref(), self.name.as_deref().unwrap_or_default())
    }

    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or_default()
    }

    /// A 404 for the named object, in Kubernetes' words.
    pub fn not_found(&self) -> ApiError {
        ApiError::NotFound {
            group: self.info.group.to_string(),
            resource: self.info.resource.to_string(),
            name: self.name().to_string(),
        }
    }
}

/// Subresources of a namespace, which share the `namespaces/{name}/...` path shape with
/// namespaced collections.
const NAMESPACE_SUBRESOURCES: &[&str] = &["status", "finalize"];

/// Classifies a resource path (`/api/v1/...` or `/apis/{g}/{v}/...`). `Ok(None)` means the path
/// is not a resource path at all (discovery and the like are routed elsewhere).
/// The subresources that connect to a pod or a node (through its kubelet) instead of reading or
/// writing an object.
pub const CONNECT_SUBRESOURCES: &[&str] = &["log", "exec", "attach", "portforward", "proxy"];

impl ResourceRequest {
    /// Whether the request connects to a pod or node (see [`CONNECT_SUBRESOURCES`]).
    pub fn connects(&self) -> bool {
        self.subresource.as_deref().is_some_and(|s| CONNECT_SUBRESOURCES.contains(&s))
    }
}

pub fn classify(method: &Method, path: &str, watch_param: bool, user: Arc<UserInfo>) -> ApiResult<Option<ResourceRequest>> {
    let parts: Vec<&str> = path.trim_matches('/').split('/').filter(|p| !p.is_empty()).collect();
    let (group, version, mut rest) = match parts.as_slice() {
        ["api", v, rest @ ..] if !rest.is_empty() => ("", *v, rest),
        ["apis", g, v, rest @ ..] if !rest.is_empty() => (*g, *v, rest),
        _ => return Ok(None),
    };
    // The legacy `/watch/` path prefix.
    let mut watch = watch_param;
    if rest.first() == Some(&"watch") {
        watch = true;
        rest = &rest[1..];
    }
    let mut namespace = None;
    if rest.first() == Some(&"namespaces") && rest.len() > 1 {
        namespace = Some(rest[1].to_string());
        if rest.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&rest[2]) {
            rest = &rest[2..];
        }
    }
    let (resource, name, sub) = match rest {
        [r] => (*r, None, None),
        [r, n] => (*r, Some(*n), None),
        [r, n, s] => (*r, Some(*n), Some(*s)),
        // A proxy request goes on to a path of the pod, node or service.
        [r, n, "proxy", ..] => (*r, Some(*n), Some("proxy")),
        _ => return Err(ApiError::NoRoute),
    };
    let info = registry::lookup(group, version, resource).ok_or(ApiError::NoRoute)?;
    if info.resource == "namespaces" {
        // `namespaces/{name}` names the namespace itself.
        namespace = None;
    } else if !info.namespaced && namespace.is_some() {
        return Err(ApiError::NoRoute);
    }
    if let Some(s) = sub {
        if !info.has_subresource(s) {
            return Err(ApiError::NoRoute);
        }
    }
    let connect = sub.is_some_and(|s| CONNECT_SUBRESOURCES.contains(&s));
    let verb = match (method, name.is_some()) {
        // Connecting to a pod or node: read with a GET (or HEAD), written with the other methods.
        (&Method::GET | &Method::HEAD, true) if connect => Verb::Get,
        (&Method::POST, true) if connect => Verb::Create,
        (&Method::DELETE, true) if connect => Verb::Delete,
        (&Method::GET, true) if watch => Verb::Watch,
        (&Method::GET, true) => Verb::Get,
        (&Method::GET, false) if watch => Verb::Watch,
        (&Method::GET, false) => Verb::List,
        (&Method::POST, false) if sub.is_none() => Verb::Create,
        // Subresources that are created: a pod's binding and eviction, an account's token.
        (&Method::POST, true) if matches!(sub, Some("binding") | Some("eviction") | Some("token")) => Verb::Create,
        (&Method::PUT, true) => Verb::Update,
        (&Method::PATCH, true) => Verb::Patch,
        (&Method::DELETE, true) if sub.is_none() => Verb::Delete,
        (&Method::DELETE, false) => Verb::DeleteCollection,
        _ => return Err(ApiError::MethodNotAllowed),
    };
    if sub.is_none() && !info.verbs.contains(&verb.as_str()) {
        return Err(ApiError::MethodNotAllowed);
    }
    Ok(Some(ResourceRequest {
        info,
        namespace,
        name: name.map(str::to_string),
        subresource: sub.map(str::to_string),
        verb,
        user,
    }))
}
