//! Parity with kube-apiserver, kind by kind: each case under `tests/parity/cases/` (one file per
//! built-in kind) is a valid object, invalid variants of it and updates of it; the same requests
//! (create, the `Table` of the object, each invalid create, each update, delete) are sent to
//! this server and their answers compared with kube-apiserver 1.36's, recorded under
//! `tests/parity/golden/`. Answers are compared after removing what legitimately differs
//! between two servers (UIDs, resource versions, times, allocated addresses).
//!
//! A case marked `create_only` is a kind that is answered, never stored (the access and token
//! reviews, a service account's TokenRequest): only its create and invalid creates are sent.
//!
//! `tests/parity/known-differences.txt` lists the steps that do not match yet: a listed step
//! that differs passes, an unlisted one fails, and so does a listed one that now matches (so
//! the list only shrinks).
//!
//! Recording (a development tool; needs kube-apiserver, e.g. from the conformance
//! `reference.sh`): `PARITY_RECORD=KUBECONFIG cargo test -p apiserver --test integration parity::` writes the golden
//! files from the server KUBECONFIG points at. `PARITY_CASE=stem` runs one case;
//! `PARITY_OURS=DIR` also writes this server's answers beside the golden ones, for diffing.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use common::{send, Reply, TestServer};
use kube::Client;
use serde_json::{json, Map, Value};

/// The namespace every namespaced case lives in.
const NAMESPACE: &str = "parity";

/// What a Table is asked for with (as kubectl asks).
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

/// One kind's case, as written in `tests/parity/cases/STEM.yaml`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    /// The collection's URL path (in namespace `parity` for a namespaced kind).
    path: String,
    /// A valid object (its name is used throughout).
    object: Value,
    /// Objects created first, each with its collection's path (a Service for Endpoints...).
    #[serde(default)]
    needs: Vec<Needed>,
    /// Invalid variants: a JSON merge patch over `object` each, created under another name.
    #[serde(default)]
    invalid: BTreeMap<String, Value>,
    /// Valid variants Kubernetes warns about, created (and deleted) as the invalid ones.
    #[serde(default)]
    warned: BTreeMap<String, Value>,
    /// Updates: a JSON merge patch over the stored object each, sent as a PUT, in order.
    #[serde(default)]
    update: BTreeMap<String, Value>,
    /// The object gets conditions from a controller of the server (a FlowSchema's `Dangling`, a
    /// definition's `NamesAccepted`): updates wait until they are there, as they found them
    /// when recorded.
    #[serde(default)]
    status_from_controller: bool,
    /// Answered, never stored: only the create and the invalid creates are sent, and the
    /// variants keep the object's (empty) metadata.
    #[serde(default)]
    create_only: bool,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Needed {
    path: String,
    object: Value,
}

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/parity")
}

fn cases() -> Vec<(String, Case)> {
    let only = std::env::var("PARITY_CASE").ok();
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir().join("cases")).expect("tests/parity/cases") {
        let path = entry.unwrap().path();
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        if only.as_ref().is_some_and(|o| *o != stem) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let case: Case = serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        out.push((stem, case));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// RFC 7386: `patch` merged over `target`.
fn merge(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else {
                    merge(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        (t, p) => *t = p.clone(),
    }
}

fn is_time(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 20 && b[4] == b'-' && b[7] == b'-' && b[10] == b'T' && b[13] == b':' && s.ends_with('Z')
}

/// An answer without what differs between any two servers.
fn normalize(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if let Some(Value::Object(meta)) = m.get_mut("metadata") {
                for k in ["uid", "resourceVersion", "creationTimestamp", "managedFields", "selfLink"] {
                    meta.remove(k);
                }
            }
            // A service account token (each server signs its own).
            if m.get("kind").is_some_and(|k| k == "TokenRequest") {
                if let Some(Value::Object(status)) = m.get_mut("status") {
                    if status.contains_key("token") {
                        status.insert("token".into(), json!("<token>"));
                    }
                }
            }
            // The fingerprint of each server's own admin certificate.
            if let Some(id) = m.get_mut("authentication.kubernetes.io/credential-id") {
                *id = json!(["<credential>"]);
            }
            // Who asked for a certificate: each server's own admin.
            if m.get("kind").is_some_and(|k| k == "CertificateSigningRequest") {
                if let Some(Value::Object(spec)) = m.get_mut("spec") {
                    for k in ["username", "uid", "groups", "extra"] {
                        if spec.contains_key(k) {
                            spec.insert(k.into(), json!("<requestor>"));
                        }
                    }
                }
            }
            for (k, val) in m.iter_mut() {
                match (k.as_str(), &*val) {
                    ("clusterIP" | "nodePort", Value::String(_) | Value::Number(_)) if val != "None" => *val = json!("<allocated>"),
                    ("clusterIPs", Value::Array(_)) => *val = json!(["<allocated>"]),
                    ("uid", Value::String(_)) => *val = json!("<uid>"),
                    _ => normalize(val),
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(normalize),
        Value::String(s) if is_time(s) => *s = "<time>".into(),
        _ => {}
    }
}

/// A `Table` as compared: its columns and its row's cells (ages and times masked); the rows'
/// objects are left out.
fn table(mut t: Value) -> Value {
    let columns = t["columnDefinitions"].take();
    let names: Vec<String> = columns.as_array().into_iter().flatten().map(|c| c["name"].as_str().unwrap_or_default().to_string()).collect();
    let rows: Vec<Value> = t["rows"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            let cells: Vec<Value> = r["cells"]
                .as_array()
                .into_iter()
                .flatten()
                .zip(&names)
                .map(|(c, name)| match (name.as_str(), c) {
                    ("Age" | "Duration" | "Last Schedule" | "Last Seen" | "First Seen", Value::String(s)) if s.chars().next().is_some_and(|c| c.is_ascii_digit()) => json!("<age>"),
                    ("Requestor", Value::String(_)) => json!("<requestor>"),
                    // A Service's allocated IP and node ports.
                    ("Cluster-IP", Value::String(s)) if s.parse::<std::net::IpAddr>().is_ok() => json!("<allocated>"),
                    ("Port(s)", Value::String(s)) => json!(s.split(',').map(|p| match p.split_once(':') {
                        Some((port, rest)) => format!("{port}:<allocated>/{}", rest.split_once('/').map_or("", |r| r.1)),
                        None => p.to_string(),
                    }).collect::<Vec<_>>().join(",")),
                    _ => c.clone(),
                })
                .collect();
            json!(cells)
        })
        .collect();
    let mut out = json!({"columns": columns, "rows": rows});
    normalize(&mut out);
    out
}

/// One answer as compared: the code, the body (normalized) and any warnings.
fn answer(reply: &Reply, as_table: bool) -> Value {
    let body: Value = serde_json::from_slice(&reply.body).unwrap_or_else(|_| json!(reply.text()));
    let mut out = Map::new();
    out.insert("code".into(), json!(reply.status));
    if as_table && reply.status == 200 {
        out.insert("table".into(), table(body));
    } else {
        let mut body = body;
        normalize(&mut body);
        out.insert("body".into(), body);
    }
    let warnings: Vec<String> = reply.headers.get_all("warning").iter().map(|w| w.to_str().unwrap_or_default().to_string()).collect();
    if !warnings.is_empty() {
        out.insert("warnings".into(), json!(warnings));
    }
    Value::Object(out)
}

fn request(method: &str, path: &str, body: Option<&Value>) -> http::Request<Vec<u8>> {
    http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .body(body.map(|b| b.to_string().into_bytes()).unwrap_or_default())
        .unwrap()
}

fn named(path: &str, name: &str) -> String {
    format!("{path}/{name}")
}

fn name_of(obj: &Value) -> String {
    obj["metadata"]["name"].as_str().expect("every case object has a name").to_string()
}

/// Creates the namespace and its default ServiceAccount (which kube-apiserver's admission
/// wants for pods; no controller makes it on a lone reference server).
async fn prepare(client: &Client) {
    for (path, obj) in [
        ("/api/v1/namespaces", json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})),
        (&*format!("/api/v1/namespaces/{NAMESPACE}/serviceaccounts"), json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})),
    ] {
        let r = send(client, request("POST", path, Some(&obj))).await;
        assert!(r.status == 201 || r.status == 409, "{path}: {} {}", r.status, r.text());
    }
}

/// Runs one case; returns each step's answer by step name.
async fn run(client: &Client, case: &Case) -> BTreeMap<String, Value> {
    if case.create_only {
        return run_create_only(client, case).await;
    }
    let name = name_of(&case.object);
    let invalid_name = |step: &str| format!("{name}-{step}");
    // What an earlier run (against a long-lived reference) may have left.
    let leftovers = std::iter::once(name.clone()).chain(case.invalid.keys().chain(case.warned.keys()).map(|s| invalid_name(s)));
    for n in leftovers {
        send(client, request("DELETE", &named(&case.path, &n), None)).await;
    }
    for need in &case.needs {
        let r = send(client, request("POST", &need.path, Some(&need.object))).await;
        assert!(r.status == 201 || r.status == 409, "{}: {} {}", need.path, r.status, r.text());
    }
    let mut steps = BTreeMap::new();
    steps.insert("create".to_string(), answer(&send(client, request("POST", &case.path, Some(&case.object))).await, false));
    let mut get = request("GET", &named(&case.path, &name), None);
    get.headers_mut().insert("accept", http::HeaderValue::from_static(TABLE));
    steps.insert("table".to_string(), answer(&send(client, get).await, true));
    let variants = case.invalid.iter().map(|v| ("invalid", v)).chain(case.warned.iter().map(|v| ("warned", v)));
    for (kind, (step, patch)) in variants {
        let mut obj = case.object.clone();
        merge(&mut obj, patch);
        obj["metadata"]["name"] = json!(invalid_name(step));
        let reply = send(client, request("POST", &case.path, Some(&obj))).await;
        steps.insert(format!("{kind}/{step}"), answer(&reply, false));
        if reply.status < 300 {
            send(client, request("DELETE", &named(&case.path, &invalid_name(step)), None)).await;
        }
    }
    if case.status_from_controller {
        let has_status = |o: &Value| o["status"]["conditions"].as_array().is_some_and(|c| !c.is_empty());
        let mut waited = 0;
        while !has_status(&send(client, request("GET", &named(&case.path, &name), None)).await.json()) && waited < 100 {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            waited += 1;
        }
    }
    for (step, patch) in &case.update {
        let mut current = send(client, request("GET", &named(&case.path, &name), None)).await.json();
        merge(&mut current, patch);
        steps.insert(format!("update/{step}"), answer(&send(client, request("PUT", &named(&case.path, &name), Some(&current))).await, false));
    }
    steps.insert("delete".to_string(), answer(&send(client, request("DELETE", &named(&case.path, &name), None)).await, false));
    for need in case.needs.iter().rev() {
        send(client, request("DELETE", &named(&need.path, &name_of(&need.object)), None)).await;
    }
    steps
}

/// Runs a case of a kind that is answered, never stored: its create and invalid creates.
async fn run_create_only(client: &Client, case: &Case) -> BTreeMap<String, Value> {
    let mut steps = BTreeMap::new();
    steps.insert("create".to_string(), answer(&send(client, request("POST", &case.path, Some(&case.object))).await, false));
    for (step, patch) in &case.invalid {
        let mut obj = case.object.clone();
        merge(&mut obj, patch);
        steps.insert(format!("invalid/{step}"), answer(&send(client, request("POST", &case.path, Some(&obj))).await, false));
    }
    steps
}

fn golden_path(stem: &str) -> PathBuf {
    dir().join("golden").join(format!("{stem}.json"))
}

fn write(path: &Path, steps: &BTreeMap<String, Value>) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_string_pretty(steps).unwrap() + "\n").unwrap();
}

/// `stem step` lines; `#` starts a comment.
fn known_differences() -> BTreeSet<String> {
    let text = std::fs::read_to_string(dir().join("known-differences.txt")).unwrap_or_default();
    text.lines().map(|l| l.split('#').next().unwrap_or_default().trim().to_string()).filter(|l| !l.is_empty()).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn built_in_kinds_answer_as_kube_apiserver_does() {
    if let Ok(kubeconfig) = std::env::var("PARITY_RECORD") {
        let client = common::client_from(Path::new(&kubeconfig), false).await.expect("the reference's kubeconfig");
        prepare(&client).await;
        for (stem, case) in cases() {
            write(&golden_path(&stem), &run(&client, &case).await);
        }
        return;
    }
    // kube-apiserver answered alone: without what kube-controller-manager would add (the
    // admission policies' type-checking status, quotas' usage).
    let server = TestServer::start_with(&["--controllers=*,-validatingadmissionpolicy-status,-resourcequota"]).await;
    let client = server.client();
    prepare(&client).await;
    let known = known_differences();
    let ours_dir = std::env::var("PARITY_OURS").ok().map(PathBuf::from);
    let (mut differ, mut stale, mut compared) = (Vec::new(), Vec::new(), 0);
    for (stem, case) in cases() {
        let ours = run(&client, &case).await;
        if let Some(d) = &ours_dir {
            write(&d.join(format!("{stem}.json")), &ours);
        }
        let Ok(text) = std::fs::read_to_string(golden_path(&stem)) else {
            differ.push(format!("{stem}: no golden answers; record them (see this file's header)"));
            continue;
        };
        let golden: BTreeMap<String, Value> = serde_json::from_str(&text).unwrap();
        let steps: BTreeSet<&String> = golden.keys().chain(ours.keys()).collect();
        for step in steps {
            compared += 1;
            let id = format!("{stem} {step}");
            let same = golden.get(step) == ours.get(step);
            match (same, known.contains(&id)) {
                (false, false) => differ.push(format!(
                    "{id}\n  kube-apiserver: {}\n  this server:    {}",
                    golden.get(step).map_or("-".into(), Value::to_string),
                    ours.get(step).map_or("-".into(), Value::to_string)
                )),
                (true, true) => stale.push(id),
                _ => {}
            }
        }
    }
    let partial = std::env::var("PARITY_CASE").is_ok();
    assert!(differ.is_empty(), "{} of {compared} steps differ from kube-apiserver's answers:\n{}", differ.len(), differ.join("\n"));
    assert!(partial || stale.is_empty(), "listed in known-differences.txt but now the same (remove them):\n{}", stale.join("\n"));
}
