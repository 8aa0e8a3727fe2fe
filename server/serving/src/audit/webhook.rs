//! The webhook backend (`--audit-webhook-config-file`), in kube-apiserver's three modes
//! (`--audit-webhook-mode`). In `blocking` and `blocking-strict` each event is POSTed while its
//! request waits (retried as a batch is); a failure is counted and logged, and in
//! `blocking-strict` a request whose RequestReceived event could not be delivered is refused.
//!
//! In `batch` mode (the default; the `--audit-webhook-batch-*` flags) events wait in a bounded
//! buffer and are POSTed as an
//! `audit.k8s.io/v1` `EventList` to the endpoint the kubeconfig names, at most `max_size` in a
//! batch and at most `max_wait` after the first of it, throttled to `qps` batches a second (with
//! `burst`); a failed batch is retried with a growing backoff, then dropped. A full buffer drops
//! the event rather than make a request wait, so an unreachable webhook never slows the server;
//! what is dropped is counted in `apiserver_audit_error_total{plugin="webhook"}` and logged.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use machinery::webhook::Endpoint;
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::metrics::Metrics;

/// The `--audit-webhook-batch-*` settings (kube-apiserver's defaults in [`Default`]).
#[derive(Debug, Clone, Copy)]
pub struct BatchOptions {
    pub buffer_size: usize,
    pub max_size: usize,
    pub max_wait: Duration,
    /// Batches a second and burst; `None` when throttling is off.
    pub throttle: Option<(f64, u32)>,
    /// `--audit-webhook-initial-backoff`: the wait before the first retry of a failed batch.
    pub initial_backoff: Duration,
}

impl Default for BatchOptions {
    fn default() -> Self {
        BatchOptions { buffer_size: 10_000, max_size: 400, max_wait: Duration::from_secs(30), throttle: Some((10.0, 15)), initial_backoff: Duration::from_secs(10) }
    }
}

/// Tries of a batch, the first included; the wait grows by half each time.
const TRIES: u32 = 5;
/// Longest wait for the webhook's answer to one batch.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// How events reach the webhook (`--audit-webhook-mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Batch,
    Blocking,
    BlockingStrict,
}

impl Mode {
    /// The flag's value, with kube-apiserver's refusal of any other.
    pub fn parse(mode: &str) -> Result<Mode, String> {
        match mode {
            "batch" => Ok(Mode::Batch),
            "blocking" => Ok(Mode::Blocking),
            "blocking-strict" => Ok(Mode::BlockingStrict),
            other => Err(format!("invalid audit webhook mode {other:?}, allowed modes are \"batch,blocking,blocking-strict\"")),
        }
    }
}

/// The sending end: the buffer of batch mode, or the endpoint itself in the blocking modes.
pub struct Webhook {
    sink: Sink,
    metrics: Arc<Metrics>,
    /// Set while the buffer is full, so that the drops are logged once per spell.
    blocked: AtomicBool,
}

enum Sink {
    Batch(mpsc::Sender<Value>),
    Blocking { endpoint: Endpoint, strict: bool, initial_backoff: Duration },
}

impl Webhook {
    /// Starts the sender for the endpoint `endpoint`.
    pub fn start(endpoint: Endpoint, mode: Mode, opts: BatchOptions, metrics: Arc<Metrics>) -> Webhook {
        let sink = match mode {
            Mode::Batch => {
                let (events, rx) = mpsc::channel(opts.buffer_size.max(1));
                tokio::spawn(send_batches(endpoint, rx, opts, metrics.clone()));
                Sink::Batch(events)
            }
            Mode::Blocking | Mode::BlockingStrict => Sink::Blocking { endpoint, strict: mode == Mode::BlockingStrict, initial_backoff: opts.initial_backoff },
        };
        Webhook { sink, metrics, blocked: AtomicBool::new(false) }
    }

    /// Hands `event` on: queued (or dropped, counted, when the buffer is full), or sent while the
    /// caller waits. False only in `blocking-strict` mode, for an event the webhook did not take.
    pub async fn process(&self, event: &Value) -> bool {
        let events = match &self.sink {
            Sink::Batch(events) => events,
            Sink::Blocking { endpoint, strict, initial_backoff } => {
                return match send(endpoint, std::slice::from_ref(event), *initial_backoff).await {
                    Ok(()) => true,
                    Err(e) => {
                        self.metrics.audit.failed("webhook", 1);
                        tracing::error!(error = %e, "audit webhook: an event was not delivered");
                        !strict
                    }
                };
            }
        };
        match events.try_send(event.clone()) {
            Ok(()) => {
                self.blocked.store(false, Ordering::Relaxed);
            }
            Err(e) => {
                self.metrics.audit.failed("webhook", 1);
                if !self.blocked.swap(true, Ordering::Relaxed) {
                    match e {
                        mpsc::error::TrySendError::Full(_) => tracing::error!("audit webhook buffer full: events are dropped until it drains"),
                        mpsc::error::TrySendError::Closed(_) => tracing::error!("audit webhook sender stopped: events are dropped"),
                    }
                }
            }
        }
        true
    }
}

/// Gathers batches from `rx` and sends each, until the buffer's sender is gone.
async fn send_batches(endpoint: Endpoint, mut rx: mpsc::Receiver<Value>, opts: BatchOptions, metrics: Arc<Metrics>) {
    let mut throttle = opts.throttle.map(|(qps, burst)| Bucket::new(qps, burst));
    while let Some(first) = rx.recv().await {
        let mut batch = vec![first];
        let until = Instant::now() + opts.max_wait;
        while batch.len() < opts.max_size {
            match tokio::time::timeout_at(until, rx.recv()).await {
                Ok(Some(event)) => batch.push(event),
                Ok(None) | Err(_) => break,
            }
        }
        if let Some(bucket) = &mut throttle {
            bucket.take().await;
        }
        if let Err(e) = send(&endpoint, &batch, opts.initial_backoff).await {
            metrics.audit.failed("webhook", batch.len());
            tracing::error!(error = %e, events = batch.len(), "audit webhook: a batch of events was dropped");
        }
    }
}

/// POSTs `batch` as an `EventList`, retrying a failure (no answer, or 429 and 5xx).
async fn send(endpoint: &Endpoint, batch: &[Value], initial_backoff: Duration) -> Result<(), String> {
    let body = serde_json::to_vec(&json!({"kind": "EventList", "apiVersion": "audit.k8s.io/v1", "metadata": {}, "items": batch})).map_err(|e| e.to_string())?;
    let mut wait = initial_backoff;
    let mut last = String::new();
    for attempt in 1..=TRIES {
        match endpoint.post_json(body.clone(), CALL_TIMEOUT).await {
            Ok((status, _)) if status.is_success() => return Ok(()),
            // Refused for good: retrying would not help.
            Ok((status, _)) if status.is_client_error() && status != http::StatusCode::TOO_MANY_REQUESTS => return Err(format!("the webhook answered {status}")),
            Ok((status, _)) => last = format!("the webhook answered {status}"),
            Err(e) => last = e.to_string(),
        }
        if attempt < TRIES {
            tokio::time::sleep(wait).await;
            wait = wait.mul_f64(1.5);
        }
    }
    Err(last)
}

/// A token bucket: `qps` tokens a second, at most `burst` saved.
struct Bucket {
    qps: f64,
    burst: f64,
    tokens: f64,
    at: Instant,
}

impl Bucket {
    fn new(qps: f64, burst: u32) -> Bucket {
        let burst = f64::from(burst.max(1));
        Bucket { qps: qps.max(f64::MIN_POSITIVE), burst, tokens: burst, at: Instant::now() }
    }

    /// Waits for a token and takes it.
    async fn take(&mut self) {
        let now = Instant::now();
        self.tokens = (self.tokens + now.duration_since(self.at).as_secs_f64() * self.qps).min(self.burst);
        self.at = now;
        if self.tokens < 1.0 {
            tokio::time::sleep(Duration::from_secs_f64((1.0 - self.tokens) / self.qps)).await;
            self.tokens = 1.0;
            self.at = Instant::now();
        }
        self.tokens -= 1.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_bucket_lets_a_burst_through_then_paces() {
        let mut bucket = Bucket::new(10.0, 3);
        let started = Instant::now();
        for _ in 0..3 {
            bucket.take().await;
        }
        assert!(started.elapsed() < Duration::from_millis(1));
        for _ in 0..5 {
            bucket.take().await;
        }
        let paced = started.elapsed();
        assert!(paced >= Duration::from_millis(490) && paced <= Duration::from_millis(520), "{paced:?}");
    }
}
