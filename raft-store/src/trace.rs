//! A write's trace across replicas. A request the API server traces carries its W3C
//! `traceparent` in the transaction it proposes, so that the forward to the leader, the proposal,
//! every replica's append and flush, every apply and every watch fan-out of its entry are spans of
//! the one trace the client's request began, whichever replica each of them runs on.
//!
//! Spans are `tracing` spans under [`TARGET`], which only the OpenTelemetry layer listens to; a
//! write that is not traced creates none.

use std::collections::HashMap;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing::Span;
/// What sets a span's attributes and events (and its parent), for the layers above.
pub use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The target of every span of a request's trace: exported, never logged.
pub const TARGET: &str = "apiserver::trace";

/// A span named `name`, child of the current span when that is a span of a traced request;
/// otherwise a disabled span, which costs nothing.
pub fn child(name: &'static str) -> Span {
    if !traced(&Span::current()) {
        return Span::none();
    }
    tracing::info_span!(target: TARGET, "span", otel.name = name)
}

/// A span named `name` in the trace `traceparent` names, as its parent's child.
pub fn continued(traceparent: &str, name: &'static str) -> Span {
    let span = tracing::info_span!(target: TARGET, parent: None, "span", otel.name = name);
    if !span.is_disabled() {
        let carrier = HashMap::from([(TRACEPARENT.to_string(), traceparent.to_string())]);
        let _ = span.set_parent(TraceContextPropagator::new().extract(&carrier));
    }
    span
}

/// The `traceparent` of `span` for a transaction to carry, when it is part of a sampled trace.
pub fn traceparent(span: &Span) -> Option<String> {
    if !traced(span) {
        return None;
    }
    let cx = span.context();
    if !cx.span().span_context().is_sampled() {
        return None;
    }
    let mut carrier = HashMap::new();
    TraceContextPropagator::new().inject_context(&cx, &mut carrier);
    carrier.remove(TRACEPARENT)
}

/// Whether `span` is one of a traced request's (and not, say, a span of the Raft library's).
fn traced(span: &Span) -> bool {
    span.metadata().is_some_and(|m| m.target() == TARGET)
}

const TRACEPARENT: &str = "traceparent";
