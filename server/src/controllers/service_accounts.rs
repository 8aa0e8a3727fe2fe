//! The service-account controllers kube-controller-manager runs, on the Raft leader only:
//! every active namespace has a `default` ServiceAccount and the `kube-root-ca.crt` ConfigMap
//! (the CA a pod's projected token volume trusts), both recreated if deleted; a Secret of type
//! `kubernetes.io/service-account-token` naming an account gets a legacy token, the CA and the
//! namespace; it is deleted when its account is gone. Driven by the watch cache: one full pass
//! when leadership begins, then only the objects events name. `--controllers` may leave out
//! `serviceaccount`, `root-ca-cert-publisher` or `serviceaccount-token`, as kube-controller-manager's
//! flag does.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use raft_store::EventType;
use serde_json::{json, Value};

use access::serviceaccount::claims::{self, Ref};
use access::serviceaccount::{ACCOUNT_NAME_ANNOTATION, ACCOUNT_UID_ANNOTATION, DEFAULT_ACCOUNT, ROOT_CA_CONFIGMAP, TOKEN_SECRET_TYPE};
use crate::context::Context;
use crate::loopback::request;
use machinery::error::{ApiError, ApiResult};
use crate::loopback::Client;
use machinery::prepare::FieldValidation;
use machinery::registry::{self, ResourceInfo};
use access::request::Verb;

/// The identities the controllers act as, as kube-controller-manager's do: `service-account-controller`
/// creates the default accounts, `root-ca-cert-publisher` the `kube-root-ca.crt` ConfigMaps, and
/// the token controller, which kube-controller-manager runs with its own credentials, the server.
pub struct Clients {
    pub accounts: Client,
    pub root_ca: Client,
    pub tokens: Client,
}

fn info(resource: &str) -> &'static ResourceInfo {
    registry::lookup("", "v1", resource).expect("core resources are served")
}

/// The informers this controller follows (and reads).
const RESOURCES: [&str; 4] = ["namespaces", "serviceaccounts", "configmaps", "secrets"];

async fn get(ctx: &Context, resource: &str, namespace: Option<&str>, name: &str) -> ApiResult<Option<Value>> {
    let info = info(resource);
    ctx.informers.informer(&info.key_prefix()).await.get(&info.key(namespace, name)).map(|o| machinery::stored::parse(&o)).transpose()
}

/// Ignores the refusals a controller racing with users meets: the object is already there,
/// already gone, or its namespace is going away.
fn settled(result: ApiResult<()>) -> ApiResult<()> {
    match result {
        Err(ApiError::AlreadyExists { .. } | ApiError::NotFound { .. } | ApiError::Conflict { .. } | ApiError::Forbidden { .. }) => Ok(()),
        other => other,
    }
}

/// Gives an active namespace its default account and root CA.
async fn ensure_namespace(ctx: &Context, clients: &Clients, ns: &str) -> ApiResult<()> {
    let Some(namespace) = get(ctx, "namespaces", None, ns).await? else { return Ok(()) };
    if namespace["metadata"]["deletionTimestamp"].is_string() {
        return Ok(());
    }
    let enabled = |name| ctx.settings.controller_enabled(name);
    if enabled("serviceaccount") && get(ctx, "serviceaccounts", Some(ns), DEFAULT_ACCOUNT).await?.is_none() {
        let account = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": DEFAULT_ACCOUNT, "namespace": ns}});
        settled(clients.accounts.create(&request(info("serviceaccounts"), Some(ns), "", Verb::Create), account).await)?;
    }
    if !enabled("root-ca-cert-publisher") {
        return Ok(());
    }
    let ca = &ctx.settings.root_ca_pem;
    match get(ctx, "configmaps", Some(ns), ROOT_CA_CONFIGMAP).await? {
        None => {
            let cm = json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": ROOT_CA_CONFIGMAP, "namespace": ns, "annotations": {"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."}},
                "data": {"ca.crt": ca},
            });
            settled(clients.root_ca.create(&request(info("configmaps"), Some(ns), "", Verb::Create), cm).await)?;
        }
        Some(cm) if cm["data"]["ca.crt"] != ca.as_str() => {
            let req = request(info("configmaps"), Some(ns), ROOT_CA_CONFIGMAP, Verb::Update);
            settled(
                clients.root_ca.update(&req, FieldValidation::Ignore, |current| {
                    let mut next = current.clone();
                    next["data"]["ca.crt"] = json!(ca);
                    Ok(next)
                })
                .await,
            )?;
        }
        Some(_) => {}
    }
    Ok(())
}

/// Fills in a token Secret, or deletes it when the account it names is gone.
async fn sync_secret(ctx: &Context, clients: &Clients, ns: &str, name: &str) -> ApiResult<()> {
    if !ctx.settings.controller_enabled("serviceaccount-token") {
        return Ok(());
    }
    let Some(secret) = get(ctx, "secrets", Some(ns), name).await? else { return Ok(()) };
    if secret["type"] != TOKEN_SECRET_TYPE || secret["metadata"]["deletionTimestamp"].is_string() {
        return Ok(());
    }
    let annotations = &secret["metadata"]["annotations"];
    let account_name = annotations[ACCOUNT_NAME_ANNOTATION].as_str().unwrap_or_default();
    let account = get(ctx, "serviceaccounts", Some(ns), account_name).await?;
    let account_uid = account.as_ref().and_then(|a| a["metadata"]["uid"].as_str()).unwrap_or_default().to_string();
    let stale = annotations[ACCOUNT_UID_ANNOTATION].as_str().is_some_and(|uid| uid != account_uid);
    if account.is_none() || stale {
        return settled(clients.tokens.delete(&request(info("secrets"), Some(ns), name, Verb::Delete), &Default::default()).await);
    }
    let ca = STANDARD.encode(&ctx.settings.root_ca_pem);
    if secret["data"]["token"].is_string() && secret["data"]["ca.crt"] == ca.as_str() {
        return Ok(());
    }
    let token = ctx.tokens.sign(&claims::legacy(ns, name, &Ref { name: account_name.to_string(), uid: account_uid.clone() })).map_err(ApiError::internal)?;
    let req = request(info("secrets"), Some(ns), name, Verb::Update);
    settled(
        clients.tokens.update(&req, FieldValidation::Ignore, |current| {
            let mut next = current.clone();
            next["metadata"]["annotations"][ACCOUNT_UID_ANNOTATION] = json!(account_uid);
            if !next["data"].is_object() {
                next["data"] = json!({});
            }
            if !next["data"]["token"].is_string() {
                next["data"]["token"] = json!(STANDARD.encode(&token));
            }
            next["data"]["ca.crt"] = json!(ca);
            next["data"]["namespace"] = json!(STANDARD.encode(ns));
            Ok(next)
        })
        .await,
    )
}

/// The token Secrets of an account that was deleted.
async fn account_deleted(ctx: &Context, clients: &Clients, ns: &str, name: &str) -> ApiResult<()> {
    if name == DEFAULT_ACCOUNT {
        ensure_namespace(ctx, clients, ns).await?;
    }
    let secrets = info("secrets");
    let listed = ctx.informers.informer(&secrets.key_prefix()).await.list_under(&secrets.list_prefix(Some(ns)));
    for item in listed {
        let secret = machinery::stored::parse(&item)?;
        if secret["type"] == TOKEN_SECRET_TYPE && secret["metadata"]["annotations"][ACCOUNT_NAME_ANNOTATION] == name {
            sync_secret(ctx, clients, ns, secret["metadata"]["name"].as_str().unwrap_or_default()).await?;
        }
    }
    Ok(())
}

/// Every namespace and token Secret, once.
async fn full_pass(ctx: &Context, clients: &Clients) -> ApiResult<()> {
    for item in ctx.informers.informer(&info("namespaces").key_prefix()).await.list() {
        let ns = machinery::stored::parse(&item)?;
        ensure_namespace(ctx, clients, ns["metadata"]["name"].as_str().unwrap_or_default()).await?;
    }
    for item in ctx.informers.informer(&info("secrets").key_prefix()).await.list() {
        let secret = machinery::stored::parse(&item)?;
        if secret["type"] == TOKEN_SECRET_TYPE {
            let meta = &secret["metadata"];
            sync_secret(ctx, clients, meta["namespace"].as_str().unwrap_or_default(), meta["name"].as_str().unwrap_or_default()).await?;
        }
    }
    Ok(())
}

/// `(namespace, name)` of a namespaced key under `prefix`, or `(name, "")` for namespaces.
fn split<'k>(key: &'k str, prefix: &str) -> Option<(&'k str, &'k str)> {
    let rest = key.strip_prefix(prefix)?;
    Some(rest.split_once('/').unwrap_or((rest, "")))
}

/// Handles one change.
async fn on_event(ctx: &Context, clients: &Clients, key: &str, kind: EventType) -> ApiResult<()> {
    if let Some((ns, _)) = split(key, &info("namespaces").key_prefix()) {
        return ensure_namespace(ctx, clients, ns).await;
    }
    if let Some((ns, name)) = split(key, &info("serviceaccounts").key_prefix()) {
        return match kind {
            EventType::Deleted => account_deleted(ctx, clients, ns, name).await,
            _ => Ok(()),
        };
    }
    if let Some((ns, name)) = split(key, &info("configmaps").key_prefix()) {
        return if name == ROOT_CA_CONFIGMAP { ensure_namespace(ctx, clients, ns).await } else { Ok(()) };
    }
    if let Some((ns, name)) = split(key, &info("secrets").key_prefix()) {
        if kind != EventType::Deleted {
            return sync_secret(ctx, clients, ns, name).await;
        }
    }
    Ok(())
}

/// The controller, run on the leader ([`crate::controllers::leading`]).
pub struct ServiceAccountController {
    pub clients: Clients,
}

#[async_trait::async_trait]
impl crate::controllers::leading::LeaderController for ServiceAccountController {
    fn name(&self) -> &'static str {
        "serviceaccount"
    }

    fn watches(&self) -> Vec<String> {
        RESOURCES.iter().map(|r| info(r).key_prefix()).collect()
    }

    async fn sync(&self, ctx: &Context) -> ApiResult<()> {
        full_pass(ctx, &self.clients).await
    }

    async fn changed(&self, ctx: &Context, event: &raft_store::Event) -> ApiResult<bool> {
        on_event(ctx, &self.clients, &event.key, event.kind).await.map(|()| false)
    }
}
