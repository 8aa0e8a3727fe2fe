//! Built-in controllers a standalone server needs: the post-start hook that creates the default
//! namespaces, the `kubernetes` Service and the default RBAC policy (on every node; creating what
//! exists is a no-op), and, on the Raft leader only, namespace deletion (empty the namespace, then
//! drop its `kubernetes` finalizer so it goes away) and ClusterRole aggregation.

use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::{json, Value};

use crate::context::Ctx;
use crate::error::{ApiError, ApiResult};
use crate::handlers::{self, FieldValidation};
use crate::registry::{self, RESOURCES};
use crate::request::{ResourceRequest, Verb};

/// Namespaces every cluster has from the start.
pub const DEFAULT_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public", "kube-node-lease"];

fn namespaces() -> &'static registry::ResourceInfo {
    registry::lookup("", "v1", "namespaces").expect("namespaces are served")
}

pub(crate) fn request(info: &'static registry::ResourceInfo, namespace: Option<&str>, name: &str, verb: Verb) -> ResourceRequest {
    ResourceRequest {
        info,
        namespace: namespace.map(str::to_string),
        name: (!name.is_empty()).then(|| name.to_string()),
        subresource: None,
        verb,
        user: crate::auth::UserInfo::loopback(),
    }
}

/// Creates what every cluster has from the start and does not have yet (the default namespaces,
/// the `kubernetes` Service in `default` with the first IP of the service range, and its
/// Endpoints), then marks the hook done.
pub async fn bootstrap(ctx: &Ctx) -> ApiResult<()> {
    let mut objects: Vec<(&str, Option<&str>, Value)> = DEFAULT_NAMESPACES
        .iter()
        .map(|name| ("namespaces", None, json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})))
        .collect();
    let url: http::Uri = ctx.settings.address.parse().map_err(ApiError::internal)?;
    let (host, port) = (url.host().unwrap_or("127.0.0.1"), url.port_u16().unwrap_or(443));
    let labels = json!({"component": "apiserver", "provider": "kubernetes"});
    let ip = ctx.ips.first().to_string();
    objects.push(("services", Some("default"), json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "kubernetes", "labels": labels},
        "spec": {"clusterIP": ip, "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}]},
    })));
    objects.push(("endpoints", Some("default"), json!({
        "apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": "kubernetes", "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
        "subsets": [{"addresses": [{"ip": host}], "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}],
    })));
    for (resource, namespace, obj) in objects {
        let info = registry::lookup("", "v1", resource).expect("core resources are served");
        let req = request(info, namespace, "", Verb::Create);
        match handlers::create_object(ctx, &req, obj).await {
            Ok(()) | Err(ApiError::AlreadyExists { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    crate::auth::rbac::policy::reconcile(ctx).await?;
    ctx.settings.bootstrapped.store(true, Ordering::Relaxed);
    Ok(())
}

/// Runs the post-start hook (retrying until it succeeds), and the namespace and aggregation
/// controllers while this node leads.
pub async fn run(ctx: Ctx) {
    tokio::join!(crate::auth::rbac::aggregation::run(ctx.clone()), bootstrap_then_namespaces(ctx));
}

/// The post-start hook, then the namespace controller.
async fn bootstrap_then_namespaces(ctx: Ctx) {
    while let Err(e) = bootstrap(&ctx).await {
        tracing::warn!(error = %e, "bootstrap of default namespaces failed; retrying");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tick.tick().await;
        if !ctx.store.is_leader() {
            continue;
        }
        if let Err(e) = finalize_namespaces(&ctx).await {
            tracing::warn!(error = %e, "namespace controller pass failed");
        }
    }
}

/// One pass over terminating namespaces.
async fn finalize_namespaces(ctx: &Ctx) -> ApiResult<()> {
    let info = namespaces();
    let cache = ctx.store.cache();
    let all = cache.list(&info.key_prefix(), None, None, None, &|_| true)?;
    for obj in all.items {
        let ns: Value = handlers::parse(&obj)?;
        if ns["metadata"].get("deletionTimestamp").is_none() {
            continue;
        }
        let name = ns["metadata"]["name"].as_str().unwrap_or_default().to_string();
        let mut remaining = 0;
        for res in RESOURCES.iter().filter(|r| r.namespaced) {
            let items = cache.list(&res.list_prefix(Some(&name)), None, None, None, &|_| true)?;
            for item in items.items {
                remaining += 1;
                let v: Value = handlers::parse(&item)?;
                let item_name = v["metadata"]["name"].as_str().unwrap_or_default();
                if v["metadata"].get("deletionTimestamp").is_some() {
                    continue;
                }
                match handlers::delete_object(ctx, &request(res, Some(&name), item_name, Verb::Delete)).await {
                    Ok(()) | Err(ApiError::NotFound { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        if remaining == 0 {
            let req = request(info, None, &name, Verb::Update);
            let finalize = |old: &Value| -> ApiResult<Value> {
                let mut new = old.clone();
                new["spec"]["finalizers"] = json!([]);
                Ok(new)
            };
            match handlers::update_object(ctx, &req, FieldValidation::Ignore, finalize).await {
                Ok(()) | Err(ApiError::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}
