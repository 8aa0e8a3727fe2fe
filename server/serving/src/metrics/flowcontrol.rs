//! API Priority and Fairness under kube-apiserver's names: requests dispatched and rejected, their
//! wait in the queues, and (read at each scrape) each priority level's seats and each flow's
//! queued and executing requests.

use std::collections::BTreeMap;
use std::time::Duration;

use prometheus::{HistogramVec, IntCounterVec, IntGaugeVec, Registry};

use super::family::{self, Level};
use super::Metrics;

/// kube-apiserver's buckets for the time a request waits in its queue.
const WAIT: &[f64] = &[0.0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0];

pub struct Flowcontrol {
    dispatched: IntCounterVec,
    rejected: IntCounterVec,
    wait: HistogramVec,
    nominal_seats: IntGaugeVec,
    inqueue: IntGaugeVec,
    executing: IntGaugeVec,
}

/// The dispatcher's state at a scrape.
#[derive(Debug, Default)]
pub struct FlowFigures {
    /// Nominal seats by priority level.
    pub nominal_seats: Vec<(String, u64)>,
    /// (queued, executing) by (priority level, flow schema).
    pub current: BTreeMap<(String, String), (usize, usize)>,
}

impl Flowcontrol {
    pub(super) fn new(r: &Registry) -> Flowcontrol {
        let flow = &["priority_level", "flow_schema"];
        Flowcontrol {
            dispatched: family::counter(r, "apiserver_flowcontrol_dispatched_requests_total", Level::Beta, "Number of requests executed by API Priority and Fairness subsystem", flow),
            rejected: family::counter(
                r,
                "apiserver_flowcontrol_rejected_requests_total",
                Level::Beta,
                "Number of requests rejected by API Priority and Fairness subsystem",
                &["priority_level", "flow_schema", "reason"],
            ),
            wait: family::histogram(
                r,
                "apiserver_flowcontrol_request_wait_duration_seconds",
                Level::Beta,
                "Length of time a request spent waiting in its queue",
                &["priority_level", "flow_schema", "execute"],
                WAIT,
            ),
            nominal_seats: family::gauge(
                r,
                "apiserver_flowcontrol_nominal_limit_seats",
                Level::Beta,
                "Nominal number of execution seats configured for each priority level",
                &["priority_level"],
            ),
            inqueue: family::gauge(
                r,
                "apiserver_flowcontrol_current_inqueue_requests",
                Level::Beta,
                "Number of requests currently pending in queues of the API Priority and Fairness subsystem",
                flow,
            ),
            executing: family::gauge(
                r,
                "apiserver_flowcontrol_current_executing_requests",
                Level::Beta,
                "Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage in the API Priority and Fairness subsystem",
                flow,
            ),
        }
    }

    /// Sets the scrape-time gauges from `f` (levels and flows gone since vanish).
    pub(super) fn set(&self, f: &FlowFigures) {
        self.nominal_seats.reset();
        for (level, seats) in &f.nominal_seats {
            self.nominal_seats.with_label_values(&[level]).set(*seats as i64);
        }
        self.inqueue.reset();
        self.executing.reset();
        for ((level, schema), (queued, executing)) in &f.current {
            self.inqueue.with_label_values(&[level, schema]).set(*queued as i64);
            self.executing.with_label_values(&[level, schema]).set(*executing as i64);
        }
    }
}

impl Metrics {
    /// Counts a request given its seat at a priority level after `waited` in its queue.
    pub fn flowcontrol_dispatched(&self, flow_schema: &str, priority_level: &str, waited: Duration) {
        let f = &self.flowcontrol;
        f.dispatched.with_label_values(&[priority_level, flow_schema]).inc();
        f.wait.with_label_values(&[priority_level, flow_schema, "true"]).observe(waited.as_secs_f64());
    }

    /// Counts a request its priority level refused (`queue-full`, `concurrency-limit`,
    /// `time-out`) after `waited`.
    pub fn flowcontrol_rejected(&self, flow_schema: &str, priority_level: &str, reason: &str, waited: Duration) {
        let f = &self.flowcontrol;
        f.rejected.with_label_values(&[priority_level, flow_schema, reason]).inc();
        f.wait.with_label_values(&[priority_level, flow_schema, "false"]).observe(waited.as_secs_f64());
    }
}
