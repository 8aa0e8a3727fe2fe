//! `/metrics`: the server's figures under kube-apiserver's names, labels and buckets, and the Raft
//! group's and the database's under etcd's, kept in one `prometheus` registry and rendered in the
//! text format kube-apiserver serves, so that dashboards and alerts made for those work here.

mod audit;
mod authentication;
mod authorization;
mod family;
mod flowcontrol;
mod requests;
mod storage;
mod traces;
mod watch;

use std::sync::Mutex;

use prometheus::{IntGaugeVec, Registry};

pub use authentication::AuthnResult;
pub use flowcontrol::FlowFigures;
pub use requests::{Executing, LongRunning, RequestLabels};
pub use storage::StoreFigures;
pub use traces::SPANS as TRACE_SPANS;
pub use watch::WatchCounters;

use family::Level;

/// The media type of the exposition, as kube-apiserver answers a scraper.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8; escaping=underscores";

/// The server's metrics; one per process.
pub struct Metrics {
    registry: Registry,
    pub requests: requests::Requests,
    pub authentication: authentication::Authentication,
    pub authorization: authorization::Authorization,
    pub audit: audit::Audit,
    pub watch: watch::Watch,
    flowcontrol: flowcontrol::Flowcontrol,
    deprecated: IntGaugeVec,
    features: IntGaugeVec,
    storage: storage::Storage,
    /// One scrape at a time: what a scrape sets, it reads back.
    scrape: Mutex<()>,
}

impl Default for Metrics {
    fn default() -> Self {
        let registry = Registry::new();
        let r = &registry;
        let metrics = Metrics {
            requests: requests::Requests::new(r),
            authentication: authentication::Authentication::new(r),
            authorization: authorization::Authorization::new(r),
            audit: audit::Audit::new(r),
            watch: watch::Watch::new(r),
            flowcontrol: flowcontrol::Flowcontrol::new(r),
            deprecated: family::gauge(
                r,
                "apiserver_requested_deprecated_apis",
                Level::Stable,
                "Gauge of deprecated APIs that have been requested, broken out by API group, version, resource, subresource, and removed_release.",
                &["group", "version", "resource", "subresource", "removed_release"],
            ),
            features: family::gauge(
                r,
                "kubernetes_feature_enabled",
                Level::Beta,
                "This metric records the data about the stage and enablement of a k8s feature.",
                &["name", "stage"],
            ),
            storage: storage::Storage::new(r),
            scrape: Mutex::new(()),
            registry,
        };
        // CPU, memory, file descriptors and start time, as every Prometheus client library names them.
        metrics.registry.register(Box::new(prometheus::process_collector::ProcessCollector::for_self())).expect("registered once");
        // Shared by the process's one tracer provider; the registry of the process's one server.
        let _ = metrics.registry.register(Box::new(traces::SPANS.clone()));
        metrics
    }
}

impl Metrics {
    /// Marks a deprecated API as requested (`removed_release` empty when no removal is planned).
    pub fn deprecated_api_requested(&self, group: &str, version: &str, resource: &str, subresource: &str, removed_release: &str) {
        self.deprecated.with_label_values(&[group, version, resource, subresource, removed_release]).set(1);
    }

    /// The text exposition of every metric, with the store's and the dispatcher's figures of now.
    pub fn render(&self, store: &StoreFigures, flow: &FlowFigures) -> String {
        let _one = self.scrape.lock().unwrap_or_else(|e| e.into_inner());
        self.storage.set(store);
        self.flowcontrol.set(flow);
        self.requests.publish();
        for (name, stage, on) in machinery::features::current().all() {
            self.features.with_label_values(&[name, stage.label()]).set(i64::from(on));
        }
        let mut families = self.registry.gather();
        families.push(storage::fsync_family(&store.raft));
        if !store.peer_round_trips.is_empty() {
            families.push(storage::round_trip_family(store));
        }
        families.sort_by(|a, b| a.name().cmp(b.name()));
        let mut out = String::new();
        // Writing to a string fails only on a family without metrics, which `gather` leaves out.
        if let Err(e) = prometheus::TextEncoder::new().encode_utf8(&families, &mut out) {
            tracing::warn!(error = %e, "rendering the metrics");
        }
        out
    }
}

#[cfg(test)]
mod tests;
