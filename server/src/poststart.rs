//! Post-start hooks: what every cluster has from the start, made sure of once the server serves.
//! Each is named as kube-apiserver names the hook that does the same work, and reported by the
//! health checks (`poststarthook/NAME`) once done. Every node runs them; creating what exists is
//! a no-op.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{ConfigMap, EndpointAddress, EndpointPort, EndpointSubset, Endpoints, Namespace, Service, ServicePort, ServiceSpec};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort as SlicePort, EndpointSlice};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::time::Duration;

use serde_json::{json, Value};

use access::rbac::policy::{objects, reconcile_binding, reconcile_role, Reconciled, GROUP};
use access::request::{ResourceRequest, Verb};
use machinery::error::{ApiError, ApiResult};
use machinery::prepare::FieldValidation;
use machinery::registry;

use crate::context::Context;
use serving::flowcontrol::bootstrap as apf;
use serving::hooks::{HOOKS, RBAC_HOOK};
use crate::loopback::{request, Client};

/// Namespaces every cluster has from the start.
pub const DEFAULT_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public", "kube-node-lease"];

/// Runs every hook until it succeeds, in order.
pub async fn run(ctx: &Context, client: &Client) {
    for &hook in HOOKS {
        loop {
            let result = match hook {
                "start-system-namespaces-controller" => system_namespaces(client).await,
                "bootstrap-controller" => kubernetes_service(ctx, client).await,
                "start-kubernetes-service-cidr-controller" => service_cidr(ctx, client).await,
                "scheduling/bootstrap-system-priority-classes" => priority_classes(client).await,
                RBAC_HOOK => bootstrap_roles(ctx, client).await,
                "priority-and-fairness-config-producer" => flowcontrol_config(client).await,
                "start-cluster-authentication-info-controller" => authentication_info(ctx, client).await,
                "start-legacy-token-tracking-controller" => legacy_token_tracking(client).await,
                "kube-apiserver-autoregistration" => api_services(client).await,
                _ => Ok(()),
            };
            match result {
                Ok(()) => break,
                Err(e) => {
                    tracing::warn!(hook, error = %e, "post-start hook failed; retrying");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            }
        }
        ctx.settings.hooks.mark(hook);
    }
}

/// Creates `obj` unless an object of that name exists.
pub async fn ensure(client: &Client, group: &str, version: &str, resource: &str, namespace: Option<&str>, obj: Value) -> ApiResult<()> {
    let info = registry::lookup(group, version, resource).ok_or_else(|| ApiError::internal(format!("{resource} is not served")))?;
    match client.create(&request(info, namespace, "", Verb::Create), obj).await {
        Ok(()) | Err(ApiError::AlreadyExists { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

async fn system_namespaces(client: &Client) -> ApiResult<()> {
    for name in DEFAULT_NAMESPACES.iter().filter(|n| **n != "default") {
        ensure_namespace(client, name).await?;
    }
    Ok(())
}

async fn ensure_namespace(client: &Client, name: &str) -> ApiResult<()> {
    client.api::<Namespace>(None)?.ensure(&Namespace { metadata: named(name), ..Default::default() }).await
}

/// Object metadata with just a name.
fn named(name: &str) -> ObjectMeta {
    ObjectMeta { name: Some(name.to_string()), ..Default::default() }
}

/// The `default` namespace, and the `kubernetes` Service there with the first IP of the service
/// range, Endpoints naming this server (its advertised address) and, for an address an
/// EndpointSlice may hold (a routable one, as Kubernetes validates them), the EndpointSlice
/// kube-apiserver's endpoints adapter makes from them.
async fn kubernetes_service(ctx: &Context, client: &Client) -> ApiResult<()> {
    ensure_namespace(client, "default").await?;
    let url: http::Uri = ctx.settings.address.parse().map_err(ApiError::internal)?;
    let port = url.port_u16().unwrap_or(443);
    let host = match ctx.settings.advertise_address {
        Some(ip) => ip.to_string(),
        None => url.host().unwrap_or("127.0.0.1").trim_matches(['[', ']']).to_string(),
    };
    let labels = |pairs: &[(&str, &str)]| Some(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
    let service = Service {
        metadata: ObjectMeta { labels: labels(&[("component", "apiserver"), ("provider", "kubernetes")]), ..named("kubernetes") },
        spec: Some(ServiceSpec {
            cluster_ip: Some(ctx.ips.first().to_string()),
            ports: Some(vec![ServicePort {
                name: Some("https".into()),
                port: 443,
                protocol: Some("TCP".into()),
                target_port: Some(IntOrString::Int(port.into())),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    };
    client.api::<Service>(Some("default"))?.ensure(&service).await?;
    let endpoints = Endpoints {
        metadata: ObjectMeta { labels: labels(&[("endpointslice.kubernetes.io/skip-mirror", "true")]), ..named("kubernetes") },
        subsets: Some(vec![EndpointSubset {
            addresses: Some(vec![EndpointAddress { ip: host.clone(), ..Default::default() }]),
            ports: Some(vec![EndpointPort { name: Some("https".into()), port: port.into(), protocol: Some("TCP".into()), ..Default::default() }]),
            ..Default::default()
        }]),
    };
    client.api::<Endpoints>(Some("default"))?.ensure(&endpoints).await?;
    let Ok(ip) = host.parse::<std::net::IpAddr>() else { return Ok(()) };
    let mut unroutable = Vec::new();
    machinery::registry::kinds::fields::routable_ip(ip, &host, "", &mut unroutable);
    if !unroutable.is_empty() {
        return Ok(());
    }
    let slice = EndpointSlice {
        metadata: ObjectMeta { labels: labels(&[("kubernetes.io/service-name", "kubernetes")]), ..named("kubernetes") },
        address_type: if ip.is_ipv6() { "IPv6" } else { "IPv4" }.into(),
        endpoints: Some(vec![Endpoint { addresses: vec![host], conditions: Some(EndpointConditions { ready: Some(true), ..Default::default() }), ..Default::default() }]),
        ports: Some(vec![SlicePort { name: Some("https".into()), port: Some(port.into()), protocol: Some("TCP".into()), ..Default::default() }]),
    };
    client.api::<EndpointSlice>(Some("default"))?.ensure(&slice).await
}

/// The `kubernetes` ServiceCIDR made from `--service-cluster-ip-range`, ready.
async fn service_cidr(ctx: &Context, client: &Client) -> ApiResult<()> {
    use serving::ipalloc::DEFAULT_CIDR;
    ensure(client, "networking.k8s.io", "v1", "servicecidrs", None, ctx.ips.default_cidr()).await?;
    let info = registry::lookup("networking.k8s.io", "v1", "servicecidrs").ok_or_else(|| ApiError::internal("servicecidrs are not served"))?;
    let ready = |old: &Value| -> ApiResult<Value> {
        let mut new = old.clone();
        if old["status"]["conditions"][0]["type"] != "Ready" {
            new["status"] = json!({"conditions": [{
                "type": "Ready", "status": "True", "reason": "",
                "message": "Kubernetes default Service CIDR is ready",
                "lastTransitionTime": machinery::meta::now(),
            }]});
        }
        Ok(new)
    };
    let req = ResourceRequest { subresource: Some("status".into()), ..request(info, None, DEFAULT_CIDR, Verb::Update) };
    client.update(&req, FieldValidation::Ignore, ready).await
}

/// The two PriorityClasses Kubernetes reserves for system components.
async fn priority_classes(client: &Client) -> ApiResult<()> {
    for (name, value, description) in [
        ("system-node-critical", 2_000_001_000, "Used for system critical pods that must not be moved from their current node."),
        ("system-cluster-critical", 2_000_000_000, "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."),
    ] {
        let class = PriorityClass { metadata: named(name), value: Some(value), description: Some(description.into()), ..Default::default() };
        client.api::<PriorityClass>(None)?.ensure(&class).await?;
    }
    Ok(())
}

/// `kube-system/extension-apiserver-authentication`: the CA client certificates are checked
/// against and the authenticating proxy's settings, for servers that delegate authentication
/// to this one.
async fn authentication_info(ctx: &Context, client: &Client) -> ApiResult<()> {
    let mut data = BTreeMap::from([("client-ca-file".to_string(), ctx.settings.client_ca_pem.clone())]);
    if let (Some(proxy), Some(ca)) = (ctx.authn.proxy(), &ctx.settings.proxy_ca_pem) {
        data.extend(proxy.published(ca));
    }
    let cm = ConfigMap { metadata: named("extension-apiserver-authentication"), data: Some(data), ..Default::default() };
    client.api::<ConfigMap>(Some("kube-system"))?.ensure(&cm).await
}

/// `kube-system/kube-apiserver-legacy-service-account-token-tracking`: the day since which the
/// cluster's servers record the use of legacy (Secret-based) service-account tokens, which
/// kube-controller-manager's legacy token cleaner reads; written once, as kube-apiserver does.
async fn legacy_token_tracking(client: &Client) -> ApiResult<()> {
    let since = chrono::Utc::now().format("%Y-%m-%d").to_string();
    let cm = ConfigMap { metadata: named("kube-apiserver-legacy-service-account-token-tracking"), data: Some(BTreeMap::from([("since".to_string(), since)])), ..Default::default() };
    client.api::<ConfigMap>(Some("kube-system"))?.ensure(&cm).await
}

/// Group and version priorities of the built-in APIServices, as kube-apiserver registers them.
const PRIORITIES: &[(&str, i64, i64)] = &[
    ("", 18000, 1),
    ("apps", 17800, 15),
    ("events.k8s.io", 17750, 15),
    ("authentication.k8s.io", 17700, 15),
    ("authorization.k8s.io", 17600, 15),
    ("autoscaling", 17500, 30),
    ("batch", 17400, 15),
    ("certificates.k8s.io", 17300, 15),
    ("networking.k8s.io", 17200, 15),
    ("policy", 17100, 15),
    ("rbac.authorization.k8s.io", 17000, 15),
    ("storage.k8s.io", 16800, 15),
    ("apiextensions.k8s.io", 16700, 15),
    ("admissionregistration.k8s.io", 16700, 15),
    ("scheduling.k8s.io", 16600, 15),
    ("coordination.k8s.io", 16500, 15),
    ("node.k8s.io", 16300, 15),
    ("discovery.k8s.io", 16200, 15),
    ("resource.k8s.io", 16200, 21),
    ("flowcontrol.apiserver.k8s.io", 16100, 21),
];

/// An APIService for every group/version this server serves itself (`v1.`, `v1.apps`, ...),
/// available because local.
async fn api_services(client: &Client) -> ApiResult<()> {
    let versions: BTreeSet<(&str, &str)> = registry::built_in().map(|r| (r.group, r.version)).collect();
    for (group, version) in versions {
        let (group_priority, version_priority) =
            PRIORITIES.iter().find(|(g, _, _)| *g == group).map(|(_, g, v)| (*g, *v)).unwrap_or((1000, 15));
        let name = format!("{version}.{group}");
        let service = json!({
            "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": name, "labels": {"kube-aggregator.kubernetes.io/automanaged": "onstart"}},
            "spec": {"group": group, "version": version, "groupPriorityMinimum": group_priority, "versionPriority": version_priority},
        });
        ensure(client, "apiregistration.k8s.io", "v1", "apiservices", None, service).await?;
        let info = registry::lookup("apiregistration.k8s.io", "v1", "apiservices").ok_or_else(|| ApiError::internal("apiservices are not served"))?;
        let req = ResourceRequest { subresource: Some("status".into()), ..request(info, None, &name, Verb::Update) };
        let available = |old: &Value| -> ApiResult<Value> {
            let mut new = old.clone();
            if old["status"]["conditions"][0]["type"] != "Available" {
                new["status"] = json!({"conditions": [{
                    "type": "Available", "status": "True", "reason": "Local",
                    "message": "Local APIServices are always available",
                    "lastTransitionTime": machinery::meta::now(),
                }]});
            }
            Ok(new)
        };
        client.update(&req, FieldValidation::Ignore, available).await?;
    }
    Ok(())
}

/// The default RBAC policy: creates every default object that is missing and reconciles the rest.
async fn bootstrap_roles(ctx: &Context, client: &Client) -> ApiResult<()> {
    for expected in objects() {
        let kind = expected["kind"].as_str().unwrap_or_default();
        let info = registry::lookup_kind(GROUP, "v1", kind).ok_or_else(|| ApiError::internal(format!("default policy has an unknown kind {kind}")))?;
        let namespace = expected["metadata"]["namespace"].as_str();
        let name = expected["metadata"]["name"].as_str().unwrap_or_default();
        let req = request(info, namespace, name, Verb::Update);
        let existing = match ctx.informers.get_parsed(&info.key_prefix(), &req.key()).await {
            Some(found) => found,
            None => match client.create(&request(info, namespace, "", Verb::Create), expected.clone()).await {
                Ok(()) => continue,
                Err(ApiError::AlreadyExists { .. }) => match client.get(&req).await {
                    Ok(found) => found,
                    Err(ApiError::NotFound { .. }) => continue,
                    Err(e) => return Err(e),
                },
                Err(e) => return Err(e),
            },
        };
        let binding = kind.ends_with("Binding");
        let outcome = if binding { reconcile_binding(&existing, expected) } else { reconcile_role(&existing, expected) };
        match outcome {
            Reconciled::Unchanged => {}
            Reconciled::Update(_) => {
                let step = |current: &Value| -> ApiResult<Value> {
                    let r = if binding { reconcile_binding(current, expected) } else { reconcile_role(current, expected) };
                    Ok(match r {
                        Reconciled::Update(v) => v,
                        _ => current.clone(),
                    })
                };
                client.update(&req, FieldValidation::Ignore, step).await?;
            }
            Reconciled::Recreate => {
                tracing::info!(kind, name, "recreating a default binding whose role reference changed");
                match client.delete(&request(info, namespace, name, Verb::Delete), &Default::default()).await {
                    Ok(()) | Err(ApiError::NotFound { .. }) => {}
                    Err(e) => return Err(e),
                }
                match client.create(&request(info, namespace, "", Verb::Create), expected.clone()).await {
                    Ok(()) | Err(ApiError::AlreadyExists { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
        }
    }
    Ok(())
}

/// kube-apiserver's FlowSchemas and priority levels: creates the missing ones and restores the
/// spec of those that ask for it.
async fn flowcontrol_config(client: &Client) -> ApiResult<()> {
    for expected in apf::objects() {
        let kind = expected["kind"].as_str().unwrap_or_default();
        let info = registry::lookup_kind(apf::GROUP, "v1", kind).ok_or_else(|| ApiError::internal(format!("bootstrap configuration has an unknown kind {kind}")))?;
        let name = expected["metadata"]["name"].as_str().unwrap_or_default();
        ensure(client, apf::GROUP, "v1", info.resource, None, expected.clone()).await?;
        let restore = |current: &Value| -> ApiResult<Value> {
            let mut new = current.clone();
            if current["metadata"]["annotations"][apf::AUTOUPDATE] == "true" && current["spec"] != expected["spec"] {
                new["spec"] = expected["spec"].clone();
            }
            Ok(new)
        };
        match client.update(&request(info, None, name, Verb::Update), FieldValidation::Ignore, restore).await {
            Ok(()) | Err(ApiError::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
