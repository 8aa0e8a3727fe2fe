//! The tracer provider of a node: sampled as kube-apiserver samples (the parent's decision, or
//! `samplingRatePerMillion` for a request without a sampled parent), its spans handed to a bounded
//! queue and exported in batches over OTLP/gRPC by one task. A full queue drops spans and a
//! batch the receiver does not take is given up, both counted in `apiserver_tracing_spans_total`:
//! an unreachable receiver never slows a request. What is queued at shutdown is sent first.

use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{Sampler, SdkTracer, SdkTracerProvider, Span, SpanData, SpanExporter, SpanProcessor};
use opentelemetry_sdk::Resource;
use tokio::sync::mpsc;

use super::config::TracingConfig;
use crate::metrics::TRACE_SPANS as SPANS;

/// Spans waiting for export at most (the OpenTelemetry SDK's default queue).
const QUEUE: usize = 2048;
/// Spans per export call at most.
const BATCH: usize = 512;
/// How long a span waits for companions before its batch is sent.
const LINGER: Duration = Duration::from_millis(500);
/// How long one export may take before its batch is given up.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long shutdown waits for the queue to be sent.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);

/// A node's traces while they are exported: the tracer of its requests' own spans, and the
/// provider the `tracing` layer's spans go through.
pub struct Exporting {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
}

impl Exporting {
    /// Starts exporting to `config.endpoint`, this node named `instance` in every span's
    /// resource (`service.name` is `apiserver`, as kube-apiserver's).
    pub fn start(config: &TracingConfig, instance: &str) -> anyhow::Result<Exporting> {
        let resource = Resource::builder_empty()
            .with_service_name("apiserver")
            .with_attribute(KeyValue::new("service.instance.id", instance.to_string()))
            .build();
        let mut exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .with_endpoint(format!("http://{}", config.endpoint))
            .with_timeout(EXPORT_TIMEOUT)
            .build()?;
        exporter.set_resource(&resource);
        let rate = f64::from(config.sampling_rate_per_million) / 1_000_000.0;
        let sampler = if config.sampling_rate_per_million == 0 { Sampler::AlwaysOff } else { Sampler::TraceIdRatioBased(rate) };
        let provider = SdkTracerProvider::builder()
            .with_sampler(Sampler::ParentBased(Box::new(sampler)))
            .with_resource(resource)
            .with_span_processor(Queue::start(exporter))
            .build();
        let tracer = provider.tracer("k8s.io/apiserver");
        Ok(Exporting { provider, tracer })
    }

    /// The tracer of requests' spans.
    pub fn tracer(&self) -> SdkTracer {
        self.tracer.clone()
    }

    /// The `tracing` layer that exports the spans of `raft_store::trace::TARGET` (and nothing
    /// else) through this provider.
    pub fn layer<S>(&self) -> impl tracing_subscriber::Layer<S>
    where
        S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
    {
        use tracing_subscriber::Layer as _;
        // Only the spans' own attributes: no source locations, threads, targets or busy times.
        tracing_opentelemetry::layer()
            .with_tracer(self.provider.tracer("k8s.io/apiserver/raft"))
            .with_location(false)
            .with_threads(false)
            .with_target(false)
            .with_tracked_inactivity(false)
            .with_filter(tracing_subscriber::filter::Targets::new().with_target(raft_store::trace::TARGET, tracing::Level::TRACE))
    }

    /// Sends what is queued (waiting up to a few seconds), then stops.
    pub async fn shutdown(self) {
        let provider = self.provider;
        let _ = tokio::task::spawn_blocking(move || provider.shutdown_with_timeout(SHUTDOWN_WAIT)).await;
    }
}

/// The processor: spans into a bounded queue, a task exporting them.
#[derive(Debug)]
struct Queue {
    spans: mpsc::Sender<SpanData>,
    flushes: mpsc::UnboundedSender<std::sync::mpsc::SyncSender<()>>,
}

impl Queue {
    fn start<E: SpanExporter + 'static>(exporter: E) -> Queue {
        let (spans, rx) = mpsc::channel(QUEUE);
        let (flushes, flush_rx) = mpsc::unbounded_channel();
        tokio::spawn(export(exporter, rx, flush_rx));
        Queue { spans, flushes }
    }

    /// Asks the task to send what is queued and waits for it, up to `wait` (on a thread that may
    /// block: shutdown runs on one).
    fn flush(&self, wait: Duration) -> OTelSdkResult {
        let (done, sent) = std::sync::mpsc::sync_channel(1);
        self.flushes.send(done).map_err(|_| OTelSdkError::AlreadyShutdown)?;
        sent.recv_timeout(wait).map_err(|_| OTelSdkError::Timeout(wait))
    }
}

impl SpanProcessor for Queue {
    fn on_start(&self, _span: &mut Span, _cx: &Context) {}

    fn on_end(&self, span: SpanData) {
        if !span.span_context.is_sampled() {
            return;
        }
        if self.spans.try_send(span).is_err() {
            SPANS.with_label_values(&["dropped"]).inc();
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.flush(SHUTDOWN_WAIT)
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.flush(timeout)
    }
}

/// Sends batches as they fill or linger; a flush request is answered once everything queued
/// before it has been sent.
async fn export<E: SpanExporter>(exporter: E, mut rx: mpsc::Receiver<SpanData>, mut flushes: mpsc::UnboundedReceiver<std::sync::mpsc::SyncSender<()>>) {
    let mut batch = Vec::with_capacity(BATCH);
    loop {
        let flush = tokio::select! {
            span = rx.recv() => match span {
                Some(span) => {
                    batch.push(span);
                    let until = tokio::time::Instant::now() + LINGER;
                    while batch.len() < BATCH {
                        match tokio::time::timeout_at(until, rx.recv()).await {
                            Ok(Some(span)) => batch.push(span),
                            _ => break,
                        }
                    }
                    None
                }
                None => return,
            },
            done = flushes.recv() => {
                while let Ok(span) = rx.try_recv() {
                    batch.push(span);
                }
                done
            }
        };
        while !batch.is_empty() {
            let rest = if batch.len() > BATCH { batch.split_off(BATCH) } else { Vec::new() };
            let n = batch.len() as u64;
            let sent = std::mem::replace(&mut batch, rest);
            match tokio::time::timeout(EXPORT_TIMEOUT, exporter.export(sent)).await {
                Ok(Ok(())) => SPANS.with_label_values(&["exported"]).inc_by(n),
                outcome => {
                    SPANS.with_label_values(&["failed"]).inc_by(n);
                    tracing::debug!(spans = n, timed_out = outcome.is_err(), "a batch of spans was not exported");
                }
            }
        }
        if let Some(done) = flush {
            let _ = done.send(());
        }
    }
}
