//! Proxying an authorized request to the extension server of its APIService: refused with 503
//! while the APIService is not available; otherwise sent with the caller's method, path, query,
//! headers (credentials replaced by the user, [`super::set_user`]) and body, and the answer
//! streamed back as it comes (a watch stays open). An answer that redirects is refused with 502,
//! as kube-apiserver refuses to forward redirects; an extension server that cannot be reached
//! is a 503 naming why.

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::{header, Request, StatusCode};
use http_body_util::Full;
use serde_json::Value;

use super::{endpoint, is_available, set_user, HOP_BY_HOP};
use access::UserInfo;
use crate::context::Ctx;
use crate::health::text;
use machinery::webhook::CallError;

/// Forwards the request to the APIService's extension server.
pub async fn forward(ctx: &Ctx, apiservice: &Value, parts: &http::request::Parts, user: &UserInfo, body: Bytes) -> Response {
    if !is_available(apiservice) {
        return text(StatusCode::SERVICE_UNAVAILABLE, "service unavailable\n".into());
    }
    let target = match endpoint(&ctx.store, &ctx.settings, apiservice) {
        Ok(t) => t,
        Err(e) => {
            tracing::warn!(apiservice = %apiservice["metadata"]["name"], error = %e, "extension server not resolved");
            return text(StatusCode::SERVICE_UNAVAILABLE, "service unavailable\n".into());
        }
    };
    let path = parts.uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
    let mut request = Request::builder().method(parts.method.clone()).uri(path);
    let headers = request.headers_mut().expect("a fresh builder has headers");
    for (name, value) in &parts.headers {
        if !HOP_BY_HOP.contains(&name.as_str()) {
            headers.append(name.clone(), value.clone());
        }
    }
    if let Err(e) = set_user(headers, user) {
        return text(StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n"));
    }
    let Ok(request) = request.body(Full::new(body)) else {
        return text(StatusCode::BAD_REQUEST, "the request cannot be forwarded\n".into());
    };
    let answer = match target.send(request).await {
        Ok(a) => a,
        Err(CallError::Transport(e)) => return text(StatusCode::SERVICE_UNAVAILABLE, format!("error trying to reach service: {e}\n")),
        Err(CallError::Timeout(after)) => return text(StatusCode::SERVICE_UNAVAILABLE, format!("error trying to reach service: no answer within {after:?}\n")),
    };
    if answer.status().is_redirection() && answer.headers().contains_key(header::LOCATION) {
        return text(StatusCode::BAD_GATEWAY, "the backend attempted to redirect this request, which is not permitted\n".into());
    }
    let (mut head, incoming) = answer.into_parts();
    for name in HOP_BY_HOP {
        head.headers.remove(*name);
    }
    Response::from_parts(head, Body::new(incoming))
}
