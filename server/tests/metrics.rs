//! `/metrics` as an operator's tools read it: `promtool check metrics` on a node's exposition
//! (whose only findings are the names kube-apiserver and etcd themselves carry), and a real
//! Prometheus scraping a three-node cluster, whose PromQL finds each node's request rate, their
//! latency and the one leader, and which loads `deploy/monitoring/alerts.yaml` and gets data for
//! each alert's query and each panel of `deploy/monitoring/dashboard.json`.

use crate::common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::cluster::cluster_with;
use common::{configmap, free_port, TestServer};
use k8s_openapi::api::core::v1::ConfigMap;
use futures::StreamExt;
use kube::api::{Api, PostParams, WatchParams};
use serde_json::Value;

/// Names promtool's linter questions that are kube-apiserver's and etcd's own, kept as they are
/// so that dashboards made for those work here: counters without `_total`, gauges with it.
const UPSTREAM_NAMES: &[&str] = &[
    "authentication_attempts",
    "authenticated_user_requests",
    "etcd_server_proposals_committed_total",
    "etcd_server_proposals_applied_total",
    "etcd_debugging_mvcc_keys_total",
];

#[tokio::test]
async fn promtool_finds_nothing_but_kube_apiservers_and_etcds_own_names() {
    let server = TestServer::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    cms.create(&PostParams::default(), &configmap("counted", &[])).await.unwrap();
    server.kubectl_ok(&["get", "configmaps", "-A"]);
    // A watch, whose events are counted by resource.
    let events: Vec<_> = cms.watch(&WatchParams::default().timeout(1), "0").await.unwrap().collect().await;
    assert!(!events.is_empty());
    // The objects stored, as many as a list finds (controllers may add one between the two reads:
    // read again until they agree).
    let all: Api<ConfigMap> = Api::all(server.client());
    let deadline = Instant::now() + Duration::from_secs(10);
    let text = loop {
        let reply = server.get("/metrics").await;
        assert_eq!(reply.headers["content-type"], "text/plain; version=0.0.4; charset=utf-8; escaping=underscores");
        let text = reply.text();
        let listed = all.list(&Default::default()).await.unwrap().items.len();
        let stored = text.lines().find_map(|l| l.strip_prefix(r#"apiserver_resource_objects{group="",resource="configmaps"} "#)).and_then(|n| n.parse::<usize>().ok());
        if stored == Some(listed) {
            assert!(text.contains(&format!("apiserver_storage_objects{{resource=\"configmaps\"}} {listed}\n")), "{text}");
            break text;
        }
        assert!(Instant::now() < deadline, "{listed} listed:\n{text}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let watched = text.lines().find_map(|l| l.strip_prefix(r#"apiserver_watch_events_total{group="",resource="configmaps",version="v1"} "#));
    assert!(watched.and_then(|n| n.parse::<u64>().ok()).is_some_and(|n| n >= 1), "{text}");

    let mut promtool = Command::new("promtool").args(["check", "metrics"]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("promtool (Debian's prometheus package)");
    std::io::Write::write_all(promtool.stdin.as_mut().unwrap(), text.as_bytes()).unwrap();
    let out = promtool.wait_with_output().unwrap();
    let findings = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    // 0: clean; 3: lint findings (parse errors are 1).
    assert!(matches!(out.status.code(), Some(0 | 3)), "{findings}\n{text}");
    for finding in findings.lines().filter(|l| !l.trim().is_empty()) {
        let name = finding.split_whitespace().next().unwrap_or_default();
        assert!(UPSTREAM_NAMES.contains(&name), "promtool: {finding}");
    }
    // Each of those is there, so that this list stays the one kube-apiserver's names need.
    for name in ["authentication_attempts", "authenticated_user_requests", "etcd_server_proposals_committed_total"] {
        assert!(findings.contains(name), "{name} is not questioned any more:\n{findings}");
    }
}

/// A Prometheus server scraping `targets` over HTTPS with `node`'s admin certificate; stopped
/// when dropped.
struct Prometheus {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    async fn scraping(node: &TestServer, targets: &[u16]) -> Prometheus {
        let dir = tempfile::tempdir().unwrap();
        let pki = node.data_dir().join("pki");
        let targets: Vec<String> = targets.iter().map(|p| format!("'127.0.0.1:{p}'")).collect();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files: ['{rules}']\nscrape_configs:\n  - job_name: apiserver\n    scheme: https\n    tls_config:\n      ca_file: {ca}\n      cert_file: {cert}\n      key_file: {key}\n    static_configs:\n      - targets: [{targets}]\n",
            ca = pki.join("ca.crt").display(),
            cert = pki.join("admin.crt").display(),
            key = pki.join("admin.key").display(),
            targets = targets.join(", "),
            rules = alert_rules().display(),
        );
        std::fs::write(dir.path().join("prometheus.yml"), config).unwrap();
        let port = free_port();
        let log = std::fs::File::create(dir.path().join("prometheus.log")).unwrap();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", dir.path().join("prometheus.yml").display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("prometheus (Debian's prometheus package)");
        let prometheus = Prometheus { child, port, _dir: dir };
        let deadline = Instant::now() + Duration::from_secs(30);
        while !prometheus.get("/-/ready").is_some_and(|body| body.contains("Ready")) {
            assert!(Instant::now() < deadline, "prometheus did not start:\n{}", prometheus.log());
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        prometheus
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self._dir.path().join("prometheus.log")).unwrap_or_default()
    }

    fn get_json(&self, path: &str) -> Value {
        serde_json::from_str(&self.get(path).unwrap_or_default()).unwrap_or(Value::Null)
    }

    fn get(&self, path: &str) -> Option<String> {
        let out = Command::new("curl").args(["-sf", &format!("http://127.0.0.1:{}{path}", self.port)]).output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// The vector an instant query returns: (labels, value) per series.
    fn query(&self, promql: &str) -> Vec<(Value, f64)> {
        let out = Command::new("curl")
            .args(["-sf", "--get", "--data-urlencode", &format!("query={promql}"), &format!("http://127.0.0.1:{}/api/v1/query", self.port)])
            .output()
            .unwrap();
        let answer: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{promql}: {e}: {}", String::from_utf8_lossy(&out.stdout)));
        assert_eq!(answer["status"], "success", "{promql}: {answer}");
        answer["data"]["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| (s["metric"].clone(), s["value"][1].as_str().and_then(|v| v.parse().ok()).unwrap_or(f64::NAN)))
            .collect()
    }

    /// Queries `promql` until `done` holds of its answer (within 60 s).
    async fn until(&self, promql: &str, done: impl Fn(&[(Value, f64)]) -> bool) -> Vec<(Value, f64)> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let answer = self.query(promql);
            if done(&answer) {
                return answer;
            }
            let targets = self.get("/api/v1/targets").unwrap_or_default();
            assert!(Instant::now() < deadline, "{promql}: {answer:?}\ntargets: {targets}\n{}", self.log());
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn prometheus_scrapes_a_cluster_and_finds_each_nodes_requests_and_the_leader() {
    let nodes = cluster_with(&[]).await;
    let ports: Vec<u16> = nodes.iter().map(TestServer::port).collect();
    let prometheus = Prometheus::scraping(&nodes[0], &ports).await;
    prometheus.until("up", |a| a.len() == 3 && a.iter().all(|(_, v)| *v == 1.0)).await;

    // Requests through every node while Prometheus scrapes.
    let writer = {
        let apis: Vec<Api<ConfigMap>> = nodes.iter().map(|n| Api::namespaced(n.client(), "default")).collect();
        tokio::spawn(async move {
            for i in 0..60 {
                apis[i % 3].create(&PostParams::default(), &configmap(&format!("scraped-{i}"), &[])).await.unwrap();
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };
    let rates = prometheus
        .until(r#"sum by (instance) (rate(apiserver_request_total{verb="POST",resource="configmaps",code="201"}[10s]))"#, |a| {
            a.len() == 3 && a.iter().all(|(_, v)| *v > 0.0)
        })
        .await;
    writer.await.unwrap();
    let instances: Vec<String> = rates.iter().map(|(m, _)| m["instance"].as_str().unwrap().to_string()).collect();
    for port in &ports {
        assert!(instances.contains(&format!("127.0.0.1:{port}")), "{instances:?}");
    }
    // Their latency, from the histogram.
    let p99 = prometheus.query(r#"histogram_quantile(0.99, sum by (le) (rate(apiserver_request_duration_seconds_bucket{verb="POST"}[30s])))"#);
    assert!(p99.len() == 1 && p99[0].1 > 0.0 && p99[0].1 <= 60.0, "{p99:?}");

    // One leader, the one the nodes name.
    let leaders = prometheus.until("etcd_server_is_leader == 1", |a| a.len() == 1).await;
    let leader_id = nodes[1].get("/metrics").await.text().lines().find_map(|l| l.strip_prefix("apiserver_raft_leader_id ")).unwrap().parse::<usize>().unwrap();
    assert_eq!(leaders[0].0["instance"], format!("127.0.0.1:{}", ports[leader_id - 1]), "{leaders:?}");
    let has_leader = prometheus.query("sum(etcd_server_has_leader)");
    assert_eq!(has_leader[0].1, 3.0, "{has_leader:?}");

    // Each node's round trips to the two others (probed every 5 s), under etcd's name.
    let round_trips = prometheus.until("etcd_network_peer_round_trip_time_seconds_count > 0", |a| a.len() == 6).await;
    for (series, _) in &round_trips {
        assert!(["1", "2", "3"].contains(&series["To"].as_str().unwrap()), "{round_trips:?}");
    }
    let mean = prometheus.query("etcd_network_peer_round_trip_time_seconds_sum / etcd_network_peer_round_trip_time_seconds_count");
    assert!(mean.len() == 6 && mean.iter().all(|(_, v)| *v > 0.0 && *v < 3.3), "{mean:?}");
}

/// The alert rules `deploy/` ships.
fn alert_rules() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/monitoring/alerts.yaml")
}

/// The Grafana dashboard `deploy/` ships.
fn dashboard() -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/monitoring/dashboard.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Alerts whose query selects only what goes wrong (5xx answers, requests refused by flow
/// control), which a healthy cluster never has: their queries must evaluate, with no data.
const ONLY_WHEN_FAILING: &[&str] = &["ApiserverErrors", "ApiserverFlowControlRejections"];

#[tokio::test]
async fn every_shipped_alert_and_dashboard_panel_finds_data_on_a_live_cluster() {
    let out = Command::new("promtool").args(["check", "rules"]).arg(alert_rules()).output().unwrap();
    assert!(out.status.success(), "{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));

    let nodes = cluster_with(&[]).await;
    let ports: Vec<u16> = nodes.iter().map(TestServer::port).collect();
    let prometheus = Prometheus::scraping(&nodes[0], &ports).await;
    let cms: Api<ConfigMap> = Api::namespaced(nodes[1].client(), "default");
    for i in 0..20 {
        cms.create(&PostParams::default(), &configmap(&format!("alerting-{i}"), &[])).await.unwrap();
    }
    // Loaded by Prometheus, every rule evaluated without an error.
    let rules: serde_yaml::Value = serde_yaml::from_str(&std::fs::read_to_string(alert_rules()).unwrap()).unwrap();
    let alerts: Vec<(String, String)> = rules["groups"]
        .as_sequence()
        .unwrap()
        .iter()
        .flat_map(|g| g["rules"].as_sequence().unwrap().iter())
        .map(|r| (r["alert"].as_str().unwrap().to_string(), r["expr"].as_str().unwrap().to_string()))
        .collect();
    assert!(alerts.len() >= 9, "{alerts:?}");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let loaded = prometheus.get_json("/api/v1/rules");
        let evaluated: Vec<&Value> = loaded["data"]["groups"].as_array().into_iter().flatten().flat_map(|g| g["rules"].as_array().unwrap()).collect();
        if evaluated.len() == alerts.len() && evaluated.iter().all(|r| r["health"] == "ok") {
            break;
        }
        assert!(Instant::now() < deadline, "rules not all loaded and healthy: {loaded}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // Each alert's query (the expression before its threshold) finds data.
    for (alert, expr) in &alerts {
        let query = [" > ", " == ", " < "].iter().filter_map(|op| expr.rsplit_once(op)).map(|(q, _)| q).max_by_key(|q| q.len()).unwrap_or_else(|| panic!("{alert}: {expr} has no threshold"));
        if ONLY_WHEN_FAILING.contains(&alert.as_str()) {
            prometheus.query(query);
        } else {
            prometheus.until(query, |a| !a.is_empty()).await;
        }
    }
    // Each panel's queries, at Grafana's rate interval for a 1 s scrape.
    let board = dashboard();
    let panels = board["panels"].as_array().unwrap();
    assert!(panels.len() >= 10);
    for panel in panels {
        for target in panel["targets"].as_array().unwrap() {
            let query = target["expr"].as_str().unwrap().replace("$__rate_interval", "1m");
            prometheus.until(&query, |a| !a.is_empty()).await;
        }
    }
}
