//! kube-apiserver's authorization figures: each authorizer's decisions, webhook calls, reloads of
//! the authorization configuration, and the attempts of the authorization filter.

use std::time::Duration;

use access::authz::metrics::AuthorizationMetrics;
use prometheus::{GaugeVec, HistogramVec, IntCounterVec, Registry};

use super::family::{self, Level};
use super::Metrics;

pub struct Authorization {
    decisions: IntCounterVec,
    webhook_evaluations: IntCounterVec,
    webhook_fail_open: IntCounterVec,
    match_condition_errors: IntCounterVec,
    reloads: IntCounterVec,
    reload_time: GaugeVec,
    attempts: IntCounterVec,
    duration: HistogramVec,
}

impl Authorization {
    pub(super) fn new(r: &Registry) -> Authorization {
        Authorization {
            decisions: family::counter(
                r,
                "apiserver_authorization_decisions_total",
                Level::Alpha,
                "Total number of terminal decisions made by an authorizer split by authorizer type, name, and decision.",
                &["type", "name", "decision"],
            ),
            webhook_evaluations: family::counter(
                r,
                "apiserver_authorization_webhook_evaluations_total",
                Level::Alpha,
                "Round-trips to authorization webhooks.",
                &["name", "result"],
            ),
            webhook_fail_open: family::counter(
                r,
                "apiserver_authorization_webhook_evaluations_fail_open_total",
                Level::Alpha,
                "NoOpinion results due to webhook timeout or error.",
                &["name", "result"],
            ),
            match_condition_errors: family::counter(
                r,
                "apiserver_authorization_match_condition_evaluation_errors_total",
                Level::Alpha,
                "Total number of errors when an authorization webhook encounters a match condition error split by authorizer type and name.",
                &["type", "name"],
            ),
            reloads: family::counter(
                r,
                "apiserver_authorization_config_controller_automatic_reloads_total",
                Level::Alpha,
                "Total number of automatic reloads of authorization configuration split by status and apiserver identity.",
                &["status", "apiserver_id_hash"],
            ),
            reload_time: family::float_gauge(
                r,
                "apiserver_authorization_config_controller_automatic_reload_last_timestamp_seconds",
                Level::Alpha,
                "Timestamp of the last automatic reload of authorization configuration split by status and apiserver identity.",
                &["status", "apiserver_id_hash"],
            ),
            attempts: family::counter(
                r,
                "authorization_attempts_total",
                Level::Alpha,
                "Counter of authorization attempts broken down by result. It can be either 'allowed', 'denied', 'no-opinion' or 'error'.",
                &["result"],
            ),
            duration: family::histogram(
                r,
                "authorization_duration_seconds",
                Level::Alpha,
                "Authorization duration in seconds broken out by result.",
                &["result"],
                &family::exponential(0.001, 2.0, 15),
            ),
        }
    }

    /// Counts one pass of the authorization filter: `allowed`, `denied` or `error`.
    pub fn observe(&self, result: &str, took: Duration) {
        self.attempts.with_label_values(&[result]).inc();
        self.duration.with_label_values(&[result]).observe(took.as_secs_f64());
    }
}

impl AuthorizationMetrics for Metrics {
    fn authorization_decision(&self, kind: &str, name: &str, allowed: bool) {
        let decision = if allowed { "allowed" } else { "denied" };
        self.authorization.decisions.with_label_values(&[kind, name, decision]).inc();
    }

    fn authorization_webhook_evaluation(&self, name: &str, result: &str) {
        self.authorization.webhook_evaluations.with_label_values(&[name, result]).inc();
    }

    fn authorization_webhook_fail_open(&self, name: &str, result: &str) {
        self.authorization.webhook_fail_open.with_label_values(&[name, result]).inc();
    }

    fn authorization_match_condition_error(&self, name: &str) {
        self.authorization.match_condition_errors.with_label_values(&["Webhook", name]).inc();
    }

    fn authorization_config_reload(&self, success: bool, apiserver_id_hash: &str) {
        let labels = [if success { "success" } else { "failure" }, apiserver_id_hash];
        self.authorization.reloads.with_label_values(&labels).inc();
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs_f64();
        self.authorization.reload_time.with_label_values(&labels).set(now);
    }
}
