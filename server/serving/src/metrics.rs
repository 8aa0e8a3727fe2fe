//! `/metrics` in the Prometheus text format: request counts and latency histograms by verb,
//! resource and code (named as kube-apiserver names them), and this node's Raft state.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Duration;

use access::authz::metrics::AuthorizationMetrics;

use raft_store::RaftStatus;

/// Upper bounds of the latency buckets, in seconds (kube-apiserver's).
const BUCKETS: &[f64] = &[0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0];

/// What one request is counted under: names from the registry of kinds, so that counting a
/// request allocates nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestLabels {
    /// `GET`, `LIST`, `WATCH`, `POST`, `PUT`, `PATCH`, `DELETE`, `DELETECOLLECTION`.
    pub verb: &'static str,
    pub group: &'static str,
    pub version: &'static str,
    pub resource: &'static str,
    pub subresource: &'static str,
}

#[derive(Default)]
struct Latency {
    /// Observations at or below each bucket bound.
    buckets: Vec<u64>,
    count: u64,
    sum: f64,
}

/// Counting is a hash look-up (a fast, non-cryptographic hash: the keys are the server's own
/// names); `/metrics` sorts when it renders.
type Hashed<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

#[derive(Default)]
struct Counters {
    requests: Hashed<(RequestLabels, u16), u64>,
    latency: Hashed<RequestLabels, Latency>,
    /// Labelled series named in [`SERIES`], by name and rendered labels.
    series: BTreeMap<&'static str, Hashed<String, f64>>,
}

thread_local! {
    /// Where a series' labels are rendered before the look-up (no allocation once warm).
    static RENDERED: RefCell<String> = RefCell::new(String::with_capacity(96));
}

/// The labelled series: name, type and help, as kube-apiserver names and describes them.
const SERIES: &[(&str, &str, &str)] = &[
    ("apiserver_authorization_decisions_total", "counter", "Total number of terminal decisions made by an authorizer split by authorizer type, name, and decision."),
    ("apiserver_authorization_webhook_evaluations_total", "counter", "Round-trips to authorization webhooks."),
    ("apiserver_authorization_webhook_evaluations_fail_open_total", "counter", "NoOpinion results due to webhook timeout or error."),
    (
        "apiserver_authorization_match_condition_evaluation_errors_total",
        "counter",
        "Total number of errors when an authorization webhook encounters a match condition error split by authorizer type and name.",
    ),
    (
        "apiserver_authorization_config_controller_automatic_reloads_total",
        "counter",
        "Total number of automatic reloads of authorization configuration split by status and apiserver identity.",
    ),
    (
        "apiserver_authorization_config_controller_automatic_reload_last_timestamp_seconds",
        "gauge",
        "Timestamp of the last automatic reload of authorization configuration split by status and apiserver identity.",
    ),
    ("apiserver_flowcontrol_dispatched_requests_total", "counter", "Number of requests executed by API Priority and Fairness subsystem"),
    ("apiserver_flowcontrol_rejected_requests_total", "counter", "Number of requests rejected by API Priority and Fairness subsystem"),
    ("apiserver_requested_deprecated_apis", "gauge", "Gauge of deprecated APIs that have been requested, broken out by API group, version, resource, subresource, and removed_release."),
];

/// The server's metrics; one per process.
#[derive(Default)]
pub struct Metrics {
    counters: Mutex<Counters>,
}

impl Metrics {
    /// Counts one finished request.
    pub fn observe(&self, labels: RequestLabels, code: u16, took: Duration) {
        let mut c = self.counters.lock().unwrap_or_else(|e| e.into_inner());
        *c.requests.entry((labels, code)).or_default() += 1;
        let l = c.latency.entry(labels).or_default();
        if l.buckets.is_empty() {
            l.buckets = vec![0; BUCKETS.len()];
        }
        let secs = took.as_secs_f64();
        for (i, bound) in BUCKETS.iter().enumerate() {
            if secs <= *bound {
                l.buckets[i] += 1;
            }
        }
        l.count += 1;
        l.sum += secs;
    }

    fn add(&self, name: &'static str, labels: &[(&str, &str)], value: Option<f64>) {
        RENDERED.with_borrow_mut(|rendered| {
            rendered.clear();
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    rendered.push(',');
                }
                rendered.push_str(k);
                rendered.push_str("=\"");
                push_escaped(rendered, v);
                rendered.push('"');
            }
            let mut c = self.counters.lock().unwrap_or_else(|e| e.into_inner());
            let by_labels = c.series.entry(name).or_default();
            let entry = match by_labels.get_mut(rendered.as_str()) {
                Some(entry) => entry,
                None => by_labels.entry(rendered.clone()).or_default(),
            };
            match value {
                Some(v) => *entry = v,
                None => *entry += 1.0,
            }
        })
    }

    /// Counts a request given its seat at a priority level.
    pub fn flowcontrol_dispatched(&self, flow_schema: &str, priority_level: &str) {
        self.add("apiserver_flowcontrol_dispatched_requests_total", &[("flow_schema", flow_schema), ("priority_level", priority_level)], None);
    }

    /// Counts a request its priority level refused (`queue-full`, `concurrency-limit`, `time-out`).
    pub fn flowcontrol_rejected(&self, flow_schema: &str, priority_level: &str, reason: &str) {
        let labels = [("flow_schema", flow_schema), ("priority_level", priority_level), ("reason", reason)];
        self.add("apiserver_flowcontrol_rejected_requests_total", &labels, None);
    }

    /// Marks a deprecated API as requested (`removed_release` empty when no removal is planned).
    pub fn deprecated_api_requested(&self, group: &str, version: &str, resource: &str, subresource: &str, removed_release: &str) {
        let labels = [("group", group), ("removed_release", removed_release), ("resource", resource), ("subresource", subresource), ("version", version)];
        self.add("apiserver_requested_deprecated_apis", &labels, Some(1.0));
    }

    /// The text exposition of every metric, with the Raft state given.
    pub fn render(&self, raft: &RaftStatus, node_id: u64) -> String {
        let mut out = String::new();
        let gauges: [(&str, &str, u64); 7] = [
            ("apiserver_raft_term", "Current Raft term of this node.", raft.term),
            ("apiserver_raft_leader_id", "Node id of the leader this node knows, 0 when none.", raft.leader.unwrap_or(0)),
            ("apiserver_raft_is_leader", "1 when this node is the leader.", u64::from(raft.is_leader)),
            ("apiserver_raft_commit_index", "Highest log index this node knows to be committed.", raft.committed),
            ("apiserver_raft_applied_index", "Highest log index applied to this node's state.", raft.applied),
            ("apiserver_raft_apply_lag", "Committed entries not applied yet on this node.", raft.committed.saturating_sub(raft.applied)),
            (
                "apiserver_raft_log_flush_lingering",
                "1 while this node's log gathers appends briefly before each flush (a leader whose followers, answering, form a quorum without it).",
                u64::from(raft.log_lingers),
            ),
        ];
        for (name, help, value) in gauges {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name}{{node_id=\"{node_id}\"}} {value}");
        }
        let _ = writeln!(
            out,
            "# HELP apiserver_raft_proposals_total Writes proposed through this node.\n# TYPE apiserver_raft_proposals_total counter\napiserver_raft_proposals_total{{node_id=\"{node_id}\"}} {}",
            raft.proposals
        );
        let f = raft.log_flushes;
        let flush = "apiserver_raft_log_flush_duration_seconds";
        let _ = writeln!(out, "# HELP {flush} Commits of Raft log entries to disk, each with one fsync.\n# TYPE {flush} histogram");
        for (bound, n) in raft_store::FLUSH_BUCKETS.iter().zip(f.at_most) {
            let _ = writeln!(out, "{flush}_bucket{{node_id=\"{node_id}\",le=\"{bound}\"}} {n}");
        }
        let _ = writeln!(out, "{flush}_bucket{{node_id=\"{node_id}\",le=\"+Inf\"}} {}", f.flushes);
        let _ = writeln!(out, "{flush}_sum{{node_id=\"{node_id}\"}} {}\n{flush}_count{{node_id=\"{node_id}\"}} {}", f.seconds, f.flushes);
        let _ = writeln!(
            out,
            "# HELP apiserver_raft_log_flushed_entries_total Raft log entries written to disk by those commits.\n# TYPE apiserver_raft_log_flushed_entries_total counter\napiserver_raft_log_flushed_entries_total{{node_id=\"{node_id}\"}} {}",
            f.entries
        );
        let c = self.counters.lock().unwrap_or_else(|e| e.into_inner());
        let _ = writeln!(out, "# HELP apiserver_request_total Counter of apiserver requests broken out for each verb, group, version, resource, subresource and HTTP response code.");
        let _ = writeln!(out, "# TYPE apiserver_request_total counter");
        for ((l, code), n) in sorted(&c.requests) {
            let _ = writeln!(out, "apiserver_request_total{{{},code=\"{code}\"}} {n}", labels(l));
        }
        let _ = writeln!(out, "# HELP apiserver_request_duration_seconds Response latency distribution in seconds for each verb, group, version, resource and subresource.");
        let _ = writeln!(out, "# TYPE apiserver_request_duration_seconds histogram");
        for (l, lat) in sorted(&c.latency) {
            let base = labels(l);
            for (bound, n) in BUCKETS.iter().zip(&lat.buckets) {
                let _ = writeln!(out, "apiserver_request_duration_seconds_bucket{{{base},le=\"{bound}\"}} {n}");
            }
            let _ = writeln!(out, "apiserver_request_duration_seconds_bucket{{{base},le=\"+Inf\"}} {}", lat.count);
            let _ = writeln!(out, "apiserver_request_duration_seconds_sum{{{base}}} {}", lat.sum);
            let _ = writeln!(out, "apiserver_request_duration_seconds_count{{{base}}} {}", lat.count);
        }
        for (name, kind, help) in SERIES {
            let Some(series) = c.series.get(name).filter(|s| !s.is_empty()) else { continue };
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
            for (labels, value) in sorted(series) {
                let _ = writeln!(out, "{name}{{{labels}}} {value}");
            }
        }
        out
    }
}

/// A map's entries in key order.
fn sorted<K: Ord, V>(map: &Hashed<K, V>) -> Vec<(&K, &V)> {
    let mut entries: Vec<(&K, &V)> = map.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    entries
}

impl AuthorizationMetrics for Metrics {
    fn authorization_decision(&self, kind: &str, name: &str, allowed: bool) {
        let decision = if allowed { "allowed" } else { "denied" };
        self.add("apiserver_authorization_decisions_total", &[("decision", decision), ("name", name), ("type", kind)], None);
    }

    fn authorization_webhook_evaluation(&self, name: &str, result: &str) {
        self.add("apiserver_authorization_webhook_evaluations_total", &[("name", name), ("result", result)], None);
    }

    fn authorization_webhook_fail_open(&self, name: &str, result: &str) {
        self.add("apiserver_authorization_webhook_evaluations_fail_open_total", &[("name", name), ("result", result)], None);
    }

    fn authorization_match_condition_error(&self, name: &str) {
        self.add("apiserver_authorization_match_condition_evaluation_errors_total", &[("name", name), ("type", "Webhook")], None);
    }

    fn authorization_config_reload(&self, success: bool, apiserver_id_hash: &str) {
        let status = if success { "success" } else { "failure" };
        let labels = [("apiserver_id_hash", apiserver_id_hash), ("status", status)];
        self.add("apiserver_authorization_config_controller_automatic_reloads_total", &labels, None);
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs_f64();
        self.add("apiserver_authorization_config_controller_automatic_reload_last_timestamp_seconds", &labels, Some(now));
    }
}

/// Appends a label value as the text format quotes it.
fn push_escaped(out: &mut String, v: &str) {
    for ch in v.chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            other => out.push(other),
        }
    }
}

fn labels(l: &RequestLabels) -> String {
    format!(
        "verb=\"{}\",group=\"{}\",version=\"{}\",resource=\"{}\",subresource=\"{}\"",
        l.verb, l.group, l.version, l.resource, l.subresource
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use raft_store::FlushStats;

    #[test]
    fn label_values_are_quoted_as_the_text_format_wants() {
        let m = Metrics::default();
        m.flowcontrol_dispatched("a\\b", "say \"hi\"\n");
        m.flowcontrol_dispatched("a\\b", "say \"hi\"\n");
        let raft = RaftStatus { term: 1, leader: Some(1), is_leader: true, committed: 1, applied: 1, proposals: 0, log_flushes: raft_store::FlushStats::default(), log_lingers: false };
        let text = m.render(&raft, 1);
        assert!(text.contains("apiserver_flowcontrol_dispatched_requests_total{flow_schema=\"a\\\\b\",priority_level=\"say \\\"hi\\\"\\n\"} 2"), "{text}");
    }

    #[test]
    fn counts_and_buckets() {
        let m = Metrics::default();
        let l = RequestLabels { verb: "GET", group: "", version: "v1", resource: "pods", subresource: "" };
        m.observe(l, 200, Duration::from_millis(3));
        m.observe(l, 200, Duration::from_millis(30));
        m.observe(l, 404, Duration::from_millis(3));
        m.authorization_decision("RBAC", "rbac", true);
        let raft = RaftStatus { term: 4, leader: Some(2), is_leader: false, committed: 10, applied: 9, proposals: 7, log_flushes: FlushStats { flushes: 4, entries: 12, seconds: 0.5, at_most: [0, 1, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3] }, log_lingers: true };
        let text = m.render(&raft, 1);
        assert!(text.contains("apiserver_raft_term{node_id=\"1\"} 4"), "{text}");
        assert!(text.contains("apiserver_raft_apply_lag{node_id=\"1\"} 1"), "{text}");
        assert!(text.contains("apiserver_raft_log_flush_duration_seconds_count{node_id=\"1\"} 4"), "{text}");
        assert!(text.contains("apiserver_raft_log_flush_duration_seconds_bucket{node_id=\"1\",le=\"0.001\"} 2"), "{text}");
        assert!(text.contains("apiserver_raft_log_flush_duration_seconds_bucket{node_id=\"1\",le=\"8.192\"} 3"), "{text}");
        assert!(text.contains("apiserver_raft_log_flush_duration_seconds_bucket{node_id=\"1\",le=\"+Inf\"} 4"), "{text}");
        assert!(text.contains("apiserver_raft_log_flushed_entries_total{node_id=\"1\"} 12"), "{text}");
        assert!(text.contains("apiserver_raft_log_flush_lingering{node_id=\"1\"} 1"), "{text}");
        assert!(text.contains(r#"apiserver_request_total{verb="GET",group="",version="v1",resource="pods",subresource="",code="200"} 2"#), "{text}");
        assert!(text.contains(r#"resource="pods",subresource="",le="0.005"} 2"#), "{text}");
        assert!(text.contains(r#"apiserver_authorization_decisions_total{decision="allowed",name="rbac",type="RBAC"} 1"#), "{text}");
        assert!(text.contains(r#"resource="pods",subresource="",le="0.05"} 3"#), "{text}");
        assert!(text.contains(r#"apiserver_request_duration_seconds_count{verb="GET",group="",version="v1",resource="pods",subresource=""} 3"#), "{text}");
    }
}
