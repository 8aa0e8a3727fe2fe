//! kube-apiserver's audit figures: events emitted, events a backend failed to record, and audited
//! requests by level.

use prometheus::{IntCounter, IntCounterVec, Registry};

use super::family::{self, Level};

pub struct Audit {
    events: IntCounter,
    errors: IntCounterVec,
    levels: IntCounterVec,
}

impl Audit {
    pub(super) fn new(r: &Registry) -> Audit {
        Audit {
            events: family::single_counter(r, "apiserver_audit_event_total", Level::Alpha, "Counter of audit events generated and sent to the audit backend."),
            errors: family::counter(
                r,
                "apiserver_audit_error_total",
                Level::Alpha,
                "Counter of audit events that failed to be audited properly. Plugin identifies the plugin affected by the error.",
                &["plugin"],
            ),
            levels: family::counter(r, "apiserver_audit_level_total", Level::Alpha, "Counter of policy levels for audit events (1 per request).", &["level"]),
        }
    }

    /// Counts one event emitted.
    pub fn event(&self) {
        self.events.inc();
    }

    /// Counts `n` events the backend `plugin` (`log`, `webhook`) could not record.
    pub fn failed(&self, plugin: &str, n: usize) {
        self.errors.with_label_values(&[plugin]).inc_by(n as u64);
    }

    /// Counts one request the policy audits at `level`.
    pub fn level(&self, level: &str) {
        self.levels.with_label_values(&[level]).inc();
    }
}
