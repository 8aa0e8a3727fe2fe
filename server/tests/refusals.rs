//! Hostile and malformed input against the real binary, refused as kube-apiserver 1.36 refuses
//! it (codes and messages recorded from it): oversized and ill-keyed ConfigMaps and Secrets,
//! type metadata of the wrong JSON type, bad owner references and finalizers, a patch that
//! moves the object, an untyped applied configuration, a delete whose body is no DeleteOptions,
//! list parameters that do not parse, continue tokens Kubernetes never issues, a custom
//! resource asked for in Protobuf only (406), a Content-Type without a media type, and HTTP/1.1
//! framing Go's server refuses (sent as raw bytes over TLS).

use crate::common;

use std::sync::Arc;

use common::TestServer;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn post(path: &str, body: Vec<u8>, content_type: &str) -> http::Request<Vec<u8>> {
    http::Request::post(path).header("content-type", content_type).body(body).unwrap()
}

fn configmap(metadata: Value, data: Value) -> Vec<u8> {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}).to_string().into_bytes()
}

/// The causes of a 422, as `field: message`.
fn causes(status: &Value) -> Vec<String> {
    status["details"]["causes"].as_array().into_iter().flatten().map(|c| format!("{}: {}", c["field"].as_str().unwrap_or_default(), c["message"].as_str().unwrap_or_default())).collect()
}

const CMS: &str = "/api/v1/namespaces/default/configmaps";

#[tokio::test(flavor = "multi_thread")]
async fn objects_kubernetes_refuses_are_refused_in_its_words() {
    let s = TestServer::start().await;
    let json = "application/json";

    // A mebibyte of data at most; keys that are no file names.
    let big = s.request(post(CMS, configmap(json!({"name": "big"}), json!({"a": "x".repeat(1024 * 1024), "b": "y"})), json)).await.expect_status(422, "Invalid");
    assert_eq!(big["message"], "ConfigMap \"big\" is invalid: []: Too long: may not be more than 1048576 bytes");
    let keys = s.request(post(CMS, configmap(json!({"name": "keys"}), json!({".": "1", "..a": "2"})), json)).await.expect_status(422, "Invalid");
    assert_eq!(causes(&keys), ["data[.]: Invalid value: \".\": must not be '.'", "data[..a]: Invalid value: \"..a\": must not start with '..'"]);

    // Type metadata Go cannot read.
    let body = br#"{"apiVersion": 1, "kind": "ConfigMap", "metadata": {"name": "n"}}"#.to_vec();
    let typed = s.request(post(CMS, body, json)).await.expect_status(400, "BadRequest");
    assert_eq!(
        typed["message"],
        "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: json: cannot unmarshal number into Go struct field .apiVersion of type string ({\"apiVersion\": 1, \"kind\": \"Con ...)"
    );

    // Owner references and finalizers.
    let owners = json!([
        {"apiVersion": "a/b/c", "kind": "ConfigMap", "name": "x", "uid": "", "controller": true},
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "y", "uid": "u2", "controller": true}
    ]);
    let owned = s.request(post(CMS, configmap(json!({"name": "owned", "ownerReferences": owners}), json!({})), json)).await.expect_status(422, "Invalid");
    assert_eq!(
        causes(&owned),
        [
            "metadata.ownerReferences.apiVersion: Invalid value: \"a/b/c\": version must not be empty",
            "metadata.ownerReferences.uid: Invalid value: \"\": must not be empty",
            "metadata.ownerReferences: Invalid value: [{\"apiVersion\":\"a/b/c\",\"kind\":\"ConfigMap\",\"name\":\"x\",\"uid\":\"\",\"controller\":true},{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"y\",\"uid\":\"u2\",\"controller\":true}]: Only one reference can have Controller set to true. Found \"true\" in references for ConfigMap/x and ConfigMap/y",
        ]
    );
    let finalized = s.request(post(CMS, configmap(json!({"name": "fin", "finalizers": ["a b", "example.com/ok", "x".repeat(64)]}), json!({})), json)).await.expect_status(422, "Invalid");
    assert_eq!(
        causes(&finalized),
        [
            "metadata.finalizers: Invalid value: \"a b\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            &format!("metadata.finalizers: Invalid value: \"{}\": name part must be no more than 63 bytes", "x".repeat(64)),
            "metadata.finalizers[0]: Invalid value: \"a b\": name is neither a standard finalizer name nor is it fully qualified",
            &format!("metadata.finalizers[2]: Invalid value: \"{}\": name is neither a standard finalizer name nor is it fully qualified", "x".repeat(64)),
        ]
    );
    // Nothing of it was stored.
    let listed = s.get(CMS).await.json();
    assert!(listed["items"].as_array().unwrap().iter().all(|i| i["metadata"]["name"] == "kube-root-ca.crt"), "{listed}");


    // A patch may not move the object, an applied configuration names its type, a delete's body
    // is DeleteOptions (nothing is deleted otherwise).
    s.request(post(CMS, configmap(json!({"name": "kept"}), json!({"a": "1"})), json)).await;
    let patch = |body: &str, content_type: &str| http::Request::patch(format!("{CMS}/kept?fieldManager=m")).header("content-type", content_type).body(body.as_bytes().to_vec()).unwrap();
    let moved = s.request(patch(r#"[{"op": "replace", "path": "/metadata/namespace", "value": "other"}]"#, "application/json-patch+json")).await.expect_status(400, "BadRequest");
    assert_eq!(moved["message"], "the namespace of the provided object does not match the namespace sent on the request");
    let untyped = s.request(patch(r#"{"apiVersion": "v1", "metadata": {"name": "kept"}}"#, "application/apply-patch+yaml")).await.expect_status(400, "BadRequest");
    assert_eq!(untyped["message"], "invalid object type: /v1, Kind=");
    let pod = br#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}}"#.to_vec();
    let deleted = s.request(http::Request::delete(format!("{CMS}/kept")).header("content-type", json).body(pod).unwrap()).await.expect_status(400, "BadRequest");
    assert_eq!(deleted["message"], "no kind \"Pod\" is registered for version \"v1\" in scheme \"k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme/register.go:27\"");
    assert_eq!(s.get(&format!("{CMS}/kept")).await.status, 200);

    // A body whose Content-Type names no media type.
    let unknown = s.request(post(CMS, configmap(json!({"name": "typed"}), json!({})), ";;;")).await;
    assert_eq!(unknown.status, 415, "{}", unknown.text());
}

#[tokio::test(flavor = "multi_thread")]
async fn list_parameters_and_continue_tokens_that_do_not_parse_are_refused() {
    let s = TestServer::start().await;
    let timeout = s.get(&format!("{CMS}?timeoutSeconds=abc")).await.expect_status(400, "BadRequest");
    assert_eq!(timeout["message"], "strconv.ParseInt: parsing \"abc\": invalid syntax");
    let overflow = s.get(&format!("{CMS}?timeoutSeconds=99999999999999999999")).await.expect_status(400, "BadRequest");
    assert_eq!(overflow["message"], "strconv.ParseInt: parsing \"99999999999999999999\": value out of range");
    let initial = s.get(&format!("{CMS}?sendInitialEvents=true")).await.expect_status(422, "Invalid");
    assert_eq!(initial["message"], "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list");
    // Padding Kubernetes never writes, an empty start key.
    let padded = s.get(&format!("{CMS}?limit=1&continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiJ4In0=")).await.expect_status(400, "BadRequest");
    assert_eq!(padded["message"], "invalid continue token: continue key is not valid: illegal base64 data at input byte 55");
    let empty = s.get(&format!("{CMS}?limit=1&continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiIifQ")).await.expect_status(400, "BadRequest");
    assert_eq!(empty["message"], "invalid continue token: continue key is not valid: encoded start key empty (version meta.k8s.io/v1)");
    // A token this server issued still pages.
    for name in ["a", "b"] {
        s.request(post(CMS, configmap(json!({"name": name}), json!({})), "application/json")).await;
    }
    let first = s.get(&format!("{CMS}?limit=1")).await.json();
    let token = first["metadata"]["continue"].as_str().expect("a continue token");
    assert!(!token.contains('='), "{token}");
    let next = s.get(&format!("{CMS}?limit=1&continue={token}")).await;
    assert_eq!(next.status, 200, "{}", next.text());
}

/// Sends `request` as raw bytes over TLS (no client certificate: framing is refused before
/// anyone is authenticated) and returns what came back.
async fn raw(s: &TestServer, request: &str) -> String {
    let mut roots = rustls::RootCertStore::empty();
    let ca = std::fs::read_to_string(s.data_dir().join("pki/ca.crt")).unwrap();
    for c in rustls_pemfile::certs(&mut ca.as_bytes()) {
        roots.add(c.unwrap()).unwrap();
    }
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", s.port())).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let mut stream = tokio_rustls::TlsConnector::from(Arc::new(config)).connect(name, tcp).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(10), stream.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn http_framing_go_refuses_is_refused() {
    let s = TestServer::start().await;
    let get = |headers: &str| format!("GET /api/v1/namespaces HTTP/1.1\r\n{headers}Connection: close\r\n\r\n");
    let cases = [
        (get(""), "HTTP/1.1 400", "400 Bad Request: missing required Host header"),
        (get("Host: a\r\nHost: b\r\n"), "HTTP/1.1 400", "400 Bad Request: too many Host headers"),
        (get("Host: a b\r\n"), "HTTP/1.1 400", "400 Bad Request: malformed Host header"),
        (get("Host: a\r\nExpect: something\r\n"), "HTTP/1.1 417", ""),
        (
            format!("POST {CMS} HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n0\r\n\r\n"),
            "HTTP/1.1 501",
            "Unsupported transfer encoding",
        ),
    ];
    for (request, status, body) in cases {
        let answer = raw(&s, &request).await;
        assert!(answer.starts_with(status), "{request:?}: {answer}");
        assert!(answer.ends_with(body), "{request:?}: {answer}");
    }
    // A well-framed request goes on to authentication (no certificate: anonymous, refused).
    let answer = raw(&s, &get("Host: localhost\r\n")).await;
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
}

#[tokio::test(flavor = "multi_thread")]
async fn custom_resources_asked_for_in_protobuf_are_answered_in_json_or_refused() {
    let s = TestServer::start().await;
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "widgets.probe.example.com"},
        "spec": {"group": "probe.example.com", "scope": "Namespaced", "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}});
    s.kubectl_create(&crd).unwrap();
    s.kubectl_ok(&["wait", "--for", "condition=established", "crd/widgets.probe.example.com", "--timeout=30s"]);
    let list = |accept: &'static str| http::Request::get("/apis/probe.example.com/v1/namespaces/default/widgets").header("accept", accept).body(Vec::new()).unwrap();
    let only = s.request(list("application/vnd.kubernetes.protobuf")).await.expect_status(406, "NotAcceptable");
    assert_eq!(only["message"], "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf");
    // client-go's own choice for a custom resource falls back to JSON.
    let fallback = s.request(list("application/vnd.kubernetes.protobuf, application/json")).await;
    assert_eq!(fallback.status, 200, "{}", fallback.text());
    assert_eq!(fallback.json()["kind"], "WidgetList");
}
