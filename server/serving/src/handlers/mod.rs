//! One handler per verb, and the resource endpoint that routes a classified request to them
//! and encodes the reply in the negotiated media type.

mod delete;
mod mutate;
mod binding;
mod certificates;
mod component_status;
pub mod connect;
mod eviction;
mod finalizers;
mod pod_parts;
mod read;
mod reply;
mod review;
mod scale;
mod token_request;
mod watch;
mod write;

use std::borrow::Cow;
use std::sync::Arc;

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue, StatusCode};
use serde_json::Value;

use crate::context::Ctx;
use machinery::error::{ApiError, ApiResult, Cause};
use machinery::fieldmanager::{self, Manager};
use machinery::patch::PatchKind;
use machinery::prepare::FieldValidation;
use machinery::negotiate::{self, BodyKind, Encoding, Form, Output};
use machinery::query::Params;
use machinery::registry::ResourceInfo;
use access::request::{ResourceRequest, Verb};
use crate::status_response::StatusResponse;
use machinery::{metadata_form, table_form};

pub use reply::{list_json, list_json_stream, list_protobuf_stream, list_size, ListReply, Reply};
pub use write::parse;

/// Serves one resource request.
pub async fn serve(ctx: &Ctx, req: ResourceRequest, params: Params, headers: &HeaderMap, body: Bytes) -> Response {
    // A deprecated version (of a built-in kind or a custom resource) says so on every answer,
    // first; the other warnings go out with the answer, a refusal too (an unknown field and the
    // 422).
    let mut warnings: Vec<String> = match req.info.ops.strategy.deprecation {
        Some(w) => vec![w.to_string()],
        None => machinery::registry::custom::version(req.info).and_then(|v| v.deprecation.clone()).into_iter().collect(),
    };
    if !warnings.is_empty() {
        // As kube-apiserver records a deprecated API's use (no removal is planned for these).
        admission::audit_annotations::annotate("k8s.io/deprecated", "true");
        let info = req.info;
        ctx.filters.metrics.deprecated_api_requested(info.group, info.version, info.resource, req.subresource.as_deref().unwrap_or(""), "");
    }
    let mut resp = match run(ctx, &req, &params, headers, body, &mut warnings).await {
        Ok(resp) => resp,
        Err(e) => e.into_response(),
    };
    for w in warnings {
        add_warning(&mut resp, &w);
    }
    resp
}

/// Proposes `txn` and, once applied, names the revision it became in the request's audit event.
async fn commit(ctx: &Ctx, txn: raft_store::Txn) -> ApiResult<raft_store::TxnResult> {
    let result = ctx.store.write(txn).await?;
    if let raft_store::TxnResult::Ok { rev, .. } = &result {
        admission::audit_annotations::annotate(crate::audit::RESOURCE_VERSION, rev.to_string());
    }
    Ok(result)
}

/// Adds a `Warning` header: a quoted-string, as Kubernetes writes warnings (RFC 7234).
fn add_warning(resp: &mut Response, warning: &str) {
    if let Ok(v) = HeaderValue::from_str(&format!("299 - \"{}\"", warning.replace('\\', "\\\\").replace('"', "\\\""))) {
        resp.headers_mut().append(header::WARNING, v);
    }
}

async fn run(ctx: &Ctx, req: &ResourceRequest, params: &Params, headers: &HeaderMap, body: Bytes, warnings: &mut Vec<String>) -> ApiResult<Response> {
    let custom = machinery::registry::custom::is_custom(req.info);
    let output = negotiate::output(headers, req.verb == Verb::Watch, !req.info.is_review(), !custom)?;
    // Each verb's handler runs in a box of its own size, so that a GET does not carry the
    // state of the largest write handler.
    let reply = match req.verb {
        Verb::Get if req.info.resource == "componentstatuses" => component_status::get(ctx, req)?,
        Verb::List if req.info.resource == "componentstatuses" => component_status::list(ctx)?,
        Verb::Get => Box::pin(read::get(ctx, req, params)).await?,
        Verb::List => Box::pin(read::list(ctx, req, params)).await?,
        Verb::Watch => return Box::pin(watch_response(ctx, req, params, output)).await,
        Verb::Create if req.info.resource == "bindings" || req.subresource.as_deref() == Some("binding") => {
            let obj = decode_object(headers, &body, "Binding")?;
            Box::pin(binding::create(ctx, req, obj, params.dry_run()?)).await?
        }
        Verb::Create if req.subresource.as_deref() == Some("eviction") => {
            let obj = decode_object(headers, &body, "Eviction")?;
            Box::pin(eviction::create(ctx, req, obj, params.dry_run()?)).await?
        }
        Verb::Create if req.subresource.as_deref() == Some("token") => {
            let obj = decode_object(headers, &body, "TokenRequest")?;
            Box::pin(token_request::create(ctx, req, obj)).await?
        }
        Verb::Create if req.info.is_review() => {
            let mut obj = decode_object(headers, &body, req.info.kind)?;
            machinery::prepare::check_type_meta(req.info, &mut obj, req.info.kind, &req.info.api_version())?;
            Box::pin(review::create(ctx, req, obj)).await?
        }
        Verb::Create => {
            let mut obj = decode_object(headers, &body, req.info.kind)?;
            machinery::prepare::check_type_meta(req.info, &mut obj, req.info.kind, &req.info.api_version())?;
            let validation = FieldValidation::from_params(params)?;
            let manager = request_manager(req, params, headers, "CreateOptions", None)?;
            let duplicates = duplicate_fields(headers, &body);
            let opts = write::Create { validation, duplicates: &duplicates, dry_run: params.dry_run()?, manager: Some(&manager) };
            Box::pin(write::create(ctx, req, obj, opts, warnings)).await?
        }
        Verb::Update => {
            let obj = decode_object(headers, &body, req.info.kind)?;
            let manager = request_manager(req, params, headers, "UpdateOptions", None)?;
            Box::pin(mutate::update(ctx, req, params, obj, duplicate_fields(headers, &body), manager, warnings)).await?
        }
        Verb::Patch => match negotiate::body_kind(headers)? {
            BodyKind::Patch(kind) => {
                let manager = request_manager(req, params, headers, "PatchOptions", Some(kind))?;
                Box::pin(mutate::patch(ctx, req, params, kind, &body, manager, warnings)).await?
            }
            BodyKind::ApplyCbor => {
                let manager = request_manager(req, params, headers, "PatchOptions", Some(PatchKind::Apply))?;
                // JSON is YAML: the apply reads the configuration as it reads YAML.
                let json = serde_json::to_vec(&machinery::cbor::decode(&body)?).map_err(ApiError::internal)?;
                Box::pin(mutate::patch(ctx, req, params, PatchKind::Apply, &json, manager, warnings)).await?
            }
            _ => {
                return Err(ApiError::UnsupportedMediaType(format!(
                    "the body of the request was in an unknown format - accepted media types include: {}",
                    negotiate::PATCH_TYPES.join(", ")
                )))
            }
        },
        Verb::Delete => Box::pin(delete::delete(ctx, req, params, optional_object(headers, &body)?.as_ref(), warnings)).await?,
        Verb::DeleteCollection => Box::pin(delete::delete_collection(ctx, req, params, optional_object(headers, &body)?.as_ref())).await?,
    };
    encode(req.info, req.subresource.is_some(), reply, output, params)
}

/// The manager of a write, from `fieldManager` or the User-Agent, with Kubernetes' checks of
/// the write's options (`options` names them in the 422): a printable manager of at most 128
/// bytes, required for an apply; `force` only for an apply.
fn request_manager(req: &ResourceRequest, params: &Params, headers: &HeaderMap, options: &str, patch: Option<PatchKind>) -> ApiResult<Manager> {
    let given = params.get("fieldManager").filter(|m| !m.is_empty());
    let mut causes = Vec::new();
    match (patch, given) {
        (Some(PatchKind::Apply), None) => causes.push(Cause::new("FieldValueRequired", "fieldManager", "Required value: is required for apply patch")),
        (Some(PatchKind::Apply), _) | (None, _) => {}
        (Some(_), _) if params.get("force").is_some() => causes.push(Cause::new("FieldValueForbidden", "force", "Forbidden: may not be specified for non-apply patch")),
        (Some(_), _) => {}
    }
    if let Some(m) = given {
        if m.len() > fieldmanager::MAX_MANAGER_LEN {
            causes.push(Cause::new("FieldValueTooLong", "fieldManager", format!("Too long: may not be more than {} bytes", fieldmanager::MAX_MANAGER_LEN)));
        }
        if let Some((i, c)) = m.chars().enumerate().find(|(_, c)| c.is_control()) {
            causes.push(Cause::invalid("fieldManager", m, &format!("invalid character U+{:04X} (at position {i})", c as u32)));
        }
    }
    if !causes.is_empty() {
        return Err(ApiError::Invalid { group: "meta.k8s.io".into(), kind: options.into(), name: String::new(), causes });
    }
    let agent = headers.get(header::USER_AGENT).and_then(|v| v.to_str().ok());
    Ok(Manager::of(given, agent, &req.info.api_version(), req.subresource.as_deref()))
}

/// Decodes a JSON, YAML or Protobuf request body into an object.
/// Decodes a request body that must be an object of `kind` (named in Kubernetes' refusal of an
/// `apiVersion` or `kind` that is no string).
fn decode_object(headers: &HeaderMap, body: &[u8], kind: &str) -> ApiResult<Value> {
    let value: Value = match negotiate::body_kind(headers)? {
        BodyKind::Json => serde_json::from_slice(body).map_err(|e| ApiError::bad_request(format!("couldn't decode the request body as JSON: {e}")))?,
        BodyKind::Yaml => machinery::yaml::decode(body, |e| ApiError::bad_request(format!("couldn't decode the request body as YAML: {e}")))?,
        BodyKind::Protobuf => machinery::protobuf::decode_body(body)?,
        BodyKind::Cbor => machinery::cbor::decode(body)?,
        BodyKind::Patch(_) | BodyKind::ApplyCbor => return Err(negotiate::unsupported_body()),
    };
    if !value.is_object() {
        return Err(ApiError::bad_request("the request body must be a JSON or YAML object"));
    }
    machinery::prepare::type_meta_strings(&value, body, kind)?;
    Ok(value)
}

/// Keys a JSON body repeats (other encodings cannot repeat one).
fn duplicate_fields(headers: &HeaderMap, body: &[u8]) -> Vec<String> {
    match negotiate::body_kind(headers) {
        Ok(BodyKind::Json) => machinery::prepare::duplicate_fields(body),
        _ => Vec::new(),
    }
}

fn optional_object(headers: &HeaderMap, body: &[u8]) -> ApiResult<Option<Value>> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    decode_object(headers, body, "DeleteOptions").map(Some)
}

fn to_json(value: &impl serde::Serialize) -> ApiResult<Bytes> {
    serde_json::to_vec(value).map(Bytes::from).map_err(ApiError::internal)
}

/// Lists of more item bytes than this go out in JSON or Protobuf as they are made
/// ([`list_json_stream`], [`list_protobuf_stream`]); smaller ones are assembled whole, which
/// measured faster (a list of 10 MB took 25–29 ms whole, 30 ms streamed).
const STREAM_LIST: usize = 16 << 20;

/// Encodes a reply in the negotiated form and encoding.
fn encode(info: &'static ResourceInfo, subresource: bool, reply: Reply, output: Output, params: &Params) -> ApiResult<Response> {
    let reply = match reply {
        Reply::List(list) if output.form == Form::Object && matches!(output.encoding, Encoding::Json | Encoding::Protobuf) && list_size(&list) > STREAM_LIST => {
            let body = match output.encoding {
                Encoding::Protobuf => Body::from_stream(futures::StreamExt::map(list_protobuf_stream(info, list)?, Ok::<_, std::convert::Infallible>)),
                _ => Body::from_stream(futures::StreamExt::map(list_json_stream(info, list), Ok::<_, std::convert::Infallible>)),
            };
            let mut resp = Response::new(body);
            resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(output.content_type(false)));
            resp.extensions_mut().insert(crate::compression::Streamed);
            return Ok(resp);
        }
        reply => reply,
    };
    let (code, json): (StatusCode, Bytes) = match (&reply, output.form) {
        (Reply::Object { code, data }, Form::Table) if !subresource => {
            let obj: Value = serde_json::from_slice(data).map_err(ApiError::internal)?;
            (*code, to_json(&table_form::object_table(info, &obj, params)?)?)
        }
        (Reply::List(list), Form::Table) => {
            let items: Vec<Value> = list.items.iter().filter_map(|i| serde_json::from_slice(i).ok()).collect();
            let table = table_form::list_table(info, &items, list.rev, list.continue_token.as_deref(), list.remaining, params)?;
            (StatusCode::OK, to_json(&table)?)
        }
        (Reply::Object { code, data }, Form::Metadata) => {
            let obj: Value = serde_json::from_slice(data).map_err(ApiError::internal)?;
            (*code, to_json(&metadata_form::object(&obj))?)
        }
        (Reply::List(list), Form::Metadata) => (StatusCode::OK, to_json(&metadata_form::list(list))?),
        (Reply::Object { code, data }, _) => (*code, data.clone()),
        (Reply::List(list), _) => (StatusCode::OK, Bytes::from(list_json(info, list))),
        (Reply::Document { code, value }, _) => (*code, to_json(value)?),
    };
    // JSON goes out as it is (a stored object's bytes without a copy); other encodings are made from it.
    let body = match output.encoding {
        Encoding::Json => json,
        _ => Bytes::from(output.encode_json(json.to_vec())?),
    };
    let mut resp = (code, body).into_response();
    resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(output.content_type(false)));
    Ok(resp)
}

/// Turns a watch event's object (by event type, as JSON) into the negotiated form, as JSON.
/// The object form passes the stored bytes through untouched.
type FormOf = Arc<dyn for<'a> Fn(&str, &'a [u8]) -> Cow<'a, [u8]> + Send + Sync>;

async fn watch_response(ctx: &Ctx, req: &ResourceRequest, params: &Params, output: Output) -> ApiResult<Response> {
    let info = req.info;
    let params_for_table = params.clone();
    let form: FormOf = match output.form {
        Form::Table => {
            // As Kubernetes streams tables: one row per event, bookmarks included (their row's
            // object carries the bookmark's annotations), column definitions in the first only.
            let first = std::sync::atomic::AtomicBool::new(true);
            Arc::new(move |kind: &str, data: &[u8]| {
                let obj: Value = serde_json::from_slice(data).unwrap_or(Value::Null);
                let object = match (kind, table_form::watch_table(info, &obj, &params_for_table)) {
                    ("ERROR", _) | (_, Err(_)) => obj,
                    (_, Ok(mut table)) => {
                        if !first.swap(false, std::sync::atomic::Ordering::Relaxed) {
                            table["columnDefinitions"] = Value::Null;
                        }
                        table
                    }
                };
                Cow::Owned(serde_json::to_vec(&object).unwrap_or_default())
            })
        }
        Form::Metadata => Arc::new(|kind: &str, data: &[u8]| match kind {
            "ERROR" => Cow::Borrowed(data),
            _ => {
                let obj: Value = serde_json::from_slice(data).unwrap_or(Value::Null);
                Cow::Owned(serde_json::to_vec(&metadata_form::object(&obj)).unwrap_or_default())
            }
        }),
        Form::Object => Arc::new(|_: &str, data: &[u8]| Cow::Borrowed(data)),
    };
    // The name watchers of one event share its encoded object under (encoding, form, version),
    // when there is one to share: a table's rows differ (the first carries the columns), a CBOR
    // frame is made whole, and JSON (or YAML) objects go out as stored.
    let shared = match (output.encoding, output.form) {
        (_, Form::Table) | (Encoding::Cbor, _) | (Encoding::Json | Encoding::Yaml, Form::Object) => None,
        (encoding, form) => Some(format!("{encoding:?} {form:?} {}", info.api_version())),
    };
    let encoder = match output.encoding {
        Encoding::Protobuf => watch::Encoder {
            object: Box::new(move |kind: &str, data: Bytes| {
                let obj: Value = serde_json::from_slice(&form(kind, &data)).map_err(ApiError::internal)?;
                Ok(Bytes::from(machinery::protobuf::encode_object(&obj)?))
            }),
            frame: |kind, object| Bytes::from(machinery::protobuf::watch_frame(kind, &object)),
            shared,
        },
        Encoding::Cbor => watch::Encoder {
            // The whole frame, the object inside it: nothing of it is shared.
            object: Box::new(move |kind: &str, data: Bytes| {
                let obj: Value = serde_json::from_slice(&form(kind, &data)).map_err(ApiError::internal)?;
                Ok(Bytes::from(machinery::cbor::watch_frame(kind, &obj)?))
            }),
            frame: |_, frame| frame,
            shared,
        },
        _ => watch::Encoder {
            object: Box::new(move |kind: &str, data: Bytes| {
                Ok(match form(kind, &data) {
                    Cow::Borrowed(_) => data.clone(),
                    Cow::Owned(changed) => Bytes::from(changed),
                })
            }),
            frame: |kind, object| frame(kind, &object),
            shared,
        },
    };
    let rx = watch::watch(ctx, req, params, encoder).await?;
    let stream = tokio_stream::wrappers::ReceiverStream::new(rx);
    let body = Body::from_stream(futures::StreamExt::map(stream, Ok::<_, std::convert::Infallible>));
    let mut resp = Response::new(body);
    resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(output.content_type(true)));
    resp.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache, private"));
    Ok(resp)
}

/// One watch event as a line of JSON: `{"type":"ADDED","object":{...}}`.
fn frame(kind: &str, object: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(object.len() + 32);
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(kind.as_bytes());
    out.extend_from_slice(b"\",\"object\":");
    out.extend_from_slice(object);
    out.extend_from_slice(b"}\n");
    Bytes::from(out)
}
