//! What kube-apiserver counts of every request: `apiserver_request_total`, its latency (and the
//! latency its SLOs are measured on), the sizes of read responses, the requests that last (watches)
//! and the requests executing at once.

use std::sync::atomic::{AtomicI64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use prometheus::{HistogramVec, IntCounterVec, IntGaugeVec, Registry};

use super::family::{self, Level};

/// kube-apiserver's request latency buckets, in seconds.
const LATENCY: &[f64] = &[0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0];
/// The SLI latency's buckets: those from 50 ms on.
const SLI_LATENCY: &[f64] = &[0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0];
/// Every request metric names the component that served it.
const COMPONENT: &str = "apiserver";

/// What one request is counted under, named as kube-apiserver names them; names from the
/// registry of kinds, so that labelling a request allocates nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestLabels {
    /// `GET`, `LIST`, `WATCH`, `POST`, `PUT`, `PATCH`, `APPLY`, `DELETE`, `DELETECOLLECTION`,
    /// `CONNECT`; the HTTP method for a path that names no resource.
    pub verb: &'static str,
    pub group: &'static str,
    pub version: &'static str,
    pub resource: &'static str,
    pub subresource: &'static str,
    /// `resource` (one object, or a create), `namespace` (a namespace's collection), `cluster`
    /// (any other collection); empty for a path that names no resource.
    pub scope: &'static str,
    /// `All` for a dry run, else empty.
    pub dry_run: &'static str,
}

impl RequestLabels {
    fn values(&self) -> [&'static str; 8] {
        [self.verb, self.dry_run, self.group, self.version, self.resource, self.subresource, self.scope, COMPONENT]
    }

    /// The labels without `dry_run`, in the order the families below declare them.
    fn without_dry_run(&self) -> [&'static str; 7] {
        [self.verb, self.group, self.version, self.resource, self.subresource, self.scope, COMPONENT]
    }
}

/// The request families.
pub struct Requests {
    total: IntCounterVec,
    duration: HistogramVec,
    sli: HistogramVec,
    sizes: HistogramVec,
    longrunning: IntGaugeVec,
    inflight: IntGaugeVec,
    /// Read-only, then mutating: how many execute now, and the most since the last scrape.
    executing: [Arc<Watermark>; 2],
}

impl Requests {
    pub(super) fn new(r: &Registry) -> Requests {
        let with_dry_run = &["verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component"];
        let labels = &["verb", "group", "version", "resource", "subresource", "scope", "component"];
        let mut counted = with_dry_run.to_vec();
        counted.push("code");
        Requests {
            total: family::counter(
                r,
                "apiserver_request_total",
                Level::Stable,
                "Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.",
                &counted,
            ),
            duration: family::histogram(
                r,
                "apiserver_request_duration_seconds",
                Level::Stable,
                "Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.",
                with_dry_run,
                LATENCY,
            ),
            sli: family::histogram(
                r,
                "apiserver_request_sli_duration_seconds",
                Level::Alpha,
                "Response latency distribution (not counting webhook duration and priority & fairness queue wait times) in seconds for each verb, group, version, resource, subresource, scope and component.",
                labels,
                SLI_LATENCY,
            ),
            sizes: family::histogram(
                r,
                "apiserver_response_sizes",
                Level::Stable,
                "Response size distribution in bytes for each group, version, verb, resource, subresource, scope and component.",
                labels,
                &family::exponential(1000.0, 10.0, 7),
            ),
            longrunning: family::gauge(
                r,
                "apiserver_longrunning_requests",
                Level::Stable,
                "Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component. Not all requests are tracked this way.",
                labels,
            ),
            inflight: family::gauge(
                r,
                "apiserver_current_inflight_requests",
                Level::Stable,
                "Maximal number of currently used inflight request limit of this apiserver per request kind in last second.",
                &["request_kind"],
            ),
            executing: Default::default(),
        }
    }

    /// Counts one finished request: its code, its latency from arrival, the part of it spent
    /// neither queued by flow control nor in admission webhooks, and (for a read) its size.
    pub fn observe(&self, l: &RequestLabels, code: http::StatusCode, took: Duration, waited: Duration, size: Option<u64>) {
        let v = l.values();
        let mut counted = [""; 9];
        counted[..8].copy_from_slice(&v);
        counted[8] = code.as_str();
        self.total.with_label_values(&counted).inc();
        self.duration.with_label_values(&v).observe(took.as_secs_f64());
        // kube-apiserver leaves dry runs out of its SLI.
        if l.dry_run.is_empty() {
            self.sli.with_label_values(&l.without_dry_run()).observe(took.saturating_sub(waited).as_secs_f64());
        }
        if let Some(size) = size {
            self.response_size(l, size);
        }
    }

    /// Counts the size of a read's answer (kube-apiserver counts those of GET and LIST only).
    pub fn response_size(&self, l: &RequestLabels, bytes: u64) {
        if matches!(l.verb, "GET" | "LIST") {
            self.sizes.with_label_values(&l.without_dry_run()).observe(bytes as f64);
        }
    }

    /// Counts a request that lasts (a watch, a followed log) for as long as the guard lives.
    pub fn long_running(&self, l: &RequestLabels) -> LongRunning {
        let gauge = self.longrunning.with_label_values(&l.without_dry_run());
        gauge.inc();
        LongRunning(gauge)
    }

    /// Counts a request holding an execution seat (mutating or read-only) while the guard lives.
    pub fn executing(&self, mutating: bool) -> Executing {
        let w = self.executing[usize::from(mutating)].clone();
        w.enter();
        Executing(w)
    }

    /// Publishes the in-flight high-water marks since the last scrape, and starts new ones.
    pub(super) fn publish(&self) {
        for (kind, w) in ["readOnly", "mutating"].into_iter().zip(&self.executing) {
            self.inflight.with_label_values(&[kind]).set(w.take());
        }
    }
}

/// A long-running request, counted until dropped.
pub struct LongRunning(prometheus::IntGauge);

impl Drop for LongRunning {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// Requests executing now, and the most at once since it was last read.
#[derive(Default)]
struct Watermark {
    now: AtomicI64,
    most: AtomicI64,
}

impl Watermark {
    fn enter(&self) {
        let now = self.now.fetch_add(1, Relaxed) + 1;
        self.most.fetch_max(now, Relaxed);
    }

    /// The most since the last call; the next period starts from those executing now.
    fn take(&self) -> i64 {
        let most = self.most.swap(self.now.load(Relaxed), Relaxed);
        most.max(self.now.load(Relaxed))
    }
}

/// An executing request, counted until dropped.
pub struct Executing(Arc<Watermark>);

impl Drop for Executing {
    fn drop(&mut self) {
        self.0.now.fetch_sub(1, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_high_water_mark_outlives_the_requests_until_it_is_read() {
        let w = Arc::new(Watermark::default());
        let a = Executing({
            w.enter();
            w.clone()
        });
        let b = Executing({
            w.enter();
            w.clone()
        });
        drop(a);
        drop(b);
        assert_eq!(w.take(), 2);
        assert_eq!(w.take(), 0);
    }
}
