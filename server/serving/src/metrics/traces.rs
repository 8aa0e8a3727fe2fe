//! What became of the spans of traced requests: exported, dropped because the export queue was
//! full, or lost with a batch the receiver did not take. One set per process, as the tracer
//! provider is; this server's own names (kube-apiserver counts none of this).

use std::sync::LazyLock;

use prometheus::{IntCounterVec, Opts};

use super::family::{help, Level};

/// `apiserver_tracing_spans_total{result}`: `exported`, `dropped` (queue full) or `failed`.
pub static SPANS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    let text = "Counter of the spans of traced requests, by what became of them: exported, dropped because the export queue was full, or failed with their batch.";
    let spans = IntCounterVec::new(Opts::new("apiserver_tracing_spans_total", help(Level::Alpha, text)), &["result"]).expect("a valid counter");
    for result in ["exported", "dropped", "failed"] {
        spans.with_label_values(&[result]);
    }
    spans
});
