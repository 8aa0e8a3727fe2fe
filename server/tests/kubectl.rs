//! kubectl against the real binary: create/get (YAML, jsonpath, table columns), apply, label,
//! annotate, scale, delete, get -w, explain, api-resources, namespaces and their deletion,
//! server-side dry run, and a smoke test with every `kubectl.1.NN` installed beside kubectl.

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{configmap, expect_success, TestServer};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, PostParams};
use kube::Api;

const MANIFEST: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
  labels: {app: demo}
data:
  a: "1"
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx}]
---
apiVersion: v1
kind: Pod
metadata:
  name: p1
spec:
  containers: [{name: c, image: busybox}]
"#;

/// Writes `content` to a file in the test's directory and returns its path as a string.
fn manifest(s: &TestServer, name: &str, content: &str) -> String {
    let path = s.dir().join(name);
    std::fs::write(&path, content).unwrap();
    path.to_str().unwrap().to_string()
}

/// The whitespace-separated columns of each output line.
fn rows(out: &str) -> Vec<Vec<&str>> {
    out.lines().map(|l| l.split_whitespace().collect()).collect()
}

/// The row whose first column is `name`.
fn row<'a>(out: &'a str, name: &str) -> Vec<&'a str> {
    rows(out).into_iter().find(|r| r.first() == Some(&name)).unwrap_or_else(|| panic!("no row {name} in:\n{out}"))
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test]
async fn create_and_get_in_every_format() {
    let s = TestServer::start().await;
    let file = manifest(&s, "all.yaml", MANIFEST);
    let created = s.kubectl_ok(&["create", "-f", &file]);
    for line in ["configmap/cfg created", "deployment.apps/web created", "pod/p1 created"] {
        assert!(created.contains(line), "{created}");
    }
    let again = s.kubectl(&["create", "-f", &file]);
    assert!(!again.status.success() && stderr(&again).contains("AlreadyExists"), "{}", stderr(&again));

    let yaml: serde_yaml::Value = serde_yaml::from_str(&s.kubectl_ok(&["get", "cm", "cfg", "-o", "yaml"])).unwrap();
    assert_eq!(yaml["kind"].as_str(), Some("ConfigMap"));
    assert_eq!(yaml["metadata"]["name"].as_str(), Some("cfg"));
    assert_eq!(yaml["metadata"]["namespace"].as_str(), Some("default"));
    assert_eq!(yaml["data"]["a"].as_str(), Some("1"));
    assert!(yaml["metadata"]["resourceVersion"].as_str().is_some_and(|rv| rv.parse::<u64>().is_ok()));
    assert_eq!(s.kubectl_ok(&["get", "cm", "cfg", "-o", "jsonpath={.metadata.labels.app}"]), "demo");

    let pods = s.kubectl_ok(&["get", "pods"]);
    assert_eq!(rows(&pods)[0], ["NAME", "READY", "STATUS", "RESTARTS", "AGE"], "{pods}");
    assert_eq!(row(&pods, "p1")[1..4], ["0/1", "Pending", "0"], "{pods}");
    let cms = s.kubectl_ok(&["get", "configmaps"]);
    assert_eq!(rows(&cms)[0], ["NAME", "DATA", "AGE"], "{cms}");
    assert_eq!(row(&cms, "cfg")[1], "1", "{cms}");
    let deploys = s.kubectl_ok(&["get", "deploy"]);
    assert_eq!(rows(&deploys)[0], ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"], "{deploys}");
    assert_eq!(row(&deploys, "web")[1], "0/1", "{deploys}");
    let wide = s.kubectl_ok(&["get", "pods", "-o", "wide"]);
    assert!(rows(&wide)[0].contains(&"NODE"), "{wide}");
    let by_label = s.kubectl_ok(&["get", "cm", "-l", "app=demo", "-o", "name"]);
    assert_eq!(by_label.trim(), "configmap/cfg");

    let missing = s.kubectl(&["get", "cm", "nope"]);
    assert!(!missing.status.success());
    assert!(stderr(&missing).contains(r#"(NotFound): configmaps "nope" not found"#), "{}", stderr(&missing));
}

#[tokio::test]
async fn apply_label_annotate_scale_delete() {
    let s = TestServer::start().await;
    let file = manifest(&s, "all.yaml", MANIFEST);
    let first = s.kubectl_ok(&["apply", "-f", &file]);
    assert!(first.contains("configmap/cfg created") && first.contains("deployment.apps/web created"), "{first}");
    let second = s.kubectl_ok(&["apply", "-f", &file]);
    for line in second.lines() {
        assert!(line.ends_with(" unchanged") || line.ends_with(" configured"), "{second}");
    }
    let changed = manifest(&s, "changed.yaml", &MANIFEST.replace(r#"a: "1""#, r#"a: "2""#));
    let third = s.kubectl_ok(&["apply", "-f", &changed]);
    assert!(third.contains("configmap/cfg configured"), "{third}");
    assert_eq!(s.kubectl_ok(&["get", "cm", "cfg", "-o", "jsonpath={.data.a}"]), "2");

    assert!(s.kubectl_ok(&["label", "cm", "cfg", "env=prod"]).contains("configmap/cfg labeled"));
    assert_eq!(s.kubectl_ok(&["get", "cm", "-l", "env=prod", "-o", "name"]).trim(), "configmap/cfg");
    assert!(s.kubectl_ok(&["annotate", "cm", "cfg", "owner=team-a"]).contains("configmap/cfg annotated"));
    assert_eq!(s.kubectl_ok(&["get", "cm", "cfg", "-o", "jsonpath={.metadata.annotations.owner}"]), "team-a");
    assert!(s.kubectl_ok(&["label", "cm", "cfg", "env-"]).contains("configmap/cfg unlabeled"));
    assert_eq!(s.kubectl_ok(&["get", "cm", "-l", "env=prod", "-o", "name"]), "");

    assert!(s.kubectl_ok(&["scale", "deployment", "web", "--replicas=3"]).contains("deployment.apps/web scaled"));
    assert_eq!(s.kubectl_ok(&["get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"]), "3");
    assert_eq!(s.kubectl_ok(&["get", "deploy", "web", "-o", "jsonpath={.metadata.generation}"]), "2");

    assert!(s.kubectl_ok(&["delete", "cm", "cfg"]).contains(r#"configmap "cfg" deleted"#));
    assert!(stderr(&s.kubectl(&["get", "cm", "cfg"])).contains("NotFound"));
    let rest = s.kubectl_ok(&["delete", "-f", &file, "--ignore-not-found"]);
    assert!(rest.contains(r#"deployment.apps "web" deleted"#), "{rest}");
    assert!(stderr(&s.kubectl(&["get", "deploy", "web"])).contains("NotFound"));
}

#[tokio::test]
async fn get_watch_prints_changes() {
    let s = TestServer::start().await;
    let mut child = s
        .kubectl_command(&["get", "configmaps", "--watch", "--output-watch-events"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn kubectl get -w");
    let (tx, lines) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let wait_for = |event: &str| {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line =
                lines.recv_timeout(left).unwrap_or_else(|_| panic!("kubectl get -w never printed {event} watched"));
            if line.split_whitespace().take(2).eq([event, "watched"]) {
                return;
            }
        }
    };
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    api.create(&PostParams::default(), &configmap("watched", &[])).await.unwrap();
    wait_for("ADDED");
    api.delete("watched", &DeleteParams::default()).await.unwrap();
    wait_for("DELETED");
    child.kill().unwrap();
    child.wait().unwrap();
}

#[tokio::test]
async fn events_print_like_kubectl_get_events() {
    let s = TestServer::start().await;
    let event = r#"
apiVersion: v1
kind: Event
metadata: {name: web.1}
involvedObject: {kind: Pod, name: web, namespace: default}
reason: Scheduled
message: Successfully assigned default/web to node-1
type: Normal
source: {component: default-scheduler}
count: 3
firstTimestamp: "2020-01-01T00:00:00Z"
lastTimestamp: "2020-01-01T00:00:00Z"
"#;
    let file = manifest(&s, "event.yaml", event);
    s.kubectl_ok(&["create", "-f", &file]);
    let out = s.kubectl_ok(&["get", "events"]);
    assert_eq!(rows(&out)[0], ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"], "{out}");
    let line = &rows(&out)[1];
    assert!(line[0].contains('y'), "last seen years ago: {out}");
    assert_eq!(line[1..5], ["Normal", "Scheduled", "pod/web", "Successfully"], "{out}");
    let wide = s.kubectl_ok(&["get", "events", "-o", "wide"]);
    let line = rows(&wide)[1].clone();
    assert_eq!(line[line.len() - 2..], ["3", "web.1"], "{wide}");
    assert!(line.contains(&"default-scheduler"), "{wide}");
}

#[tokio::test]
async fn explain_and_api_resources() {
    let s = TestServer::start().await;
    let explained = s.kubectl_ok(&["explain", "pods.spec.containers"]);
    assert!(explained.contains("image") && explained.contains("Container"), "{explained}");
    let explained = s.kubectl_ok(&["explain", "deployment.spec.replicas"]);
    assert!(explained.contains("integer"), "{explained}");

    let resources = s.kubectl_ok(&["api-resources"]);
    assert_eq!(rows(&resources)[0], ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"], "{resources}");
    assert_eq!(row(&resources, "configmaps"), ["configmaps", "cm", "v1", "true", "ConfigMap"]);
    assert_eq!(row(&resources, "deployments"), ["deployments", "deploy", "apps/v1", "true", "Deployment"]);
    assert_eq!(row(&resources, "namespaces"), ["namespaces", "ns", "v1", "false", "Namespace"]);
    let apps = s.kubectl_ok(&["api-resources", "--api-group=apps", "-o", "name"]);
    assert!(apps.lines().any(|l| l == "deployments.apps"), "{apps}");
}

const DOOMED: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: doomed}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: inside, namespace: doomed}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: inside, namespace: doomed}
spec:
  selector: {matchLabels: {app: inside}}
  template:
    metadata: {labels: {app: inside}}
    spec:
      containers: [{name: c, image: nginx}]
"#;

#[tokio::test]
async fn namespaces_listed_and_deleted_with_their_contents() {
    let s = TestServer::start().await;
    let listed = s.kubectl_ok(&["get", "ns"]);
    assert_eq!(rows(&listed)[0], ["NAME", "STATUS", "AGE"], "{listed}");
    for ns in ["default", "kube-node-lease", "kube-public", "kube-system"] {
        assert_eq!(row(&listed, ns)[1], "Active", "{listed}");
    }
    let file = manifest(&s, "doomed.yaml", DOOMED);
    assert!(s.kubectl_ok(&["apply", "-f", &file]).contains("namespace/doomed created"));
    assert_eq!(s.kubectl_ok(&["get", "cm", "inside", "-n", "doomed", "-o", "name"]).trim(), "configmap/inside");

    let started = Instant::now();
    s.kubectl_ok(&["delete", "ns", "doomed", "--wait=false"]);
    loop {
        let out = s.kubectl(&["get", "ns", "doomed"]);
        if !out.status.success() {
            assert!(stderr(&out).contains("NotFound"), "{}", stderr(&out));
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(15), "namespace doomed still there after 15 s");
        std::thread::sleep(Duration::from_millis(250));
    }
    for kind in ["configmaps", "deployments"] {
        let left = s.kubectl_ok(&["get", kind, "-n", "doomed", "-o", "name"]);
        assert_eq!(left, "", "{kind} left behind in a deleted namespace");
    }

    // Content held by a finalizer keeps the namespace, and its conditions say why.
    s.kubectl_ok(&["create", "ns", "held"]);
    s.kubectl_ok(&["create", "cm", "kept", "-n", "held"]);
    s.kubectl_ok(&["patch", "cm", "kept", "-n", "held", "--type", "merge", "-p", r#"{"metadata":{"finalizers":["example.com/hold"]}}"#]);
    s.kubectl_ok(&["delete", "ns", "held", "--wait=false"]);
    let condition = |kind: &str| {
        let out = s.kubectl_ok(&["get", "ns", "held", "-o", &format!("jsonpath={{.status.conditions[?(@.type==\"{kind}\")].message}}")]);
        out.trim().to_string()
    };
    // Once the rest is deleted, only the held ConfigMap remains.
    let started = Instant::now();
    while condition("NamespaceContentRemaining") != "Some resources are remaining: configmaps has 1 resource instances" {
        assert!(started.elapsed() < Duration::from_secs(15), "conditions: {}", condition("NamespaceContentRemaining"));
        std::thread::sleep(Duration::from_millis(250));
    }
    assert_eq!(condition("NamespaceFinalizersRemaining"), "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances");
    assert_eq!(condition("NamespaceDeletionContentFailure"), "All content successfully deleted, may be waiting on finalization");
    s.kubectl_ok(&["patch", "cm", "kept", "-n", "held", "--type", "merge", "-p", r#"{"metadata":{"finalizers":null}}"#]);
    let started = Instant::now();
    while s.kubectl(&["get", "ns", "held"]).status.success() {
        assert!(started.elapsed() < Duration::from_secs(15), "namespace held still there after its content was released");
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[tokio::test]
async fn generator_commands_create_objects() {
    let s = TestServer::start().await;
    assert!(s.kubectl_ok(&["create", "namespace", "made"]).contains("namespace/made created"));
    assert!(s
        .kubectl_ok(&["create", "configmap", "made", "-n", "made", "--from-literal=k=v"])
        .contains("configmap/made created"));
    assert_eq!(s.kubectl_ok(&["get", "cm", "made", "-n", "made", "-o", "jsonpath={.data.k}"]), "v");
    assert!(s
        .kubectl_ok(&["create", "deployment", "made", "-n", "made", "--image=nginx", "--replicas=2"])
        .contains("deployment.apps/made created"));
    assert_eq!(s.kubectl_ok(&["get", "deploy", "made", "-n", "made", "-o", "jsonpath={.spec.replicas}"]), "2");
    assert!(s
        .kubectl_ok(&["create", "service", "clusterip", "made", "-n", "made", "--tcp=80:8080"])
        .contains("service/made created"));
    let ip = s.kubectl_ok(&["get", "svc", "made", "-n", "made", "-o", "jsonpath={.spec.clusterIP}"]);
    assert!(ip.starts_with("10."), "clusterIP {ip:?}");
}

#[tokio::test]
async fn server_dry_run_creates_nothing() {
    let s = TestServer::start().await;
    let out = s.kubectl_ok(&["create", "deployment", "dry", "--image=nginx", "--dry-run=server", "-o", "yaml"]);
    let yaml: serde_yaml::Value = serde_yaml::from_str(&out).unwrap();
    assert_eq!(yaml["metadata"]["name"].as_str(), Some("dry"));
    // Server-side defaults show the server handled it.
    assert_eq!(yaml["spec"]["strategy"]["type"].as_str(), Some("RollingUpdate"), "{out}");
    assert_eq!(yaml["spec"]["template"]["spec"]["restartPolicy"].as_str(), Some("Always"), "{out}");
    let get = s.kubectl(&["get", "deployment", "dry"]);
    assert!(!get.status.success() && stderr(&get).contains("NotFound"), "{}", stderr(&get));

    let file = manifest(&s, "cm.yaml", MANIFEST.split("---").next().unwrap());
    assert!(s
        .kubectl_ok(&["apply", "-f", &file, "--dry-run=server"])
        .contains("configmap/cfg created (server dry run)"));
    assert!(!s.kubectl(&["get", "cm", "cfg"]).status.success());
}

/// `kubectl.1.NN` binaries in the directory of the `kubectl` found on the PATH, oldest first.
fn versioned_kubectls() -> Vec<PathBuf> {
    let Some(path) = std::env::var_os("PATH") else { return vec![] };
    let Some(kubectl) = std::env::split_paths(&path).map(|d| d.join("kubectl")).find(|p| p.is_file()) else {
        return vec![];
    };
    let dir = std::fs::canonicalize(&kubectl).ok().and_then(|p| p.parent().map(Path::to_path_buf));
    let Some(entries) = dir.and_then(|d| std::fs::read_dir(d).ok()) else { return vec![] };
    let mut found: Vec<(u32, PathBuf)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let minor = name.strip_prefix("kubectl.1.")?.parse().ok()?;
            Some((minor, e.path()))
        })
        .collect();
    found.sort();
    found.into_iter().map(|(_, p)| p).collect()
}

#[tokio::test]
async fn smoke_with_every_installed_kubectl_version() {
    let kubectls = versioned_kubectls();
    if kubectls.is_empty() {
        return;
    }
    let s = TestServer::start().await;
    for kubectl in &kubectls {
        let version = kubectl.file_name().unwrap().to_string_lossy().replace("kubectl.", "");
        let run = |args: &[&str]| expect_success(args, s.kubectl_binary_command(kubectl, args).output().unwrap());
        let namespaces = run(&["get", "ns"]);
        assert!(row(&namespaces, "default")[1] == "Active", "{version}: {namespaces}");
        let name = format!("smoke-{}", version.replace('.', "-"));
        run(&["create", "configmap", &name, "--from-literal=k=v"]);
        assert_eq!(run(&["get", "configmap", &name, "-o", "jsonpath={.data.k}"]), "v", "{version}");
        let cms = run(&["get", "configmaps"]);
        assert_eq!(rows(&cms)[0], ["NAME", "DATA", "AGE"], "{version}: {cms}");
        let resources = run(&["api-resources"]);
        assert_eq!(row(&resources, "configmaps")[..3], ["configmaps", "cm", "v1"], "{version}");
    }
}

#[tokio::test]
async fn list_files_are_validated_and_created() {
    // kubectl validates a `kind: List` against /openapi/v2 in its protobuf form.
    let s = TestServer::start().await;
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "listed-a"}, "data": {"k": "v"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "listed-b"}, "data": {"k": "v"}},
    ]});
    let file = manifest(&s, "list.json", &list.to_string());
    let out = s.kubectl_ok(&["create", "-f", &file]);
    assert!(out.contains("configmap/listed-a created") && out.contains("configmap/listed-b created"), "{out}");
    // Validation is real: an unknown field in an item is refused under Strict.
    let bad = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "listed-c"}, "bogus": 1},
    ]});
    let file = manifest(&s, "bad.json", &bad.to_string());
    let out = s.kubectl(&["create", "-f", &file, "--validate=strict"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("bogus"), "{}", stderr(&out));
}
