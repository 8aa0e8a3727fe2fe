//! The HTTP application: the filter chain (panic recovery, authentication, authorization of
//! anonymous requests, body limit) in front of one dispatcher that routes discovery, health,
//! OpenAPI and resource paths.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::Router;
use http::{header, HeaderValue, Method, StatusCode};
use serde_json::{json, Value};

use crate::context::Ctx;
use crate::error::ApiError;
use crate::query::Params;
use crate::tls::ClientIdentity;
use crate::{discovery, handlers, health, negotiate, openapi, request};

/// The user a request acts as, after authentication.
#[derive(Debug, Clone)]
pub struct User {
    pub name: String,
    pub groups: Vec<String>,
}

impl User {
    fn anonymous() -> User {
        User { name: "system:anonymous".into(), groups: vec!["system:unauthenticated".into()] }
    }
}

/// Paths anonymous users may read.
fn is_public(path: &str) -> bool {
    path == "/version"
        || ["/livez", "/readyz", "/healthz"].iter().any(|p| path == *p || path.starts_with(&format!("{p}/")))
}

pub fn router(ctx: Ctx) -> Router {
    Router::new()
        .fallback(dispatch)
        .with_state(ctx)
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(|_: Box<dyn std::any::Any + Send>| {
            ApiError::Internal("an internal error occurred while handling the request".into()).into_response()
        }))
}

/// Authenticates, then routes.
async fn dispatch(State(ctx): State<Ctx>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let user = match parts.extensions.get::<ClientIdentity>() {
        Some(id) => User { name: id.user.clone(), groups: id.groups.clone() },
        None => User::anonymous(),
    };
    let path = parts.uri.path().to_string();
    let verb = parts.method.as_str().to_ascii_lowercase();
    // Until RBAC is enforced, only cluster administrators are authorized beyond public paths.
    if !is_public(&path) && !user.groups.iter().any(|g| g == "system:masters") {
        return ApiError::Forbidden(format!("forbidden: User \"{}\" cannot {verb} path \"{path}\"", user.name)).into_response();
    }
    let params = match Params::parse(parts.uri.query()) {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    let started = std::time::Instant::now();
    let resp = route(&ctx, &parts.method, &path, &params, &parts.headers, body).await;
    tracing::debug!(method = %parts.method, %path, code = resp.status().as_u16(), elapsed_ms = started.elapsed().as_millis() as u64, user = %user.name, "request");
    resp
}

async fn route(ctx: &Ctx, method: &Method, path: &str, params: &Params, headers: &http::HeaderMap, body: Body) -> Response {
    let segments: Vec<&str> = path.trim_matches('/').split('/').filter(|s| !s.is_empty()).collect();
    if let ["livez" | "readyz" | "healthz", rest @ ..] = segments.as_slice() {
        return health::serve(ctx, segments[0], rest.first().copied(), params);
    }
    let watch = match params.flag("watch") {
        Ok(w) => w,
        Err(e) => return e.into_response(),
    };
    match request::classify(method, path, watch) {
        Ok(Some(req)) => {
            let body = match axum::body::to_bytes(body, ctx.settings.max_body).await {
                Ok(b) => b,
                Err(_) => return ApiError::TooLarge.into_response(),
            };
            return handlers::serve(ctx, req, params.clone(), headers, body).await;
        }
        Ok(None) => {}
        Err(e) => return e.into_response(),
    }
    if method != Method::GET {
        return ApiError::MethodNotAllowed.into_response();
    }
    let aggregated = negotiate::wants_aggregated_discovery(headers);
    let doc = match segments.as_slice() {
        ["version"] => Some(version()),
        ["api"] if aggregated => return discovery_response(discovery::aggregated(true)),
        ["apis"] if aggregated => return discovery_response(discovery::aggregated(false)),
        ["api"] => Some(discovery::api_versions(&ctx.settings.address)),
        ["apis"] => Some(discovery::api_group_list()),
        ["api", v] => discovery::api_resource_list("", v),
        ["apis", g] => discovery::api_group(g),
        ["apis", g, v] => discovery::api_resource_list(g, v),
        // The Swagger document is served as JSON only; a client asking only for its protobuf
        // form gets 406 and falls back.
        ["openapi", "v2"] if !accepts_json(headers) => {
            return ApiError::NotAcceptable("only application/json is served for /openapi/v2".into()).into_response()
        }
        ["openapi", "v2"] => return raw_json(openapi::v2().to_vec()),
        ["openapi", "v3"] => return raw_json(openapi::v3_index().to_vec()),
        ["openapi", "v3", rest @ ..] => match openapi::v3_group_version(&rest.join("/")) {
            Some(b) => return raw_json(b.to_vec()),
            None => None,
        },
        _ => None,
    };
    match doc {
        Some(v) => raw_json(serde_json::to_vec(&v).unwrap_or_default()),
        None => ApiError::NoRoute.into_response(),
    }
}

/// Whether the Accept header allows a JSON answer.
fn accepts_json(headers: &http::HeaderMap) -> bool {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
    accept.is_empty() || accept.split(',').any(|t| matches!(t.split(';').next().unwrap_or("").trim(), "application/json" | "*/*" | "application/*"))
}

fn version() -> Value {
    json!({
        "major": "1",
        "minor": "34",
        "emulationMajor": "1",
        "emulationMinor": "34",
        "minCompatibilityMajor": "1",
        "minCompatibilityMinor": "33",
        "gitVersion": "v1.34.0",
        "gitCommit": env!("CARGO_PKG_VERSION"),
        "gitTreeState": "clean",
        "buildDate": "2025-08-27T00:00:00Z",
        "goVersion": "go1.24.6",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, if cfg!(target_arch = "x86_64") { "amd64" } else { std::env::consts::ARCH }),
    })
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
