//! The exposition: kube-apiserver's and etcd's names, labels (sorted, quoted) and buckets.

use std::time::Duration;

use access::authz::metrics::AuthorizationMetrics;
use http::StatusCode;
use raft_store::{FlushStats, RaftStatus, TimingStats};

use super::*;

fn figures() -> StoreFigures {
    let raft = RaftStatus {
        term: 4,
        leader: Some(2),
        is_leader: false,
        committed: 10,
        applied: 9,
        proposals: 7,
        leader_changes: 3,
        log_flushes: FlushStats { timings: TimingStats { count: 4, seconds: 0.5, at_most: [0, 1, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3] }, entries: 12 },
        log_lingers: true,
    };
    let rtt = TimingStats { count: 2, seconds: 0.0009, at_most: [0, 0, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2] };
    StoreFigures {
        node_id: 26,
        raft,
        file_bytes: 4096,
        live_bytes: 1000,
        keys: 12,
        quota_bytes: 8 << 30,
        objects: vec![("", "pods", 7), ("apps", "deployments", 2)],
        peer_round_trips: vec![(27, rtt)],
    }
}

#[test]
fn requests_are_counted_under_kube_apiservers_labels() {
    let m = Metrics::default();
    let l = RequestLabels { verb: "LIST", group: "", version: "v1", resource: "pods", subresource: "", scope: "namespace", dry_run: "" };
    m.requests.observe(&l, StatusCode::OK, Duration::from_millis(3), Duration::ZERO, Some(2000));
    m.requests.observe(&l, StatusCode::OK, Duration::from_millis(30), Duration::from_millis(29), Some(20));
    m.requests.observe(&l, StatusCode::NOT_FOUND, Duration::from_millis(3), Duration::ZERO, None);
    let dry = RequestLabels { verb: "POST", dry_run: "All", scope: "resource", ..l };
    m.requests.observe(&dry, StatusCode::CREATED, Duration::from_millis(3), Duration::ZERO, Some(10));
    let text = m.render(&figures(), &FlowFigures::default());
    let base = r#"component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1""#;
    for line in [
        format!(r#"apiserver_request_total{{code="200",{base}}} 2"#),
        format!(r#"apiserver_request_total{{code="404",{base}}} 1"#),
        format!(r#"apiserver_request_duration_seconds_bucket{{{base},le="0.005"}} 2"#),
        format!(r#"apiserver_request_duration_seconds_bucket{{{base},le="0.05"}} 3"#),
        format!(r#"apiserver_request_duration_seconds_count{{{base}}} 3"#),
        // The SLI leaves the queue's wait out, and dry runs.
        r#"apiserver_request_sli_duration_seconds_bucket{component="apiserver",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1",le="0.05"} 3"#.to_string(),
        r#"apiserver_request_sli_duration_seconds_count{component="apiserver",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 3"#.to_string(),
        // Sizes of reads only.
        r#"apiserver_response_sizes_bucket{component="apiserver",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1",le="1000"} 1"#.to_string(),
        r#"apiserver_response_sizes_count{component="apiserver",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 2"#.to_string(),
        r#"apiserver_request_total{code="201",component="apiserver",dry_run="All",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 1"#.to_string(),
        "# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.".to_string(),
        "# TYPE apiserver_request_duration_seconds histogram".to_string(),
    ] {
        assert!(text.lines().any(|l| l == line), "{line}\n{text}");
    }
    assert!(!text.contains(r#"apiserver_request_sli_duration_seconds_count{component="apiserver",group="",resource="pods",scope="resource""#), "{text}");
    assert!(!text.contains(r#"apiserver_response_sizes_count{component="apiserver",group="",resource="pods",scope="resource""#), "{text}");
}

#[test]
fn long_running_and_executing_requests_are_gauged_while_they_last() {
    let m = Metrics::default();
    let l = RequestLabels { verb: "WATCH", group: "apps", version: "v1", resource: "deployments", subresource: "", scope: "cluster", dry_run: "" };
    let watch = m.requests.long_running(&l);
    let executing = m.requests.executing(true);
    let line = r#"apiserver_longrunning_requests{component="apiserver",group="apps",resource="deployments",scope="cluster",subresource="",verb="WATCH",version="v1"}"#;
    let text = m.render(&figures(), &FlowFigures::default());
    assert!(text.contains(&format!("{line} 1")), "{text}");
    assert!(text.contains("apiserver_current_inflight_requests{request_kind=\"mutating\"} 1"), "{text}");
    drop((watch, executing));
    let text = m.render(&figures(), &FlowFigures::default());
    assert!(text.contains(&format!("{line} 0")), "{text}");
    // It still executed in the period this scrape closes; not in the next.
    assert!(text.contains("apiserver_current_inflight_requests{request_kind=\"mutating\"} 1"), "{text}");
    let text = m.render(&figures(), &FlowFigures::default());
    assert!(text.contains("apiserver_current_inflight_requests{request_kind=\"mutating\"} 0"), "{text}");
}

#[test]
fn the_store_is_told_under_etcds_names() {
    let m = Metrics::default();
    let text = m.render(&figures(), &FlowFigures::default());
    for line in [
        "etcd_server_has_leader 1",
        "etcd_server_is_leader 0",
        "etcd_server_leader_changes_seen_total 3",
        "# TYPE etcd_server_proposals_committed_total gauge",
        "etcd_server_proposals_committed_total 10",
        "etcd_server_proposals_applied_total 9",
        "etcd_mvcc_db_total_size_in_bytes 4096",
        "etcd_mvcc_db_total_size_in_use_in_bytes 1000",
        "etcd_server_quota_backend_bytes 8589934592",
        "etcd_debugging_mvcc_keys_total 12",
        "etcd_server_id{server_id=\"1a\"} 1",
        "apiserver_storage_size_bytes{storage_cluster_id=\"etcd-0\"} 4096",
        "apiserver_storage_objects{resource=\"pods\"} 7",
        "apiserver_storage_objects{resource=\"deployments.apps\"} 2",
        "apiserver_resource_objects{group=\"apps\",resource=\"deployments\"} 2",
        "# HELP apiserver_storage_size_bytes [STABLE] Size of the storage database file physically allocated in bytes.",
        "apiserver_raft_term 4",
        "apiserver_raft_leader_id 2",
        "apiserver_raft_apply_lag 1",
        "apiserver_raft_log_flush_lingering 1",
        "apiserver_raft_proposals_total 7",
        "apiserver_raft_log_flushed_entries_total 12",
        // etcd's buckets, from 1 ms; the flushes under it are in the first.
        "etcd_disk_wal_fsync_duration_seconds_bucket{le=\"0.001\"} 2",
        "etcd_disk_wal_fsync_duration_seconds_bucket{le=\"8.192\"} 3",
        "etcd_disk_wal_fsync_duration_seconds_bucket{le=\"+Inf\"} 4",
        "etcd_disk_wal_fsync_duration_seconds_count 4",
        "etcd_disk_wal_fsync_duration_seconds_sum 0.5",
        "etcd_network_peer_round_trip_time_seconds_bucket{To=\"1b\",le=\"0.0004\"} 1",
        "etcd_network_peer_round_trip_time_seconds_bucket{To=\"1b\",le=\"0.0008\"} 2",
        "etcd_network_peer_round_trip_time_seconds_bucket{To=\"1b\",le=\"+Inf\"} 2",
        "etcd_network_peer_round_trip_time_seconds_count{To=\"1b\"} 2",
    ] {
        assert!(text.lines().any(|l| l == line), "{line}\n{text}");
    }
    assert_eq!(text.matches("etcd_disk_wal_fsync_duration_seconds_bucket").count(), 15, "{text}");
    assert!(text.contains("process_resident_memory_bytes "), "{text}");
    assert!(text.contains("process_start_time_seconds "), "{text}");
}

#[test]
fn label_values_are_quoted_as_the_text_format_wants() {
    let m = Metrics::default();
    m.flowcontrol_dispatched("a\\b", "say \"hi\"\n", Duration::ZERO);
    m.flowcontrol_dispatched("a\\b", "say \"hi\"\n", Duration::ZERO);
    m.authorization_decision("RBAC", "rbac", true);
    let text = m.render(&figures(), &FlowFigures::default());
    assert!(text.contains("apiserver_flowcontrol_dispatched_requests_total{flow_schema=\"a\\\\b\",priority_level=\"say \\\"hi\\\"\\n\"} 2"), "{text}");
    assert!(text.contains(r#"apiserver_authorization_decisions_total{decision="allowed",name="rbac",type="RBAC"} 1"#), "{text}");
}

#[test]
fn levels_and_flows_gone_since_the_last_scrape_vanish() {
    let m = Metrics::default();
    let mut flow = FlowFigures { nominal_seats: vec![("global-default".into(), 20), ("gone".into(), 3)], ..Default::default() };
    flow.current.insert(("gone".into(), "s".into()), (1, 2));
    let text = m.render(&figures(), &flow);
    assert!(text.contains("apiserver_flowcontrol_nominal_limit_seats{priority_level=\"gone\"} 3"), "{text}");
    assert!(text.contains("apiserver_flowcontrol_current_executing_requests{flow_schema=\"s\",priority_level=\"gone\"} 2"), "{text}");
    let flow = FlowFigures { nominal_seats: vec![("global-default".into(), 20)], ..Default::default() };
    let text = m.render(&figures(), &flow);
    assert!(!text.contains("\"gone\""), "{text}");
}

#[test]
fn watch_events_are_counted_and_sized_by_resource() {
    let m = Metrics::default();
    let counted = m.watch.of("apps", "v1", "deployments");
    counted.sent(100);
    counted.sent(5000);
    let text = m.render(&figures(), &FlowFigures::default());
    for line in [
        r#"apiserver_watch_events_total{group="apps",resource="deployments",version="v1"} 2"#,
        r#"apiserver_watch_events_sizes_bucket{group="apps",resource="deployments",version="v1",le="1024"} 1"#,
        r#"apiserver_watch_events_sizes_bucket{group="apps",resource="deployments",version="v1",le="8192"} 2"#,
        r#"apiserver_watch_events_sizes_bucket{group="apps",resource="deployments",version="v1",le="131072"} 2"#,
    ] {
        assert!(text.lines().any(|l| l == line), "{line}\n{text}");
    }
}
