//! What a new server has once its post-start hooks ran: the system namespaces, the `kubernetes`
//! Service, the system PriorityClasses, the API Priority and Fairness objects, the
//! authentication info ConfigMap, an available APIService for every served group/version, and
//! health checks that name each hook as kube-apiserver does.

use crate::common;

use common::TestServer;
use serde_json::Value;

fn names(s: &TestServer, args: &[&str]) -> Vec<String> {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", "jsonpath={.items[*].metadata.name}"]);
    s.kubectl_ok(&all).split_whitespace().map(str::to_string).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn post_start_hooks_create_what_every_cluster_has() {
    let s = TestServer::start().await;
    let verbose = s.kubectl_ok(&["get", "--raw", "/healthz?verbose"]);
    for check in [
        "[+]ping ok",
        "[+]etcd ok",
        "[+]poststarthook/start-system-namespaces-controller ok",
        "[+]poststarthook/bootstrap-controller ok",
        "[+]poststarthook/scheduling/bootstrap-system-priority-classes ok",
        "[+]poststarthook/rbac/bootstrap-roles ok",
        "[+]poststarthook/priority-and-fairness-config-producer ok",
        "[+]poststarthook/start-cluster-authentication-info-controller ok",
        "[+]poststarthook/start-legacy-token-tracking-controller ok",
        "[+]poststarthook/kube-apiserver-autoregistration ok",
        "[+]autoregister-completion ok",
        "[+]poststarthook/start-apiextensions-informers ok",
        "[+]poststarthook/start-apiextensions-controllers ok",
        "[+]poststarthook/crd-informer-synced ok",
        "[+]poststarthook/start-service-ip-repair-controllers ok",
        "[+]poststarthook/start-kube-aggregator-informers ok",
        "[+]poststarthook/apiservice-status-remote-available-controller ok",
        "[+]poststarthook/apiservice-openapi-controller ok",
    ] {
        assert!(verbose.lines().any(|l| l == check), "{check} missing from:\n{verbose}");
    }
    assert!(s.kubectl_ok(&["get", "--raw", "/readyz?verbose"]).contains("[+]informer-sync ok"));
    // Its gate is on by default from 1.36.
    assert!(verbose.contains("[+]poststarthook/storage-readiness ok"));
    assert_eq!(s.kubectl_ok(&["get", "--raw", "/livez/poststarthook/bootstrap-controller"]), "ok");

    let namespaces = names(&s, &["namespaces"]);
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        assert!(namespaces.contains(&ns.to_string()), "{namespaces:?}");
    }
    assert_eq!(names(&s, &["priorityclasses"]), vec!["system-cluster-critical", "system-node-critical"]);
    let levels = names(&s, &["prioritylevelconfigurations"]);
    for level in ["catch-all", "exempt", "global-default", "leader-election", "node-high", "system", "workload-high", "workload-low"] {
        assert!(levels.contains(&level.to_string()), "{levels:?}");
    }
    let schemas = names(&s, &["flowschemas"]);
    for schema in ["catch-all", "exempt", "global-default", "system-nodes", "service-accounts"] {
        assert!(schemas.contains(&schema.to_string()), "{schemas:?}");
    }
    // kubectl shows them with kube-apiserver's columns.
    let row = s.kubectl_ok(&["get", "flowschema", "global-default", "--no-headers"]);
    assert_eq!(row.split_whitespace().collect::<Vec<_>>()[..4], ["global-default", "global-default", "9900", "ByUser"], "{row}");
    let row = s.kubectl_ok(&["get", "prioritylevelconfiguration", "workload-low", "--no-headers"]);
    assert_eq!(row.split_whitespace().collect::<Vec<_>>()[..6], ["workload-low", "Limited", "100", "128", "6", "50"], "{row}");
    // The server's identity lease, renewed every 10 seconds.
    let lease = |s: &TestServer| -> Value {
        let leases: Value = serde_json::from_str(&s.kubectl_ok(&["get", "leases", "-n", "kube-system", "-l", "apiserver.kubernetes.io/identity=kube-apiserver", "-o", "json"])).unwrap();
        leases["items"].as_array().and_then(|i| i.first()).cloned().unwrap_or(Value::Null)
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while lease(&s).is_null() {
        assert!(std::time::Instant::now() < deadline, "no identity lease");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let first = lease(&s);
    assert!(first["metadata"]["name"].as_str().unwrap().starts_with("apiserver-"), "{first}");
    assert_eq!(first["spec"]["leaseDurationSeconds"], 3600);
    tokio::time::sleep(std::time::Duration::from_secs(11)).await;
    assert_ne!(lease(&s)["spec"]["renewTime"], first["spec"]["renewTime"]);
    // componentstatuses answer for this server's own parts.
    let statuses = s.kubectl_ok(&["get", "componentstatuses", "--no-headers"]);
    let rows: Vec<Vec<&str>> = statuses.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(rows, vec![vec!["controller-manager", "Healthy", "ok"], vec!["etcd-0", "Healthy", "ok"]], "{statuses}");
    let ca = s.kubectl_ok(&["get", "configmap", "-n", "kube-system", "extension-apiserver-authentication", "-o", "jsonpath={.data.client-ca-file}"]);
    assert!(ca.starts_with("-----BEGIN CERTIFICATE-----"), "{ca}");
    let since = s.kubectl_ok(&["get", "configmap", "-n", "kube-system", "kube-apiserver-legacy-service-account-token-tracking", "-o", "jsonpath={.data.since}"]);
    assert_eq!(since, chrono::Utc::now().format("%Y-%m-%d").to_string());

    let services: Value = serde_json::from_str(&s.kubectl_ok(&["get", "apiservices", "-o", "json"])).unwrap();
    let items = services["items"].as_array().unwrap();
    for name in ["v1.", "v1.apps", "v1.rbac.authorization.k8s.io", "v2.autoscaling", "v1.flowcontrol.apiserver.k8s.io"] {
        let svc = items.iter().find(|i| i["metadata"]["name"] == name).unwrap_or_else(|| panic!("no APIService {name}"));
        assert_eq!(svc["status"]["conditions"][0]["type"], "Available", "{svc}");
        assert_eq!(svc["status"]["conditions"][0]["status"], "True", "{svc}");
        assert_eq!(svc["status"]["conditions"][0]["reason"], "Local", "{svc}");
    }
    let core = items.iter().find(|i| i["metadata"]["name"] == "v1.").unwrap();
    assert_eq!(core["spec"]["groupPriorityMinimum"], 18000);
    let row = s.kubectl_ok(&["get", "apiservice", "v1.apps", "--no-headers"]);
    assert_eq!(row.split_whitespace().collect::<Vec<_>>()[..3], ["v1.apps", "Local", "True"], "{row}");
}

#[tokio::test(flavor = "multi_thread")]
async fn storage_readiness_is_checked_behind_its_gate() {
    // Off by default in 1.35, on when asked for.
    let off = TestServer::start_with(&["--emulated-version=1.35"]).await;
    assert!(!off.kubectl_ok(&["get", "--raw", "/readyz?verbose"]).contains("storage-readiness"));
    let s = TestServer::start_with(&["--emulated-version=1.35", "--feature-gates=WatchCacheInitializationPostStartHook=true"]).await;
    for endpoint in ["/healthz?verbose", "/livez?verbose", "/readyz?verbose"] {
        let verbose = s.kubectl_ok(&["get", "--raw", endpoint]);
        assert!(verbose.lines().any(|l| l == "[+]poststarthook/storage-readiness ok"), "{endpoint}:\n{verbose}");
    }
}
