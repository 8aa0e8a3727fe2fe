//! Resource quotas against the real binary with kubectl: the controller fills a quota's status,
//! creates past `hard` are refused with Kubernetes' message (object counts, `count/<resource>.
//! <group>`, compute requests, a scope), concurrent creates never exceed `hard`, a dry run is
//! checked but not charged, deletions give usage back, and `--controllers=-resourcequota`
//! leaves quotas to an outside controller.

use crate::common;

use std::time::{Duration, Instant};

use common::{TestServer, WITHOUT_ROOT_CA};
use serde_json::{json, Value};

fn create(s: &TestServer, ns: &str, obj: &Value) -> std::process::Output {
    let path = s.dir().join(format!("{ns}-{}-{}.json", obj["kind"].as_str().unwrap(), obj["metadata"]["name"].as_str().unwrap()));
    std::fs::write(&path, obj.to_string()).unwrap();
    s.kubectl(&["-n", ns, "create", "-f", path.to_str().unwrap()])
}

fn quota(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name}, "spec": spec})
}

fn pod(name: &str, requests: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": requests}}], "automountServiceAccountToken": false}})
}

fn refusal(out: &std::process::Output) -> String {
    assert!(!out.status.success(), "expected a refusal: {}", String::from_utf8_lossy(&out.stdout));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The quota's `status.used`, once it equals `expected` (the controller got there).
async fn used_becomes(s: &TestServer, ns: &str, name: &str, expected: Value) {
    let started = Instant::now();
    loop {
        let got: Value = serde_json::from_str(&s.kubectl_ok(&["-n", ns, "get", "resourcequota", name, "-o", "json"])).unwrap();
        if got["status"]["used"] == expected {
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "status of {name}: {} (expected used {expected})", got["status"]);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quotas_are_counted_enforced_and_given_back() {
    let s = TestServer::start_with(WITHOUT_ROOT_CA).await;
    s.kubectl_ok(&["create", "namespace", "q"]);
    let hard = json!({"configmaps": "2", "count/deployments.apps": "1", "pods": "5", "requests.cpu": "1"});
    assert!(create(&s, "q", &quota("q", json!({"hard": hard}))).status.success());
    used_becomes(&s, "q", "q", json!({"configmaps": "0", "count/deployments.apps": "0", "pods": "0", "requests.cpu": "0"})).await;
    let status: Value = serde_json::from_str(&s.kubectl_ok(&["-n", "q", "get", "resourcequota", "q", "-o", "jsonpath={.status.hard}"])).unwrap();
    assert_eq!(status, hard);

    s.kubectl_ok(&["-n", "q", "create", "configmap", "c1"]);
    // A dry run is checked, not charged.
    s.kubectl_ok(&["-n", "q", "create", "configmap", "dry", "--dry-run=server"]);
    s.kubectl_ok(&["-n", "q", "create", "configmap", "c2"]);
    let err = refusal(&s.kubectl(&["-n", "q", "create", "configmap", "c3"]));
    assert!(err.contains(r#"configmaps "c3" is forbidden: exceeded quota: q, requested: configmaps=1, used: configmaps=2, limited: configmaps=2"#), "{err}");
    let err = refusal(&s.kubectl(&["-n", "q", "create", "configmap", "c3", "--dry-run=server"]));
    assert!(err.contains("exceeded quota: q"), "{err}");

    s.kubectl_ok(&["-n", "q", "create", "deployment", "d1", "--image=busybox"]);
    let err = refusal(&s.kubectl(&["-n", "q", "create", "deployment", "d2", "--image=busybox"]));
    assert!(
        err.contains(r#"deployments.apps "d2" is forbidden: exceeded quota: q, requested: count/deployments.apps=1, used: count/deployments.apps=1, limited: count/deployments.apps=1"#),
        "{err}"
    );

    assert!(create(&s, "q", &pod("p1", json!({"cpu": "600m"}))).status.success());
    let err = refusal(&create(&s, "q", &pod("p2", json!({"cpu": "0.6"}))));
    assert!(err.contains(r#"pods "p2" is forbidden: exceeded quota: q, requested: requests.cpu=600m, used: requests.cpu=600m, limited: requests.cpu=1"#), "{err}");
    let err = refusal(&create(&s, "q", &pod("p3", json!({}))));
    assert!(err.contains(r#"pods "p3" is forbidden: failed quota: q: must specify requests.cpu for: c"#), "{err}");
    used_becomes(&s, "q", "q", json!({"configmaps": "2", "count/deployments.apps": "1", "pods": "1", "requests.cpu": "600m"})).await;

    // The controller gives back what deleted objects used.
    s.kubectl_ok(&["-n", "q", "delete", "configmap", "c1"]);
    s.kubectl_ok(&["-n", "q", "delete", "pod", "p1", "--grace-period=0", "--force"]);
    used_becomes(&s, "q", "q", json!({"configmaps": "1", "count/deployments.apps": "1", "pods": "0", "requests.cpu": "0"})).await;
    s.kubectl_ok(&["-n", "q", "create", "configmap", "c3"]);
    assert!(create(&s, "q", &pod("p2", json!({"cpu": "1"}))).status.success());

    // A new limit is taken into the status.
    s.kubectl_ok(&["-n", "q", "patch", "resourcequota", "q", "--type=merge", "-p", r#"{"spec":{"hard":{"configmaps":"3","secrets":"4"}}}"#]);
    used_becomes(&s, "q", "q", json!({"configmaps": "2", "count/deployments.apps": "1", "pods": "1", "requests.cpu": "1", "secrets": "0"})).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_creates_never_exceed_hard() {
    let s = TestServer::start_with(WITHOUT_ROOT_CA).await;
    s.kubectl_ok(&["create", "namespace", "race"]);
    assert!(create(&s, "race", &quota("three", json!({"hard": {"configmaps": "3"}}))).status.success());
    used_becomes(&s, "race", "three", json!({"configmaps": "0"})).await;
    let outcomes: Vec<std::process::Output> = std::thread::scope(|scope| {
        let s = &s;
        let running: Vec<_> = (0..10).map(|i| scope.spawn(move || s.kubectl(&["-n", "race", "create", "configmap", &format!("c{i}")]))).collect();
        running.into_iter().map(|t| t.join().unwrap()).collect()
    });
    let created = outcomes.iter().filter(|o| o.status.success()).count();
    assert_eq!(created, 3, "{:?}", outcomes.iter().map(|o| String::from_utf8_lossy(&o.stderr).into_owned()).collect::<Vec<_>>());
    for refused in outcomes.iter().filter(|o| !o.status.success()) {
        let err = String::from_utf8_lossy(&refused.stderr);
        assert!(err.contains("exceeded quota: three, requested: configmaps=1, used: configmaps=3, limited: configmaps=3"), "{err}");
    }
    let listed = s.kubectl_ok(&["-n", "race", "get", "configmaps", "-o", "name"]);
    assert_eq!(listed.lines().count(), 3, "{listed}");
    used_becomes(&s, "race", "three", json!({"configmaps": "3"})).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_best_effort_quota_counts_only_best_effort_pods() {
    let s = TestServer::start().await;
    s.kubectl_ok(&["create", "namespace", "be"]);
    assert!(create(&s, "be", &quota("best-effort", json!({"hard": {"pods": "1"}, "scopes": ["BestEffort"]}))).status.success());
    used_becomes(&s, "be", "best-effort", json!({"pods": "0"})).await;
    assert!(create(&s, "be", &pod("free1", json!({}))).status.success());
    let err = refusal(&create(&s, "be", &pod("free2", json!({}))));
    assert!(err.contains(r#"pods "free2" is forbidden: exceeded quota: best-effort, requested: pods=1, used: pods=1, limited: pods=1"#), "{err}");
    // A pod with requests is not in the quota's scope.
    assert!(create(&s, "be", &pod("sized", json!({"cpu": "100m"}))).status.success());
    used_becomes(&s, "be", "best-effort", json!({"pods": "1"})).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controller_can_be_left_to_kube_controller_manager() {
    let s = TestServer::start_with(&["--controllers=*,-resourcequota"]).await;
    s.kubectl_ok(&["create", "namespace", "off"]);
    assert!(create(&s, "off", &quota("q", json!({"hard": {"configmaps": "0"}}))).status.success());
    tokio::time::sleep(Duration::from_secs(2)).await;
    let got: Value = serde_json::from_str(&s.kubectl_ok(&["-n", "off", "get", "resourcequota", "q", "-o", "json"])).unwrap();
    assert!(got["status"].get("used").is_none(), "{got}");
    // Without a status, the quota limits nothing yet (as in Kubernetes).
    s.kubectl_ok(&["-n", "off", "create", "configmap", "c"]);
    // Once a controller writes the status, admission enforces it.
    s.kubectl_ok(&["-n", "off", "patch", "resourcequota", "q", "--subresource=status", "--type=merge", "-p", r#"{"status":{"hard":{"configmaps":"0"},"used":{"configmaps":"0"}}}"#]);
    let err = refusal(&s.kubectl(&["-n", "off", "create", "configmap", "d"]));
    assert!(err.contains(r#"configmaps "d" is forbidden: exceeded quota: q, requested: configmaps=1, used: configmaps=0, limited: configmaps=0"#), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limited_resources_need_a_covering_quota() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("admission.yaml");
    std::fs::write(&config, "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: ResourceQuota\n  configuration:\n    apiVersion: apiserver.config.k8s.io/v1\n    kind: ResourceQuotaConfiguration\n    limitedResources:\n    - resource: pods\n      matchContains: [requests.memory]\n    - resource: pods\n      matchScopes:\n      - {scopeName: PriorityClass, operator: In, values: [cluster-services]}\n").unwrap();
    let s = TestServer::start_with(&["--admission-control-config-file", config.to_str().unwrap()]).await;
    s.kubectl_ok(&["create", "namespace", "limited"]);
    s.kubectl_ok(&["create", "priorityclass", "cluster-services", "--value=1000"]);

    // Memory is consumed only under a quota that limits it; a pod without requests is free.
    let out = create(&s, "limited", &pod("hungry", json!({"memory": "64Mi"})));
    assert!(refusal(&out).contains(r#"pods "hungry" is forbidden: insufficient quota to consume: requests.memory"#), "{}", refusal(&out));
    assert!(create(&s, "limited", &pod("free", json!({}))).status.success());
    // The cluster's own priority class only where a quota of that scope is.
    let mut critical = pod("critical", json!({}));
    critical["spec"]["priorityClassName"] = json!("cluster-services");
    let out = create(&s, "limited", &critical);
    assert!(refusal(&out).contains("insufficient quota to match these scopes: [{PriorityClass In [cluster-services]}]"), "{}", refusal(&out));

    let scoped = quota("critical", json!({"hard": {"pods": "10"}, "scopeSelector": {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In", "values": ["cluster-services"]}]}}));
    assert!(create(&s, "limited", &scoped).status.success());
    used_becomes(&s, "limited", "critical", json!({"pods": "0"})).await;
    assert!(create(&s, "limited", &critical).status.success());
    assert!(create(&s, "limited", &quota("memory", json!({"hard": {"requests.memory": "1Gi"}}))).status.success());
    used_becomes(&s, "limited", "memory", json!({"requests.memory": "0"})).await;
    assert!(create(&s, "limited", &pod("hungry", json!({"memory": "64Mi"}))).status.success());
}
