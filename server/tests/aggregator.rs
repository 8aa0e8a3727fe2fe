//! The aggregation layer against the real binary: an extension API server the test starts
//! (HTTPS with a CA of its own, accepting client certificates of a front-proxy CA), a Service and
//! Endpoints that name it, and an APIService; kubectl reaches its resources through this server,
//! which authorizes first and passes the user on in the headers the extension server trusts.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{json, Value};

use common::webhook_server::tls_server_config;
use common::TestServer;

const GROUP_VERSION: &str = "metrics.example.com/v1";

/// What the extension server saw of one request: path, `X-Remote-User`, `X-Remote-Group`s,
/// whether an `Authorization` header came, whether a client certificate was presented.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    user: String,
    groups: Vec<String>,
    authorization: bool,
    client_cert: bool,
}

struct Extension {
    port: u16,
    ca_pem: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Extension {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Answers the group/version's discovery and a list of widgets named after the caller.
fn answer(path: &str, user: &str) -> (u16, Value) {
    let widget = |ns: &str| json!({"apiVersion": GROUP_VERSION, "kind": "Widget", "metadata": {"name": format!("for-{user}"), "namespace": ns, "creationTimestamp": "2026-01-01T00:00:00Z"}});
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    match segments.as_slice() {
        ["apis", "metrics.example.com", version] => (200, json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": format!("metrics.example.com/{version}"), "resources": [
            {"name": "widgets", "singularName": "widget", "namespaced": true, "kind": "Widget", "verbs": ["get", "list"], "shortNames": ["wdg"]},
        ]})),
        ["apis", "metrics.example.com", "v1", "namespaces", ns, "widgets"] => {
            (200, json!({"apiVersion": GROUP_VERSION, "kind": "WidgetList", "metadata": {"resourceVersion": "1"}, "items": [widget(ns)]}))
        }
        ["openapi", "v2"] => (200, json!({"swagger": "2.0", "info": {"title": "widgets", "version": "v1"},
            "paths": {"/apis/metrics.example.com/v1/namespaces/{namespace}/widgets": {"get": {"operationId": "listWidgets"}}, "/api/v1/pods": {"get": {"operationId": "stolen"}}},
            "definitions": {"com.example.metrics.v1.Widget": {"type": "object", "properties": {"size": {"type": "integer"}}}},
        })),
        ["openapi", "v3"] => (200, json!({"paths": {"apis/metrics.example.com/v1": {"serverRelativeURL": "/openapi/v3/apis/metrics.example.com/v1?hash=0123"}}})),
        ["openapi", "v3", "apis", "metrics.example.com", "v1"] => (200, json!({"openapi": "3.0.0", "info": {"title": "widgets", "version": "v1"},
            "paths": {"/apis/metrics.example.com/v1/namespaces/{namespace}/widgets": {"get": {"x-kubernetes-group-version-kind": {"group": "metrics.example.com", "version": "v1", "kind": "Widget"}}}},
            "components": {"schemas": {"com.example.metrics.v1.Widget": {"type": "object", "description": "A widget, made for its caller.",
                "properties": {"size": {"type": "integer", "description": "How big the widget is."}},
                "x-kubernetes-group-version-kind": [{"group": "metrics.example.com", "version": "v1", "kind": "Widget"}]}}},
        })),
        _ => (404, json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404, "message": "not found"})),
    }
}

async fn start_extension(proxy_ca_pem: &str) -> Extension {
    let (config, ca_pem) = tls_server_config("extension-ca", &["widgets-api.default.svc"], Some(proxy_ca_pem));
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    let task = tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { continue };
            let (acceptor, record) = (acceptor.clone(), record.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else { return };
                let client_cert = tls.get_ref().1.peer_certificates().is_some_and(|c| !c.is_empty());
                let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let record = record.clone();
                    async move {
                        let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
                        let user = header("x-remote-user");
                        let groups = req.headers().get_all("x-remote-group").iter().filter_map(|v| v.to_str().ok()).map(String::from).collect();
                        let path = req.uri().path().to_string();
                        record.lock().unwrap().push(Seen { path: path.clone(), user: user.clone(), groups, authorization: req.headers().contains_key("authorization"), client_cert });
                        let (code, body) = answer(&path, &user);
                        let response = hyper::Response::builder().status(code).header("content-type", "application/json").body(Full::new(Bytes::from(body.to_string()))).unwrap();
                        Ok::<_, std::convert::Infallible>(response)
                    }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new()).serve_connection(TokioIo::new(tls), service).await;
            });
        }
    });
    Extension { port, ca_pem, seen, task }
}

fn apply(s: &TestServer, yaml: &str) {
    let mut cmd = s.kubectl_command(&["apply", "-f", "-"]);
    cmd.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(yaml.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// The APIService's `Available` condition once it has the status `want`.
async fn available(s: &TestServer, name: &str, want: &str) -> Value {
    let mut condition = None;
    for _ in 0..150 {
        let out = s.kubectl(&["get", "apiservice", name, "-o", "json"]);
        let apiservice: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        condition = apiservice["status"]["conditions"].as_array().into_iter().flatten().find(|c| c["type"] == "Available").cloned();
        if let Some(c) = condition.clone().filter(|c| c["status"] == want) {
            return c;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("{name} never had Available={want}: {condition:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_apiservice_hands_its_group_to_an_extension_server() {
    let (proxy_ca, mut leaves) = common::user_cert::proxy_pki(&["front-proxy-client"]);
    let (proxy_cert, proxy_key) = leaves.remove(0);
    let dir = tempfile::tempdir().unwrap();
    let (cert_file, key_file) = (dir.path().join("proxy.crt"), dir.path().join("proxy.key"));
    std::fs::write(&cert_file, proxy_cert).unwrap();
    std::fs::write(&key_file, proxy_key).unwrap();
    let s = TestServer::start_with(&["--proxy-client-cert-file", cert_file.to_str().unwrap(), "--proxy-client-key-file", key_file.to_str().unwrap()]).await;
    let ext = start_extension(&proxy_ca).await;
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(&ext.ca_pem);
    apply(&s, &format!(
        "apiVersion: v1\nkind: Service\nmetadata: {{name: widgets-api, namespace: default}}\nspec:\n  ports: [{{name: https, port: 443, targetPort: {port}}}]\n---\napiVersion: v1\nkind: Endpoints\nmetadata: {{name: widgets-api, namespace: default}}\nsubsets:\n- addresses: [{{ip: 127.0.0.1}}]\n  ports: [{{name: https, port: {port}}}]\n---\napiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {{name: v1.metrics.example.com}}\nspec:\n  group: metrics.example.com\n  version: v1\n  groupPriorityMinimum: 1000\n  versionPriority: 15\n  caBundle: {ca_bundle}\n  service: {{namespace: default, name: widgets-api, port: 443}}\n",
        port = ext.port
    ));
    let condition = available(&s, "v1.metrics.example.com", "True").await;
    assert_eq!(condition["reason"], "Passed");
    assert_eq!(condition["message"], "all checks passed");
    // The availability check asked as the aggregator, with the proxy's client certificate.
    let probe = ext.seen.lock().unwrap()[0].clone();
    assert_eq!((probe.path.as_str(), probe.user.as_str()), ("/apis/metrics.example.com/v1", "system:kube-aggregator"));
    assert!(probe.client_cert);

    // Discovery lists the group and, from the extension server, its resources.
    let resources = s.kubectl_ok(&["api-resources", "--api-group=metrics.example.com", "--no-headers"]);
    assert!(resources.contains("widgets") && resources.contains("wdg") && resources.contains("Widget"), "{resources}");
    assert!(s.kubectl_ok(&["get", "--raw", "/apis"]).contains("metrics.example.com/v1"));
    assert!(s.kubectl_ok(&["get", "--raw", "/apis/metrics.example.com"]).contains("\"preferredVersion\""));

    // The OpenAPI document carries the extension server's paths and definitions, not its
    // claims on paths this server serves.
    let openapi: Value = serde_json::from_str(&s.kubectl_ok(&["get", "--raw", "/openapi/v2"])).unwrap();
    assert_eq!(openapi["paths"]["/apis/metrics.example.com/v1/namespaces/{namespace}/widgets"]["get"]["operationId"], "listWidgets");
    assert_eq!(openapi["definitions"]["com.example.metrics.v1.Widget"]["properties"]["size"]["type"], "integer");
    assert_ne!(openapi["paths"]["/api/v1/pods"]["get"]["operationId"], "stolen");
    assert!(ext.seen.lock().unwrap().iter().any(|seen| seen.path == "/openapi/v2" && seen.user == "system:aggregator"));

    // OpenAPI v3: the index lists the group version, whose document is the server's own, and
    // kubectl explains the kind from it.
    let index: Value = serde_json::from_str(&s.kubectl_ok(&["get", "--raw", "/openapi/v3"])).unwrap();
    assert_eq!(index["paths"]["apis/metrics.example.com/v1"]["serverRelativeURL"], "/openapi/v3/apis/metrics.example.com/v1?hash=0123");
    assert!(index["paths"]["apis/apps/v1"].is_object());
    let explained = s.kubectl_ok(&["explain", "widgets.metrics.example.com.size"]);
    assert!(explained.contains("How big the widget is."), "{explained}");

    // A user allowed to list widgets gets the extension server's answer, made for that user.
    let carol = s.kubeconfig_for("carol", &["system:masters"]);
    let out = s.kubectl_as(&carol, &["get", "widgets.metrics.example.com", "-n", "default", "-o", "jsonpath={.items[*].metadata.name}"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "for-carol", "{}", String::from_utf8_lossy(&out.stderr));
    let last = ext.seen.lock().unwrap().last().cloned().unwrap();
    assert_eq!(last.path, "/apis/metrics.example.com/v1/namespaces/default/widgets");
    assert_eq!(last.user, "carol");
    assert!(last.groups.contains(&"system:masters".to_string()) && last.groups.contains(&"system:authenticated".to_string()), "{last:?}");
    assert!(!last.authorization && last.client_cert);

    // A user this server does not authorize never reaches the extension server.
    let before = ext.seen.lock().unwrap().len();
    let bob = s.kubeconfig_for("bob", &[]);
    let out = s.kubectl_as(&bob, &["get", "widgets.metrics.example.com", "-n", "default"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("widgets.metrics.example.com is forbidden: User \"bob\" cannot list resource \"widgets\" in API group \"metrics.example.com\" in the namespace \"default\""), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(ext.seen.lock().unwrap()[before..].iter().all(|seen| seen.user != "bob"));

    // An APIService whose Service does not exist is unavailable, and its group answers 503.
    apply(&s, "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {name: v2.metrics.example.com}\nspec:\n  group: metrics.example.com\n  version: v2\n  groupPriorityMinimum: 1000\n  versionPriority: 10\n  insecureSkipTLSVerify: false\n  service: {namespace: default, name: nowhere}\n");
    let condition = available(&s, "v2.metrics.example.com", "False").await;
    assert_eq!(condition["reason"], "ServiceNotFound");
    assert_eq!(condition["message"], "service/nowhere in \"default\" is not present");
    let reply = s.get("/apis/metrics.example.com/v2").await;
    assert_eq!((reply.status, reply.text()), (503, "service unavailable\n".to_string()));

    // Without the caBundle the server's certificate is not trusted, unless the APIService says
    // to skip verification.
    let apiservice = |version: &str, tls: &str| {
        format!("apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {{name: {version}.metrics.example.com}}\nspec:\n  group: metrics.example.com\n  version: {version}\n  groupPriorityMinimum: 1000\n  versionPriority: 5\n  {tls}\n  service: {{namespace: default, name: widgets-api}}\n")
    };
    apply(&s, &apiservice("v1alpha1", "insecureSkipTLSVerify: false"));
    let condition = available(&s, "v1alpha1.metrics.example.com", "False").await;
    assert_eq!(condition["reason"], "FailedDiscoveryCheck");
    assert!(condition["message"].as_str().unwrap().starts_with("failing or missing response from https://127.0.0.1:"), "{condition}");
    apply(&s, &apiservice("v1beta1", "insecureSkipTLSVerify: true"));
    assert_eq!(available(&s, "v1beta1.metrics.example.com", "True").await["reason"], "Passed");

    // An APIService is checked as kube-aggregator checks it.
    let mut cmd = s.kubectl_command(&["apply", "-f", "-"]);
    cmd.stdin(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(apiservice("v3", "caBundle: YWJj\n  insecureSkipTLSVerify: true").replace("name: v3.", "name: v4.").as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("metadata.name: Invalid value: \"v4.metrics.example.com\": must be `spec.version+\".\"+spec.group`: \"v3.metrics.example.com\""), "{err}");
    assert!(err.contains("spec.insecureSkipTLSVerify: Invalid value: true: may not be true if caBundle is present"), "{err}");
}
