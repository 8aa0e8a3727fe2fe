//! The HTTP application: the filter chain (panic recovery, body limit, authentication,
//! impersonation, audit, flow control, authorization) in front of one dispatcher that routes
//! discovery, health, OpenAPI and resource paths.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::Router;
use http::{header, HeaderName, HeaderValue, Method, StatusCode};
use serde_json::{json, Value};

use access::authz::{self, Outcome};
use access::{impersonation, Attributes};
use crate::context::Ctx;
use crate::metrics::{AuthnResult, RequestLabels};
use crate::status_response::StatusResponse;
use crate::traces::RequestTrace;
use tracing::Instrument;
use machinery::error::ApiError;
use machinery::query::Params;
use access::authn::loopback::Loopback;
use access::authn::Credentials;
use access::request;
use access::authn::x509::{ClientIdentity, ProxyIdentity};
use admission::audit_annotations;

use crate::{audit, discovery, handlers, health};
use machinery::{negotiate, openapi};

pub fn router(ctx: Ctx) -> Router {
    // Behind one pointer: the router hands every request its own copy of the state.
    Router::new()
        .fallback(dispatch)
        .with_state(Arc::new(ctx))
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(|_: Box<dyn std::any::Any + Send>| {
            ApiError::Internal("an internal error occurred while handling the request".into()).into_response()
        }))
}

/// Reads the body, then runs the chain: authentication, impersonation, authorization, and
/// only then the handler.
async fn dispatch(State(ctx): State<Arc<Ctx>>, req: Request) -> Response {
    // A request's latency counts from here, as kube-apiserver's does from its first filter.
    let received = Instant::now();
    let (parts, body) = req.into_parts();
    // What Go's server refuses never reaches kube-apiserver (this server's own loopback client
    // is not a network client).
    if parts.extensions.get::<Loopback>().is_none() {
        if let Some(refused) = crate::framing::refusal(&parts) {
            return refused;
        }
    }
    let audit_id = audit::stage::audit_id(&parts.headers);
    // The body is read before anything can refuse the request, so that an early answer never
    // leaves a client still sending (HTTP/2 clients see a reset stream otherwise).
    let body = match read_body(body, ctx.settings.max_body).await {
        Some(b) => b,
        None => return audit::stage::with_id(too_large(&ctx), &audit_id),
    };
    let gzip = crate::compression::accepts_gzip(&parts.headers);
    let resp = match serve(&ctx, parts, body, &audit_id, received).await {
        Ok(resp) | Err(resp) => audit::stage::with_id(resp, &audit_id),
    };
    if gzip {
        crate::compression::maybe_gzip(resp).await
    } else {
        resp
    }
}

/// Authentication, the audit stage (from here on, a request the policy selects is recorded),
/// impersonation, then the rest of the chain.
async fn serve(ctx: &Ctx, mut parts: http::request::Parts, body: bytes::Bytes, audit_id: &str, received: Instant) -> Result<Response, Response> {
    let path = parts.uri.path().to_string();
    let certs = Credentials {
        client: parts.extensions.get::<ClientIdentity>(),
        proxy: parts.extensions.get::<ProxyIdentity>(),
        loopback: parts.extensions.get::<Loopback>(),
    };
    let started = Instant::now();
    let authn_from = SystemTime::now();
    let authenticated = ctx.filters.authn.authenticate(&mut parts.headers, &path, certs).await;
    let result = match &authenticated {
        Ok(_) => AuthnResult::Success,
        Err(e) if e.code() == StatusCode::UNAUTHORIZED => AuthnResult::Failure,
        Err(_) => AuthnResult::Error,
    };
    ctx.filters.metrics.authentication.observe(result, started.elapsed(), authenticated.as_ref().ok().map(|u| u.name.as_str()));
    let caller = match authenticated {
        Ok(caller) => caller,
        Err(e) => return Err(audit::stage::failed_authentication(&ctx.filters, audit_id, &parts, e.into_response()).await),
    };
    let trace = ctx.filters.tracer.as_ref().and_then(|tracer| {
        let received = SystemTime::now() - received.elapsed();
        RequestTrace::begin(tracer, &parts, &caller, audit_id, received, (authn_from, SystemTime::now()))
    });
    let resp = chain(ctx, parts, caller, path, body, audit_id, received, trace.as_ref()).await;
    if let Some(trace) = trace {
        trace.end(match &resp {
            Ok(r) | Err(r) => r.status(),
        });
    }
    resp
}

/// After authentication: the audit stage, impersonation, then the rest of the chain.
#[allow(clippy::too_many_arguments)]
async fn chain(
    ctx: &Ctx,
    parts: http::request::Parts,
    caller: access::UserInfo,
    path: String,
    body: bytes::Bytes,
    audit_id: &str,
    received: Instant,
    trace: Option<&RequestTrace>,
) -> Result<Response, Response> {
    let params = Params::parse(parts.uri.query()).map_err(StatusResponse::into_response)?;
    let deadline = request_deadline(ctx, &params).map_err(StatusResponse::into_response)?;
    // The request's attributes, first with the authenticated user (the audit policy sees it, as
    // Kubernetes audits before impersonation), then with the user it acts as.
    let mut attrs = Attributes::of_request(caller, &parts.method, &path, &params);
    let record = match &ctx.filters.audit {
        Some(_) => audit::stage::begin(&ctx.filters, audit_id, &attrs, &parts).await?,
        None => None,
    };
    let user = match impersonation::impersonate(&ctx.filters.auth.chain, std::mem::take(&mut attrs.user), &parts.headers).await {
        Ok(user) => user,
        Err(e) => {
            let resp = e.into_response();
            return Err(match record {
                Some(record) => audit::stage::finish(record, resp, None, false).await,
                None => resp,
            });
        }
    };
    attrs.user = user;
    Ok(match record {
        None => authorized(ctx, parts, path, attrs, params, deadline, body, received, trace).await,
        Some(mut record) => {
            record.impersonated(&attrs.user);
            let request_object = audit::stage::request_object(&mut record, &attrs, &parts.headers, &body);
            let watch = attrs.verb == "watch";
            let resp = record.scope(authorized(ctx, parts, path, attrs, params, deadline, body, received, trace)).await;
            audit::stage::finish(record, resp, request_object, watch).await
        }
    })
}

/// Flow control, authorization, and only then the handler.
#[allow(clippy::too_many_arguments)]
async fn authorized(
    ctx: &Ctx,
    mut parts: http::request::Parts,
    path: String,
    attrs: Attributes,
    params: Params,
    deadline: Duration,
    body: bytes::Bytes,
    received: Instant,
    trace: Option<&RequestTrace>,
) -> Response {
    let stage = |name| trace.map_or_else(tracing::Span::none, |t| t.stage(name));
    let flow = ctx.filters.flowcontrol.classify(&attrs);
    // Held until the handler answers (for a watch: until its stream starts).
    let queued = Instant::now();
    let admitted = ctx.filters.flowcontrol.admit(flow.as_ref(), &attrs, deadline, &ctx.filters.metrics).instrument(stage("priorityandfairness")).await;
    let _seat = match admitted {
        Ok(seat) => seat,
        Err(e) => {
            // Counted, as kube-apiserver counts the requests flow control drops.
            let resp = with_flow(e.into_response(), flow.as_ref());
            let resource = request::classify(&parts.method, &path, params.flag("watch").unwrap_or(false), Arc::new(attrs.user.clone())).ok().flatten();
            let labels = request_labels(&parts.method, resource.as_ref(), &params, &parts.headers);
            ctx.filters.metrics.requests.observe(&labels, resp.status(), received.elapsed(), queued.elapsed(), None);
            return resp;
        }
    };
    let waited = queued.elapsed();
    if let Err(e) = authorize(ctx, &attrs).instrument(stage("authorization")).await {
        return with_flow(e.into_response(), flow.as_ref());
    }
    let watch = match params.flag("watch") {
        Ok(w) => w,
        Err(e) => return e.into_response(),
    };
    // A group/version an extension server serves: handed to it.
    if let Some(apiservice) = crate::aggregator::remote_for(ctx, &path) {
        let forward = Box::pin(crate::aggregator::proxy::forward(ctx, &apiservice, &parts, &attrs.user, body));
        // Bounded until the answer starts (a watch's stream then goes on): the seat is held
        // only until then.
        let resp = within(deadline, forward).await;
        return with_flow(resp, flow.as_ref());
    }
    let user = Arc::new(attrs.user);
    let applied = ctx.store.cache().applied();
    let resource = match request::classify(&parts.method, &path, watch, user.clone()) {
        // A resource this replica does not serve may be one a definition established a moment
        // ago through another replica: look again once caught up with the leader.
        Err(ApiError::NoRoute) if caught_up(ctx, applied).await => request::classify(&parts.method, &path, watch, user.clone()),
        other => other,
    };
    let resource = match resource {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    let labels = request_labels(&parts.method, resource.as_ref(), &params, &parts.headers);
    let metrics = &ctx.filters.metrics.requests;
    let handler = match (trace, &resource) {
        (Some(trace), Some(req)) => {
            trace.classified(&parts.method, req);
            let watch_list = params.flag("sendInitialEvents").unwrap_or(false);
            crate::traces::handler_span(trace, req, &parts, watch_list)
        }
        _ => tracing::Span::none(),
    };
    let (resp, in_webhooks) = admission::webhook_time::measure(async {
        match resource {
            // Handlers run in boxes of their own size (see `handlers::run`): the chain's future
            // stays small, so that no request copies the largest handler's state on its way in.
            Some(req) if req.verb == request::Verb::Watch => {
                let lasting = metrics.long_running(&labels);
                lasting_while_streamed(handlers::serve(ctx, req, params, &parts.headers, body).instrument(handler).await, lasting)
            }
            // A log that follows, an exec session: as long as they last.
            Some(req) if req.connects() => {
                let upgrade = parts.extensions.remove::<hyper::upgrade::OnUpgrade>();
                Box::pin(handlers::connect::serve(ctx, &req, &params, &parts, upgrade, body, metrics.long_running(&labels))).await
            }
            Some(req) => within(deadline, handlers::serve(ctx, req, params, &parts.headers, body).instrument(handler)).await,
            None if parts.method == Method::GET && path == crate::backup::PATH => within(deadline, Box::pin(crate::backup::serve(ctx, &user))).await,
            None => within(deadline, Box::pin(route(ctx, &parts.method, &path, &params, &parts.headers, &body))).await,
        }
    })
    .await;
    let resp = with_flow(resp, flow.as_ref());
    let took = received.elapsed();
    let size = hyper::body::Body::size_hint(resp.body()).exact();
    metrics.observe(&labels, resp.status(), took, waited + in_webhooks, size);
    // A streamed answer (a large list) is counted once it has been sent.
    let resp = match size {
        None if matches!(labels.verb, "GET" | "LIST") => {
            let m = ctx.filters.metrics.clone();
            resp.map(|body| crate::body::counted(body, move |bytes| m.requests.response_size(&labels, bytes)))
        }
        _ => resp,
    };
    tracing::debug!(method = %parts.method, %path, code = resp.status().as_u16(), elapsed_ms = took.as_millis() as u64, user = %user.name, "request");
    resp
}

/// A watch's response, counted as running until its stream ends.
fn lasting_while_streamed(resp: Response, lasting: crate::metrics::LongRunning) -> Response {
    resp.map(|body| crate::body::holding(body, lasting))
}

/// Names the FlowSchema and priority level the request was classified in, as kube-apiserver
/// does in every response.
fn with_flow(mut resp: Response, flow: Option<&crate::flowcontrol::Classification>) -> Response {
    if let Some(c) = flow {
        let headers = resp.headers_mut();
        let [schema, level] = c.uid_headers.clone();
        headers.insert(HeaderName::from_static("x-kubernetes-pf-flowschema-uid"), schema);
        headers.insert(HeaderName::from_static("x-kubernetes-pf-prioritylevel-uid"), level);
    }
    resp
}

/// How long a request that is not long-running may take: `--request-timeout`, or less when
/// the `timeout` parameter (a Go duration) asks for less. A `timeout` that does not parse is 400.
fn request_deadline(ctx: &Ctx, params: &Params) -> Result<Duration, ApiError> {
    let max = ctx.settings.request_timeout;
    let Some(value) = params.value("timeout").filter(|v| !v.is_empty()) else { return Ok(max) };
    // Go accepts negative durations; Kubernetes then keeps the maximum.
    let asked = machinery::go_duration::parse_duration(value.strip_prefix('-').unwrap_or(value))
        .map_err(|e| ApiError::bad_request(format!("invalid timeout specified in the request URL - {e}")))?;
    Ok(if value.starts_with('-') || asked.is_zero() { max } else { asked.min(max) })
}

/// Runs a handler within the request's deadline; past it the answer is Kubernetes' 504 (a write
/// already proposed may still commit, as the message says).
async fn within(deadline: Duration, handler: impl std::future::Future<Output = Response>) -> Response {
    match tokio::time::timeout(deadline, handler).await {
        Ok(resp) => resp,
        Err(_) => ApiError::Timeout("Timeout: request did not complete within requested timeout - context deadline exceeded".into()).into_response(),
    }
}

/// Whether this replica has applied more than `applied` once caught up with the leader's commit.
async fn caught_up(ctx: &Ctx, applied: u64) -> bool {
    matches!(tokio::time::timeout(CATCH_UP, ctx.store.linearizable_rev()).await, Ok(Ok(_))) && ctx.store.cache().applied() != applied
}

/// Longest a refused request waits for this replica to catch up before it is refused.
const CATCH_UP: Duration = Duration::from_secs(2);

/// Asks the authorizer chain. A request it refuses is decided again once this replica has
/// applied everything the leader had committed when it was refused: a binding the client created
/// through another replica a moment ago is then in the index, as it would be on the leader.
pub(crate) async fn authorize(ctx: &Ctx, attrs: &Attributes) -> Result<(), ApiError> {
    let chain = &ctx.filters.auth.chain;
    let started = Instant::now();
    let applied = ctx.store.cache().applied();
    let mut outcome = chain.authorize(attrs).await;
    if !matches!(&outcome, Outcome::Decided(v) if v.allowed()) && caught_up(ctx, applied).await {
        outcome = chain.authorize(attrs).await;
    }
    let result = match &outcome {
        Outcome::Decided(v) if v.allowed() => "allowed",
        Outcome::Decided(_) => "denied",
        Outcome::Failed(_) => "error",
    };
    ctx.filters.metrics.authorization.observe(result, started.elapsed());
    match outcome {
        Outcome::Decided(v) if v.allowed() => {
            audit_annotations::annotate(audit::DECISION, "allow");
            audit_annotations::annotate(audit::REASON, v.reason);
            Ok(())
        }
        Outcome::Decided(v) => {
            audit_annotations::annotate(audit::DECISION, "forbid");
            audit_annotations::annotate(audit::REASON, v.reason.clone());
            Err(authz::forbidden(attrs, &v.reason))
        }
        Outcome::Failed(e) => Err(ApiError::Internal(format!("Internal error occurred: {e}"))),
    }
}

/// How a request is counted, as kube-apiserver counts it: Kubernetes' verbs (`LIST`, `WATCH`,
/// `POST`, `APPLY`, `CONNECT`, ...) for resources, the HTTP method otherwise; the scope; whether
/// it is a dry run.
fn request_labels(method: &Method, resource: Option<&request::ResourceRequest>, params: &Params, headers: &http::HeaderMap) -> RequestLabels {
    let Some(req) = resource else {
        const METHODS: [&str; 7] = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];
        let verb = METHODS.into_iter().find(|m| *m == method.as_str()).unwrap_or("OTHER");
        return RequestLabels { verb, ..Default::default() };
    };
    let applies = || headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|t| t.starts_with("application/apply-patch"));
    // A subresource the kind does not list never reaches a handler; counted without one.
    let subresource = req.subresource.as_deref().and_then(|s| req.info.subresources.iter().copied().find(|known| *known == s)).unwrap_or_default();
    let verb = match req.verb {
        _ if req.connects() => "CONNECT",
        request::Verb::Get => "GET",
        request::Verb::List => "LIST",
        request::Verb::Watch => "WATCH",
        request::Verb::Create => "POST",
        request::Verb::Update => "PUT",
        request::Verb::Patch if applies() => "APPLY",
        request::Verb::Patch => "PATCH",
        request::Verb::Delete => "DELETE",
        request::Verb::DeleteCollection => "DELETECOLLECTION",
    };
    let scope = match (&req.name, &req.namespace) {
        (Some(_), _) => "resource",
        _ if req.verb == request::Verb::Create => "resource",
        (None, Some(_)) => "namespace",
        (None, None) => "cluster",
    };
    let dry_run = if params.value("dryRun").is_some_and(|v| v == "All") { "All" } else { "" };
    RequestLabels { verb, group: req.info.group, version: req.info.version, resource: req.info.resource, subresource, scope, dry_run }
}

/// How much more than the limit an oversized body is read (and dropped) before the 413, so that
/// a client still sending it reads the answer instead of finding the connection closed under it.
const DRAIN: usize = 16 * 1024 * 1024;

/// The request body, or `None` when it is over `max` (or breaks off). A body in one piece is
/// passed on without a copy.
async fn read_body(mut body: axum::body::Body, max: usize) -> Option<bytes::Bytes> {
    use http_body_util::BodyExt;
    let mut chunks: Vec<bytes::Bytes> = Vec::new();
    let mut seen = 0usize;
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame.ok()?.into_data() else { continue };
        seen += data.len();
        if seen > max + DRAIN {
            return None;
        }
        if seen <= max {
            chunks.push(data);
        }
    }
    match chunks.len() {
        _ if seen > max => None,
        0 => Some(bytes::Bytes::new()),
        1 => chunks.pop(),
        _ => Some(chunks.concat().into()),
    }
}

/// 413 for a body over the limit. Past [`DRAIN`] the rest is never read, so the connection
/// cannot carry another request: an HTTP/1.1 client is told not to reuse it (HTTP/2 drops the
/// header).
fn too_large(ctx: &Ctx) -> Response {
    let mut resp = ApiError::TooLarge(format!("Request entity too large: limit is {}", ctx.settings.max_body)).into_response();
    resp.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    resp
}

/// Everything that is not a resource: health, version, discovery and OpenAPI documents.
async fn route(ctx: &Ctx, method: &Method, path: &str, params: &Params, headers: &http::HeaderMap, body: &[u8]) -> Response {
    let segments: Vec<&str> = path.trim_matches('/').split('/').filter(|s| !s.is_empty()).collect();
    #[cfg(feature = "failpoints")]
    if let ["debug", "failpoints", rest @ ..] = segments.as_slice() {
        return crate::failpoints::serve(method, rest.first().copied(), body);
    }
    #[cfg(not(feature = "failpoints"))]
    let _ = body;
    if let ["livez" | "readyz" | "healthz", rest @ ..] = segments.as_slice() {
        // A check's name may have several segments (`poststarthook/bootstrap-controller`).
        let check = rest.join("/");
        return health::serve(ctx, segments[0], (!check.is_empty()).then_some(check.as_str()), params);
    }
    if method != Method::GET {
        return ApiError::MethodNotAllowed.into_response();
    }
    let aggregated = negotiate::wants_aggregated_discovery(headers);
    let doc = match segments.as_slice() {
        ["metrics"] => {
            let text = ctx.filters.metrics.render(&store_figures(ctx), &flow_figures(ctx));
            let mut resp = (StatusCode::OK, text).into_response();
            resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(crate::metrics::CONTENT_TYPE));
            return resp;
        }
        ["debug", "api_priority_and_fairness", dump] if ctx.filters.flowcontrol.enabled => {
            let d = &ctx.filters.flowcontrol.dispatcher;
            let text = match *dump {
                "dump_priority_levels" => d.dump_priority_levels(),
                "dump_queues" => d.dump_queues(),
                "dump_requests" => d.dump_requests(params.value("includeRequestDetails").is_some_and(|v| !v.is_empty())),
                _ => return ApiError::NoRoute.into_response(),
            };
            let mut resp = (StatusCode::OK, text).into_response();
            resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
            return resp;
        }
        [".well-known", "openid-configuration"] => match ctx.tokens.discovery() {
            Some(doc) => return cacheable(serde_json::to_vec(&doc).unwrap_or_default(), "application/json"),
            None => None,
        },
        ["openid", "v1", "jwks"] if ctx.tokens.discovery().is_some() => {
            return cacheable(serde_json::to_vec(&ctx.tokens.jwks()).unwrap_or_default(), "application/jwk-set+json")
        }
        ["version"] => Some(version()),
        ["api"] if aggregated => return discovery_response(discovery::aggregated(true)),
        ["apis"] if aggregated => {
            let mut doc = discovery::aggregated(false);
            crate::aggregator::discovery::extend_aggregated(ctx, &mut doc).await;
            return discovery_response(doc);
        }
        ["api"] => Some(discovery::api_versions(&ctx.settings.address)),
        ["apis"] => {
            let mut doc = discovery::api_group_list();
            crate::aggregator::discovery::extend_group_list(ctx, &mut doc);
            Some(doc)
        }
        ["api", v] => discovery::api_resource_list("", v),
        ["apis", g] => crate::aggregator::discovery::group(ctx, g, discovery::api_group(g)),
        ["apis", g, v] => discovery::api_resource_list(g, v),
        // The Swagger document as JSON, or in gnostic's protobuf form when that is asked for
        // first.
        ["openapi", "v2"] => {
            let merged = crate::aggregator::openapi::v2(ctx, openapi::v2).await;
            return match openapi_v2_form(headers) {
                Some(true) => {
                    let mut resp = merged.map_or_else(openapi::v2_protobuf, |m| m.1.clone()).into_response();
                    resp.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static(openapi::gnostic::MEDIA_TYPE));
                    resp
                }
                Some(false) => raw_json(merged.map_or_else(openapi::v2, |m| m.0.clone())),
                None => ApiError::NotAcceptable("only application/json and the protobuf form are served for /openapi/v2".into()).into_response(),
            }
        }
        ["openapi", "v3"] => {
            let mut index: Value = serde_json::from_slice(&openapi::v3_index()).unwrap_or_default();
            crate::aggregator::openapi::extend_v3_index(ctx, &mut index).await;
            Some(index)
        }
        ["openapi", "v3", rest @ ..] => match openapi::v3_group_version(&rest.join("/")) {
            Some(b) => return raw_json(b),
            None => crate::aggregator::openapi::v3_document(ctx, &rest.join("/")).await,
        },
        _ => None,
    };
    match doc {
        Some(v) => raw_json(serde_json::to_vec(&v).unwrap_or_default()),
        None => ApiError::NoRoute.into_response(),
    }
}

/// Whether the Accept header allows a JSON answer.
/// Which form of `/openapi/v2` the client asks for first: `Some(true)` the protobuf form,
/// `Some(false)` JSON, `None` neither.
fn openapi_v2_form(headers: &http::HeaderMap) -> Option<bool> {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
    if accept.is_empty() {
        return Some(false);
    }
    accept.split(',').map(|t| t.split(';').next().unwrap_or("").trim()).find_map(|t| match t {
        t if openapi::gnostic::ACCEPTED.contains(&t) => Some(true),
        "application/json" | "*/*" | "application/*" => Some(false),
        _ => None,
    })
}

fn version() -> Value {
    let features = machinery::features::current();
    let binary = machinery::features::BINARY;
    json!({
        "major": binary.major.to_string(),
        "minor": binary.minor.to_string(),
        "emulationMajor": features.emulation.major.to_string(),
        "emulationMinor": features.emulation.minor.to_string(),
        "minCompatibilityMajor": features.min_compatibility.major.to_string(),
        "minCompatibilityMinor": features.min_compatibility.minor.to_string(),
        "gitVersion": format!("v{binary}.0"),
        "gitCommit": env!("CARGO_PKG_VERSION"),
        "gitTreeState": "clean",
        "buildDate": "2025-08-27T00:00:00Z",
        "goVersion": "go1.24.6",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, if cfg!(target_arch = "x86_64") { "amd64" } else { std::env::consts::ARCH }),
    })
}

/// A service-account issuer document, which relying parties may cache for an hour.
fn cacheable(body: Vec<u8>, content_type: &'static str) -> Response {
    let mut resp = (StatusCode::OK, body).into_response();
    resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=3600"));
    resp
}

fn raw_json(body: Vec<u8>) -> Response {
    let mut resp = (StatusCode::OK, body).into_response();
    resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

fn discovery_response(v: Value) -> Response {
    let mut resp = (StatusCode::OK, serde_json::to_vec(&v).unwrap_or_default()).into_response();
    resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(discovery::AGGREGATED_CONTENT_TYPE));
    resp
}

/// What the store tells the metrics.
fn store_figures(ctx: &Ctx) -> crate::metrics::StoreFigures {
    let store = &ctx.store;
    crate::metrics::StoreFigures {
        node_id: store.node_id(),
        raft: store.status(),
        file_bytes: store.file_bytes(),
        live_bytes: store.cache().bytes(),
        keys: store.cache().object_count() as u64,
        quota_bytes: store.quota_bytes(),
        objects: machinery::registry::served().map(|r| (r.group, r.resource, store.cache().count_under(&r.key_prefix()))).collect(),
        peer_round_trips: store.peer_round_trips(),
    }
}

/// The dispatcher's priority levels and flows, for the metrics.
fn flow_figures(ctx: &Ctx) -> crate::metrics::FlowFigures {
    let fc = &ctx.filters.flowcontrol;
    if fc.inflight.is_some() {
        return Default::default();
    }
    crate::metrics::FlowFigures {
        nominal_seats: fc.nominal_limits(),
        current: fc.dispatcher.current(),
    }
}
