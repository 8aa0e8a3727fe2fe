//! A traced request's own spans. The request's span is kube-apiserver's `KubernetesAPI` span,
//! named as it names it (`POST /api/v1/namespaces/{:namespace}/configmaps`, the method alone for
//! a path that is not a resource's), started when the request arrived; under it the stages of the
//! chain (`authentication`, `priorityandfairness`, `authorization`), then the handler's span named
//! for its verb (`Create`, `Get`, `List`, ...) with kube-apiserver's attributes, and below that
//! admission, the storage call and the write's Raft spans.
//!
//! A client's `traceparent` is honoured as the parent when the client is privileged
//! (`system:masters` or `system:monitoring`), as kube-apiserver honours it; anyone else's is
//! recorded as a link, so that no client can make the server trace at will. No credential is ever
//! an attribute: the headers recorded are the user agent and the accepted media types.

use std::collections::HashMap;
use std::time::SystemTime;

use access::request::{ResourceRequest, Verb};
use access::UserInfo;
use http::request::Parts;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{Link, Span as _, SpanKind, Status, TraceContextExt, Tracer};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracer;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The trace of one sampled request; its span ends with [`RequestTrace::end`] (or when dropped).
pub struct RequestTrace {
    cx: Context,
    audit_id: String,
}

/// Groups whose `traceparent` is taken as the request's parent.
const PRIVILEGED: [&str; 2] = ["system:masters", "system:monitoring"];

/// The longest user agent recorded, as kube-apiserver truncates it.
const MAX_USER_AGENT: usize = 256;

impl RequestTrace {
    /// The request's span, when the request is sampled: started at `received`, with its
    /// authentication (`authn`: from, to) as its first child.
    pub fn begin(tracer: &SdkTracer, parts: &Parts, user: &UserInfo, audit_id: &str, received: SystemTime, authn: (SystemTime, SystemTime)) -> Option<RequestTrace> {
        // Most requests carry no trace context and are not sampled: they allocate nothing here.
        let remote = if parts.headers.contains_key("traceparent") {
            let carrier: HashMap<String, String> = ["traceparent", "tracestate"]
                .into_iter()
                .filter_map(|h| Some((h.to_string(), parts.headers.get(h)?.to_str().ok()?.to_string())))
                .collect();
            TraceContextPropagator::new().extract(&carrier)
        } else {
            Context::new()
        };
        let remote_span = remote.span().span_context().clone();
        let mut builder = tracer.span_builder(parts.method.as_str().to_owned()).with_kind(SpanKind::Server).with_start_time(received);
        let privileged = user.groups.iter().any(|g| PRIVILEGED.contains(&g.as_str()));
        let parent = if privileged || !remote_span.is_valid() {
            remote
        } else {
            builder = builder.with_links(vec![Link::with_context(remote_span)]);
            Context::new()
        };
        let mut span = tracer.build_with_context(builder, &parent);
        if !span.span_context().is_sampled() {
            return None;
        }
        let target = parts.uri.path_and_query().map_or(parts.uri.path(), |pq| pq.as_str()).to_string();
        span.set_attributes([
            KeyValue::new("http.request.method", parts.method.to_string()),
            KeyValue::new("http.target", target),
            KeyValue::new("audit-id", audit_id.to_string()),
            KeyValue::new("user_agent.original", user_agent(parts)),
        ]);
        let cx = parent.with_span(span);
        let mut authentication = tracer.span_builder("authentication").with_start_time(authn.0).start_with_context(tracer, &cx);
        authentication.end_with_timestamp(authn.1);
        Some(RequestTrace { cx, audit_id: audit_id.to_string() })
    }

    /// Names the span for the resource request it turned out to be, as kube-apiserver names it.
    pub fn classified(&self, method: &http::Method, req: &ResourceRequest) {
        let info = req.info;
        let mut name = format!("{method} /{}", if info.group.is_empty() { "api" } else { "apis" });
        if !info.group.is_empty() {
            name.push('/');
            name.push_str(info.group);
        }
        name.push('/');
        name.push_str(info.version);
        if req.namespace.is_some() {
            name.push_str("/namespaces/{:namespace}");
        }
        name.push('/');
        name.push_str(info.resource);
        if req.name.is_some() {
            name.push_str("/{:name}");
        }
        if let Some(sub) = &req.subresource {
            name.push('/');
            name.push_str(sub);
        }
        self.cx.span().update_name(name);
    }

    /// A span of one stage of the chain (`authorization`, ...), child of the request's.
    pub fn stage(&self, name: &'static str) -> tracing::Span {
        let span = tracing::info_span!(target: raft_store::trace::TARGET, parent: None, "span", otel.name = name);
        let _ = span.set_parent(self.cx.clone());
        span
    }

    /// Ends the request's span with the status it was answered with.
    pub fn end(self, status: http::StatusCode) {
        let span = self.cx.span();
        span.set_attribute(KeyValue::new("http.response.status_code", i64::from(status.as_u16())));
        if status.is_server_error() {
            span.set_status(Status::error(status.to_string()));
        }
        span.end();
    }
}

/// The handler's span for `req`, named for its verb as kube-apiserver's handlers name theirs,
/// with their attributes: a child of the chain's `stage`.
pub fn handler_span(trace: &RequestTrace, req: &ResourceRequest, parts: &Parts, watch_list: bool) -> tracing::Span {
    let name = match req.verb {
        Verb::Get => "Get",
        Verb::List if watch_list => "WatchList",
        Verb::List => "List",
        Verb::Watch => "WatchServer.HandleHTTP",
        Verb::Create => "Create",
        Verb::Update => "Update",
        Verb::Patch => "Patch",
        Verb::Delete | Verb::DeleteCollection => "Delete",
    };
    let span = trace.stage(name);
    let header = |h: http::header::HeaderName| parts.headers.get(h).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    let scope = match (&req.namespace, &req.name) {
        (_, Some(_)) => "resource",
        (Some(_), None) => "namespace",
        (None, None) => "cluster",
    };
    for (key, value) in [
        ("accept", header(http::header::ACCEPT)),
        ("audit-id", trace.audit_id.clone()),
        ("api-group", req.info.group.to_string()),
        ("api-version", req.info.version.to_string()),
        ("name", req.name().to_string()),
        ("subresource", req.subresource.clone().unwrap_or_default()),
        ("namespace", req.namespace.clone().unwrap_or_default()),
        ("protocol", format!("{:?}", parts.version).trim_start_matches("HTTP/").to_string()),
        ("resource", req.info.resource.to_string()),
        ("scope", scope.to_string()),
        ("url", parts.uri.path().to_string()),
        ("user-agent", user_agent(parts)),
        ("verb", parts.method.to_string()),
    ] {
        span.set_attribute(key, value);
    }
    span
}

fn user_agent(parts: &Parts) -> String {
    let agent = parts.headers.get(http::header::USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or("");
    agent.chars().take(MAX_USER_AGENT).collect()
}
