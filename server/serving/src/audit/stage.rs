//! The audit stage of the request chain: the audit ID every response carries, the record begun
//! once the request's user and attributes are known, and its last events once the answer is
//! there (for a watch, when its stream ends).

use axum::body::Body;
use axum::response::Response;
use futures::StreamExt;
use http::HeaderValue;
use serde_json::Value;

use super::policy::Stage;
use super::{Answer, Record, RequestFacts, AUDIT_ID_HEADER};
use access::attributes::Attributes;
use access::UserInfo;
use crate::context::Filters;
use machinery::negotiate::BodyKind;
use machinery::patch::PatchKind;

/// The request's audit ID: the client's `Audit-ID` header when it is a sane one, else a new UUID.
pub fn audit_id(headers: &http::HeaderMap) -> String {
    headers
        .get(AUDIT_ID_HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_graphic()))
        .map_or_else(|| uuid::Uuid::new_v4().to_string(), str::to_string)
}

/// Tells the client the audit ID, as kube-apiserver does on every response.
pub fn with_id(mut resp: Response, audit_id: &str) -> Response {
    if let Ok(v) = HeaderValue::from_str(audit_id) {
        resp.headers_mut().insert(AUDIT_ID_HEADER, v);
    }
    resp
}

/// Begins the record of a request the policy audits, and writes its RequestReceived event.
/// `attrs` name the authenticated user (before impersonation). A request whose event a
/// `blocking-strict` webhook did not take is refused, with kube-apiserver's plain-text 500.
pub async fn begin(filters: &Filters, audit_id: &str, attrs: &Attributes, parts: &http::request::Parts) -> Result<Option<Record>, Response> {
    let Some(record) = filters.audit.as_ref().and_then(|a| a.begin(audit_id, attrs, || facts(parts))) else { return Ok(None) };
    if !record.emit(Stage::RequestReceived, None).await {
        let text = format!("Internal Server Error: {:?}: failed to store audit event\n", parts.uri.path_and_query().map_or(parts.uri.path(), |p| p.as_str()));
        let mut resp = Response::new(Body::from(text));
        *resp.status_mut() = http::StatusCode::INTERNAL_SERVER_ERROR;
        resp.headers_mut().insert(http::header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
        resp.headers_mut().insert(http::header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
        return Err(resp);
    }
    Ok(Some(record))
}

/// Audits a request whose authentication failed, as kube-apiserver does: one event at
/// ResponseStarted with the 401 (its user unknown), if the policy selects such requests.
pub async fn failed_authentication(filters: &Filters, audit_id: &str, parts: &http::request::Parts, resp: Response) -> Response {
    let Some(auditor) = &filters.audit else { return resp };
    let params = machinery::query::Params::parse(parts.uri.query()).unwrap_or_default();
    let attrs = Attributes::of_request(UserInfo::default(), &parts.method, parts.uri.path(), &params);
    let Some(record) = auditor.begin(audit_id, &attrs, || facts(parts)) else { return resp };
    let (head, body) = resp.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap_or_default();
    let answer = Answer { code: head.status.as_u16(), status: decode(&head.headers, &bytes), ..Default::default() };
    record.emit(Stage::ResponseStarted, Some(&answer)).await;
    Response::from_parts(head, Body::from(bytes))
}

/// What the event says about the HTTP request: URI, source IPs (`X-Forwarded-For`, then the
/// peer), user agent.
fn facts(parts: &http::request::Parts) -> RequestFacts {
    let mut source_ips: Vec<String> = parts
        .headers
        .get("x-forwarded-for")
        .and_then(|v| v.to_str().ok())
        .into_iter()
        .flat_map(|v| v.split(','))
        .map(|ip| ip.trim().to_string())
        .filter(|ip| !ip.is_empty())
        .collect();
    if let Some(axum::extract::ConnectInfo(peer)) = parts.extensions.get::<axum::extract::ConnectInfo<std::net::SocketAddr>>() {
        let ip = peer.ip().to_string();
        if !source_ips.contains(&ip) {
            source_ips.push(ip);
        }
    }
    RequestFacts {
        uri: parts.uri.path_and_query().map_or_else(|| parts.uri.path().to_string(), |p| p.to_string()),
        source_ips,
        user_agent: parts.headers.get(http::header::USER_AGENT).and_then(|v| v.to_str().ok()).map(str::to_string),
    }
}

/// The request body as the event holds it, when the policy asks for it. A create names its
/// object only in the body: the event's `objectRef` takes the name from there.
pub fn request_object(record: &mut Record, attrs: &Attributes, headers: &http::HeaderMap, body: &[u8]) -> Option<Value> {
    let unnamed = attrs.verb == "create" && attrs.name.is_empty();
    if body.is_empty() || !(record.wants_request() || unnamed) {
        return None;
    }
    if !record.wants_request() {
        // Only the name is needed: read from a JSON body without building the object.
        if let Some(name) = json_name(headers, body) {
            record.name_object(&name);
            return None;
        }
    }
    let object = decode(headers, body)?;
    if unnamed {
        if let Some(name) = object["metadata"]["name"].as_str() {
            record.name_object(name);
        }
    }
    record.wants_request().then_some(object)
}

/// `metadata.name` of a JSON body, read without decoding the rest into values; `None` for any
/// other encoding (or no name).
fn json_name(headers: &http::HeaderMap, body: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Named<'a> {
        #[serde(borrow)]
        metadata: Meta<'a>,
    }
    #[derive(serde::Deserialize)]
    struct Meta<'a> {
        #[serde(borrow)]
        name: Option<std::borrow::Cow<'a, str>>,
    }
    if !matches!(machinery::negotiate::body_kind(headers).ok()?, BodyKind::Json) {
        return None;
    }
    serde_json::from_slice::<Named>(body).ok()?.metadata.name.map(|n| n.into_owned())
}

/// Writes the record's last events: ResponseComplete now, or for a watch ResponseStarted now and
/// ResponseComplete when its stream ends. A failure's `Status` (and at `RequestResponse` the
/// answer) is read from the body, which is passed on unchanged.
pub async fn finish(record: Record, resp: Response, request_object: Option<Value>, watch: bool) -> Response {
    let code = resp.status().as_u16();
    let mut answer = Answer { code, request_object, ..Default::default() };
    if watch && resp.status().is_success() {
        record.emit(Stage::ResponseStarted, Some(&answer)).await;
        let (parts, body) = resp.into_parts();
        let done = Finished(Some((record, answer)));
        let stream = body.into_data_stream().map(move |chunk| {
            let _ = &done;
            chunk
        });
        return Response::from_parts(parts, Body::from_stream(stream));
    }
    if !(code >= 400 || record.wants_response()) {
        record.emit(Stage::ResponseComplete, Some(&answer)).await;
        return resp;
    }
    let (parts, body) = resp.into_parts();
    // A failed body fails the client's read as it would have without auditing.
    let bytes = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(b) => b,
        Err(_) => {
            record.emit(Stage::ResponseComplete, Some(&answer)).await;
            return Response::from_parts(parts, Body::empty());
        }
    };
    let object = decode(&parts.headers, &bytes);
    if code >= 400 {
        answer.status = object.clone();
    }
    if record.wants_response() {
        answer.response_object = object;
    }
    record.emit(Stage::ResponseComplete, Some(&answer)).await;
    Response::from_parts(parts, Body::from(bytes))
}

/// A request's or an answer's body as JSON, by its Content-Type: JSON (and the JSON patches),
/// YAML (and apply patches) or Protobuf; other encodings are left out of the event.
fn decode(headers: &http::HeaderMap, body: &[u8]) -> Option<Value> {
    match machinery::negotiate::body_kind(headers).ok()? {
        BodyKind::Protobuf => machinery::protobuf::decode_body(body).ok(),
        BodyKind::Yaml | BodyKind::Patch(PatchKind::Apply) => serde_yaml::from_slice(body).ok(),
        BodyKind::Json | BodyKind::Patch(_) => serde_json::from_slice(body).ok(),
        BodyKind::Cbor | BodyKind::ApplyCbor => None,
    }
}

/// Writes a watch's ResponseComplete event when its stream is dropped (ended or cut), on a
/// task of its own (a blocking webhook may take a while).
struct Finished(Option<(Record, Answer)>);

impl Drop for Finished {
    fn drop(&mut self) {
        if let Some((record, answer)) = self.0.take() {
            tokio::spawn(async move { record.emit(Stage::ResponseComplete, Some(&answer)).await });
        }
    }
}
