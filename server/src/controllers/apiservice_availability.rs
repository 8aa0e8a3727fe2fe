//! The APIService availability controllers (kube-aggregator's local and remote ones), on the
//! Raft leader: an APIService this server serves itself is `Available` (`Local`); one that
//! names a Service is `Available` once the Service exists, listens on the port, has an endpoint
//! and answers its group/version's discovery over TLS (`Passed`), and otherwise says which of
//! these failed, in kube-aggregator's reasons and words. Checked on every APIService change and
//! every 30 seconds (Services and endpoints change without telling the controller).

use std::time::Duration;

use serde_json::{json, Value};

use serving::aggregator::{endpoint, set_user, PREFIX};
use access::UserInfo;
use crate::context::Context;
use crate::loopback::request;
use machinery::error::{ApiError, ApiResult};
use crate::loopback::Client;
use machinery::prepare::FieldValidation;
use machinery::registry;
use access::request::{ResourceRequest, Verb};

/// How often every APIService is checked again.
const RECHECK: Duration = Duration::from_secs(30);
/// How long the discovery check waits for an answer.
const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(5);

/// The condition an APIService should have: status, reason, message.
type Condition = (&'static str, &'static str, String);

/// What the checks find for a remote APIService.
async fn check(ctx: &Context, apiservice: &Value) -> Condition {
    let spec = &apiservice["spec"];
    let (namespace, name) = (spec["service"]["namespace"].as_str().unwrap_or_default(), spec["service"]["name"].as_str().unwrap_or_default());
    let port = spec["service"]["port"].as_i64().unwrap_or(443);
    let Some(service) = ctx.informers.get_parsed("/registry/services/", &format!("/registry/services/{namespace}/{name}")).await else {
        return ("False", "ServiceNotFound", format!("service/{name} in \"{namespace}\" is not present"));
    };
    let Some(service_port) = service["spec"]["ports"].as_array().into_iter().flatten().find(|p| p["port"].as_i64() == Some(port)) else {
        return ("False", "ServicePortError", format!("service/{name} in \"{namespace}\" is not listening on port {port}"));
    };
    let Some(endpoints) = ctx.informers.get_parsed("/registry/endpoints/", &format!("/registry/endpoints/{namespace}/{name}")).await else {
        return ("False", "EndpointsNotFound", format!("cannot find endpoints for service/{name} in \"{namespace}\""));
    };
    let port_name = service_port["name"].as_str().unwrap_or_default();
    let addressed = endpoints["subsets"].as_array().into_iter().flatten().any(|s| {
        s["addresses"].as_array().is_some_and(|a| !a.is_empty())
            && s["ports"].as_array().into_iter().flatten().any(|p| p["name"].as_str().unwrap_or_default() == port_name)
    });
    if !addressed {
        return ("False", "MissingEndpoints", format!("endpoints for service/{name} in \"{namespace}\" have no addresses with port name \"{port_name}\""));
    }
    match discovery_check(ctx, apiservice).await {
        Ok(()) => ("True", "Passed", "all checks passed".into()),
        Err(e) => ("False", "FailedDiscoveryCheck", e),
    }
}

/// GETs the group/version's discovery as `system:kube-aggregator` in `system:masters`; a 2xx
/// answer within the timeout passes (redirects are not followed).
async fn discovery_check(ctx: &Context, apiservice: &Value) -> Result<(), String> {
    let target = endpoint(&ctx.store, &ctx.settings, apiservice)?;
    let (group, version) = (apiservice["spec"]["group"].as_str().unwrap_or_default(), apiservice["spec"]["version"].as_str().unwrap_or_default());
    let path = format!("/apis/{group}/{version}");
    let url = format!("{}{}", target.url().trim_end_matches('/'), path);
    let mut req = http::Request::get(&path).header(http::header::ACCEPT, "application/json");
    let prober = UserInfo { name: "system:kube-aggregator".into(), groups: vec!["system:masters".into()], ..Default::default() };
    set_user(req.headers_mut().expect("a fresh builder has headers"), &prober)?;
    let req = req.body(http_body_util::Full::new(bytes::Bytes::new())).map_err(|e| e.to_string())?;
    match tokio::time::timeout(DISCOVERY_TIMEOUT, target.send(req)).await {
        Err(_) => Err(format!("timed out waiting for {url}")),
        Ok(Err(e)) => Err(format!("failing or missing response from {url}: {e}")),
        Ok(Ok(answer)) if answer.status().is_success() => Ok(()),
        Ok(Ok(answer)) => Err(format!("failing or missing response from {url}: bad status from {url}: {}", answer.status().as_u16())),
    }
}

/// Writes the condition if it differs; the transition time changes only with the status.
async fn write(client: &Client, name: &str, (status, reason, message): Condition) -> ApiResult<()> {
    let info = registry::lookup("apiregistration.k8s.io", "v1", "apiservices").expect("apiservices are served");
    let req = ResourceRequest { subresource: Some("status".into()), ..request(info, None, name, Verb::Update) };
    let written = client.update(&req, FieldValidation::Ignore, |current| {
        let mut next = current.clone();
        let old = current["status"]["conditions"].as_array().into_iter().flatten().find(|c| c["type"] == "Available").cloned();
        let since = match &old {
            Some(c) if c["status"] == status => c["lastTransitionTime"].clone(),
            _ => json!(machinery::meta::now()),
        };
        let mut conditions: Vec<Value> = current["status"]["conditions"].as_array().into_iter().flatten().filter(|c| c["type"] != "Available").cloned().collect();
        conditions.push(json!({"type": "Available", "status": status, "reason": reason, "message": message, "lastTransitionTime": since}));
        next["status"] = json!({"conditions": conditions});
        Ok(next)
    })
    .await;
    match written {
        Ok(()) | Err(ApiError::NotFound { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

async fn sync(ctx: &Context, client: &Client) -> ApiResult<()> {
    let listed = ctx.informers.informer(PREFIX).await.list();
    let apiservices: Vec<Value> = listed.iter().filter_map(|item| machinery::stored::parse(item).ok()).collect();
    // The extension servers are checked at once, so one slow server delays the others by its
    // timeout at most.
    let wanted = futures::future::join_all(apiservices.iter().map(|apiservice| async move {
        if apiservice["spec"]["service"].is_object() {
            check(ctx, apiservice).await
        } else {
            ("True", "Local", "Local APIServices are always available".to_string())
        }
    }))
    .await;
    for (apiservice, want) in apiservices.iter().zip(wanted) {
        let has = apiservice["status"]["conditions"].as_array().into_iter().flatten().find(|c| c["type"] == "Available");
        if has.is_some_and(|c| c["status"] == want.0 && c["reason"] == want.1 && c["message"] == want.2.as_str()) {
            continue;
        }
        let name = apiservice["metadata"]["name"].as_str().unwrap_or_default();
        tracing::info!(apiservice = name, status = want.0, reason = want.1, message = %want.2, "APIService availability changed");
        // One APIService that cannot be written does not hold up the others.
        if let Err(e) = write(client, name, want).await {
            tracing::warn!(apiservice = name, error = %e, "APIService status not written");
        }
    }
    Ok(())
}

/// The controller, run on the leader ([`crate::controllers::leading`]).
pub struct AvailabilityController {
    pub client: Client,
}

#[async_trait::async_trait]
impl crate::controllers::leading::LeaderController for AvailabilityController {
    fn name(&self) -> &'static str {
        "apiservice-availability"
    }

    fn watches(&self) -> Vec<String> {
        vec![PREFIX.into()]
    }

    fn recheck(&self) -> Option<Duration> {
        Some(RECHECK)
    }

    async fn sync(&self, ctx: &Context) -> ApiResult<()> {
        sync(ctx, &self.client).await
    }
}
