//! A hostile-input probe: several hundred malformed and adversarial requests against one node
//! (request bodies damaged byte by byte, objects with fields of the wrong type, YAML alias
//! bombs, patches of every kind that cannot apply, query parameters that do not parse, paths
//! that climb or repeat, headers clients never send, watches asked for wrongly). Each must be
//! answered within its time, never with a 5xx, with a `Status` body whenever it is refused, and
//! the node must serve as before afterwards. Where Kubernetes' answer is known (recorded from
//! kube-apiserver 1.36 in `refusals.rs` and the parity cases), the code is checked too; the one
//! 5xx allowed is kube-apiserver's own (504 for a watch from a revision not reached yet).

use crate::common;

use std::time::Duration;

use common::TestServer;
use serde_json::{json, Value};

const CMS: &str = "/api/v1/namespaces/default/configmaps";

/// One request of the probe and, where known, the code kube-apiserver answers it with.
struct Probe {
    what: String,
    method: &'static str,
    path: String,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
    code: Option<u16>,
}

impl Probe {
    fn new(what: impl Into<String>, method: &'static str, path: impl Into<String>) -> Probe {
        Probe { what: what.into(), method, path: path.into(), headers: Vec::new(), body: Vec::new(), code: None }
    }

    fn body(mut self, content_type: &str, body: impl Into<Vec<u8>>) -> Probe {
        self.headers.push(("content-type", content_type.to_string()));
        self.body = body.into();
        self
    }

    fn header(mut self, name: &'static str, value: impl Into<String>) -> Probe {
        self.headers.push((name, value.into()));
        self
    }

    fn expect(mut self, code: u16) -> Probe {
        self.code = Some(code);
        self
    }
}

/// A small deterministic generator (xorshift), so that a failure can be found again.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn valid_configmap(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"app": "probe"}, "annotations": {"a": "b"}}, "data": {"k": "v", "x": "y"}, "binaryData": {"b": "AAEC"}})
}

const JSON: &str = "application/json";
const YAML: &str = "application/yaml";

fn bodies(rng: &mut Rng) -> Vec<Probe> {
    let mut out = Vec::new();
    let base = serde_json::to_vec(&valid_configmap("body")).unwrap();
    for i in 0..40 {
        let cut = rng.below(base.len());
        out.push(Probe::new(format!("truncated body {i} at {cut}"), "POST", CMS).body(JSON, base[..cut].to_vec()));
    }
    for i in 0..90 {
        let mut damaged = base.clone();
        let at = rng.below(damaged.len());
        damaged[at] = (rng.next() & 0xff) as u8;
        out.push(Probe::new(format!("byte {at} of a body set at random ({i})"), "POST", CMS).body(JSON, damaged));
    }
    let typed: &[(&str, Value)] = &[
        ("metadata an array", json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": []})),
        ("metadata a string", json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": "x"})),
        ("name a number", json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": 1}})),
        ("labels an array", json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "l", "labels": ["a"]}})),
        ("a label value a number", json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "l", "labels": {"a": 1}}})),
        ("data an array", json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d"}, "data": ["a"]})),
        ("a data value a number", json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d"}, "data": {"k": 1}})),
        ("binaryData not base64", json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}, "binaryData": {"k": "not base64!"}})),
        ("immutable a string", json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "i"}, "immutable": "yes"})),
        ("kind an object", json!({"apiVersion": "v1", "kind": {}, "metadata": {"name": "k"}})),
        ("another kind", json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}})),
        ("another version", json!({"apiVersion": "v2", "kind": "ConfigMap", "metadata": {"name": "v"}})),
        ("creationTimestamp not a time", json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "t", "creationTimestamp": "yesterday"}})),
        ("a generateName only, too long", json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "g".repeat(300)}})),
        ("a name of 300 characters", json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "n".repeat(300)}})),
        ("a namespace that is not the path's", json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ns", "namespace": "kube-system"}})),
        ("deletionTimestamp set", json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "del", "deletionTimestamp": "2020-01-01T00:00:00Z"}})),
        ("managedFields of the wrong shape", json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "mf", "managedFields": [{"manager": 1}]}})),
        ("a number too large for Go", json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big", "generation": 1e300}})),
    ];
    for (what, value) in typed {
        out.push(Probe::new(*what, "POST", CMS).body(JSON, serde_json::to_vec(value).unwrap()));
    }
    let raw: Vec<(&str, &str, Vec<u8>, Option<u16>)> = vec![
        ("an empty body", JSON, Vec::new(), Some(400)),
        ("null", JSON, b"null".to_vec(), Some(400)),
        ("an array", JSON, b"[]".to_vec(), Some(400)),
        ("a string", JSON, b"\"configmap\"".to_vec(), Some(400)),
        ("two objects", JSON, [base.clone(), base.clone()].concat(), None),
        ("a byte-order mark first", JSON, [b"\xef\xbb\xbf".to_vec(), base.clone()].concat(), None),
        ("invalid UTF-8 in a string", JSON, br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"u"},"data":{"k":"\xff\xfe"}}"#.to_vec(), None),
        ("a lone surrogate", JSON, br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"sur"},"data":{"k":"\ud800"}}"#.to_vec(), None),
        ("a NUL in a name", JSON, br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a\u0000b"}}"#.to_vec(), Some(422)),
        ("nested 10,000 deep", JSON, format!("{{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{{\"name\":\"deep\"}},\"x\":{}{}}}", "[".repeat(10_000), "]".repeat(10_000)).into_bytes(), Some(400)),
        ("plain text", "text/plain", b"hello".to_vec(), Some(415)),
        ("XML", "application/xml", b"<a/>".to_vec(), Some(415)),
        ("Protobuf that is noise", "application/vnd.kubernetes.protobuf", b"k8s\x00\xff\xff\xff\xff\x01\x02".to_vec(), None),
        ("Protobuf without its magic", "application/vnd.kubernetes.protobuf", b"\x0a\x02v1".to_vec(), None),
        ("YAML that is not YAML", YAML, b"a: [b\n c: }".to_vec(), Some(400)),
        ("YAML with a tab indent", YAML, b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n\tname: t\n".to_vec(), Some(400)),
        ("YAML with a custom tag", YAML, b"apiVersion: v1\nkind: ConfigMap\nmetadata: !!python/object {name: x}\n".to_vec(), None),
        ("YAML of several documents", YAML, b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: y1}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: y2}\n".to_vec(), None),
    ];
    for (what, content_type, body, code) in raw {
        let probe = Probe::new(what, "POST", CMS).body(content_type, body);
        out.push(match code {
            Some(code) => probe.expect(code),
            None => probe,
        });
    }
    // Aliases that expand a few hundred bytes into far more than a request may hold.
    let mut bomb = String::from("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\na0: &a0 [\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"]\n");
    for i in 1..30 {
        let prev = format!("*a{}", i - 1);
        bomb.push_str(&format!("a{i}: &a{i} [{prev},{prev},{prev},{prev},{prev},{prev},{prev},{prev},{prev}]\n"));
    }
    out.push(Probe::new("a YAML alias bomb", "POST", CMS).body(YAML, bomb.into_bytes()));
    let grows = format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: grows}}\ndata:\n  a: &a \"{}\"\n  b: *a\n  c: *a\n  d: *a\n  e: *a\n  f: *a\n  g: *a\n  h: *a\n  i: *a\n", "x".repeat(400_000));
    out.push(Probe::new("YAML of 400 KB whose aliases decode to 3.6 MB", "POST", CMS).body(YAML, grows.into_bytes()).expect(413));
    out
}

fn patches() -> Vec<Probe> {
    let target = format!("{CMS}/target");
    let json_patch = "application/json-patch+json";
    let merge = "application/merge-patch+json";
    let strategic = "application/strategic-merge-patch+json";
    let apply = "application/apply-patch+yaml";
    let cases: Vec<(&str, &str, &str, Option<u16>)> = vec![
        ("a JSON patch that is an object", json_patch, r#"{"op":"add"}"#, Some(400)),
        ("an unknown JSON patch op", json_patch, r#"[{"op":"frobnicate","path":"/data/k","value":"v"}]"#, None),
        ("a JSON patch path without a slash", json_patch, r#"[{"op":"add","path":"data/k","value":"v"}]"#, None),
        ("a JSON patch removing what is not there", json_patch, r#"[{"op":"remove","path":"/data/nothing"}]"#, None),
        ("a failing JSON patch test", json_patch, r#"[{"op":"test","path":"/data/k","value":"other"}]"#, None),
        ("a JSON patch moving a parent into its child", json_patch, r#"[{"op":"move","from":"/data","path":"/data/k/x"}]"#, None),
        ("a JSON patch index far past the end", json_patch, r#"[{"op":"add","path":"/metadata/finalizers/99999999999999999999","value":"x"}]"#, None),
        ("a JSON patch replacing the whole object", json_patch, r#"[{"op":"replace","path":"","value":[]}]"#, None),
        ("a JSON patch changing the name", json_patch, r#"[{"op":"replace","path":"/metadata/name","value":"other"}]"#, None),
        ("a JSON patch changing the kind", json_patch, r#"[{"op":"replace","path":"/kind","value":"Secret"}]"#, None),
        ("a JSON patch with a broken pointer escape", json_patch, r#"[{"op":"add","path":"/data/a~2b","value":"v"}]"#, None),
        ("a JSON patch copying from nowhere", json_patch, r#"[{"op":"copy","from":"/nowhere","path":"/data/k"}]"#, None),
        ("a merge patch that is null", merge, "null", None),
        ("a merge patch that is an array", merge, "[]", None),
        ("a merge patch removing metadata", merge, r#"{"metadata":null}"#, None),
        ("a merge patch with a resourceVersion that is no number", merge, r#"{"metadata":{"resourceVersion":"abc"}}"#, None),
        ("a merge patch giving data the wrong type", merge, r#"{"data":[1,2]}"#, None),
        ("a strategic patch deleting the object", strategic, r#"{"$patch":"delete"}"#, None),
        ("a strategic patch with an unknown directive", strategic, r#"{"$patch":"explode"}"#, None),
        ("a strategic patch with a bad element order", strategic, r#"{"$setElementOrder/data":{"x":1}}"#, None),
        ("a strategic patch with retainKeys of the wrong type", strategic, r#"{"data":{"$retainKeys":"k"}}"#, None),
        ("an applied configuration of another kind", apply, "apiVersion: v1\nkind: Secret\nmetadata: {name: target}\n", None),
        ("an applied configuration naming another object", apply, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\n", None),
        ("an applied configuration that is not YAML", apply, "{{{{", None),
    ];
    let mut out = Vec::new();
    for (what, content_type, body, code) in cases {
        let path = if content_type == apply { format!("{target}?fieldManager=probe") } else { target.clone() };
        let probe = Probe::new(what, "PATCH", path).body(content_type, body.as_bytes().to_vec());
        out.push(match code {
            Some(code) => probe.expect(code),
            None => probe,
        });
    }
    out.push(Probe::new("an apply without a field manager", "PATCH", target.clone()).body(apply, b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: target}\n".to_vec()).expect(422));
    out.push(Probe::new("a patch of an unknown type", "PATCH", target.clone()).body("application/x-patch", b"{}".to_vec()).expect(415));
    out.push(Probe::new("a patch of nothing there", "PATCH", format!("{CMS}/absent")).body(merge, b"{}".to_vec()).expect(404));
    out
}

fn parameters() -> Vec<Probe> {
    let list: &[(&str, &str)] = &[
        ("limit", "-1"),
        ("limit", "abc"),
        ("limit", "99999999999999999999999"),
        ("resourceVersion", "abc"),
        ("resourceVersion", "-5"),
        ("resourceVersionMatch", "Whenever"),
        ("resourceVersionMatch", "Exact"),
        ("labelSelector", "a in ("),
        ("labelSelector", "a!!=b"),
        ("labelSelector", "=x"),
        ("labelSelector", "a,,b"),
        ("fieldSelector", "metadata.foo=1"),
        ("fieldSelector", "a==b==c"),
        ("fieldSelector", "metadata.name"),
        ("watch", "maybe"),
        ("allowWatchBookmarks", "2"),
        ("timeoutSeconds", "-5"),
        ("pretty", "perhaps"),
        ("continue", "%%%"),
        ("continue", "e30"),
        ("sendInitialEvents", "true"),
    ];
    let mut out: Vec<Probe> = list.iter().map(|(k, v)| Probe::new(format!("a list with {k}={v}"), "GET", format!("{CMS}?{k}={}", urlencode(v)))).collect();
    let long_selector = format!("a in ({})", (0..20_000).map(|i| format!("v{i}")).collect::<Vec<_>>().join(","));
    out.push(Probe::new("a label selector of 20,000 values", "GET", format!("{CMS}?labelSelector={}", urlencode(&long_selector))));
    let body = serde_json::to_vec(&valid_configmap("param")).unwrap();
    for (k, v) in [("dryRun", "Sometimes"), ("fieldValidation", "Loose"), ("fieldManager", "a\u{7}b"), ("fieldManager", &"m".repeat(200))] {
        out.push(Probe::new(format!("a create with {k}={v}"), "POST", format!("{CMS}?{k}={}", urlencode(v))).body(JSON, body.clone()));
    }
    for (k, v) in [("propagationPolicy", "Eventually"), ("gracePeriodSeconds", "abc"), ("gracePeriodSeconds", "-10"), ("dryRun", "No")] {
        out.push(Probe::new(format!("a delete with {k}={v}"), "DELETE", format!("{CMS}/absent?{k}={}", urlencode(v))));
    }
    out.push(Probe::new("a delete with options of the wrong type", "DELETE", format!("{CMS}/absent")).body(JSON, br#"{"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":"soon"}"#.to_vec()));
    out.push(Probe::new("a delete with preconditions for another uid", "DELETE", format!("{CMS}/target")).body(JSON, br#"{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"uid":"not-it"}}"#.to_vec()).expect(409));
    out
}

fn urlencode(s: &str) -> String {
    s.bytes().map(|b| if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) { (b as char).to_string() } else { format!("%{b:02X}") }).collect()
}

fn paths() -> Vec<Probe> {
    let mut out = Vec::new();
    for path in [
        "/api/v1/namespaces/default/configmaps/%2e%2e",
        "/api/v1/namespaces/default/configmaps/..",
        "/api/v1/namespaces/../configmaps",
        "/api/v1/namespaces/default/configmaps/a%2Fb",
        "//api//v1//namespaces",
        "/api/v1/namespaces/default/configmaps/a/b/c/d",
        "/api/v1/namespaces/default/configmaps/target/status",
        "/api/v1/namespaces/default/configmaps/target/exec",
        "/api/v1/namespaces/default/pods/x/unknown",
        "/apis/no.such.group/v1/things",
        "/apis/apps/v9/deployments",
        "/api/v2",
        "/api/v1/nosuchresource",
        "/api/v1/namespaces/%00/configmaps",
        "/api/v1/namespaces/default/configmaps/%ff%fe",
        "/api/v1/namespaces/default/configmaps/\u{e9}t\u{e9}",
        "/apis",
        "/apis/",
        "/openapi/v3/apis/no/such",
        "/.well-known/../../etc/passwd",
    ] {
        out.push(Probe::new(format!("GET {path}"), "GET", path.replace('\u{e9}', "%C3%A9")));
    }
    out.push(Probe::new("a name of 5,000 characters", "GET", format!("{CMS}/{}", "n".repeat(5000))).expect(404));
    out.push(Probe::new("PUT to a collection", "PUT", CMS).body(JSON, serde_json::to_vec(&valid_configmap("put")).unwrap()).expect(405));
    out.push(Probe::new("POST to a named object", "POST", format!("{CMS}/target")).body(JSON, serde_json::to_vec(&valid_configmap("target")).unwrap()).expect(405));
    out.push(Probe::new("a PUT naming another object", "PUT", format!("{CMS}/target")).body(JSON, serde_json::to_vec(&valid_configmap("other")).unwrap()).expect(400));
    out.push(Probe::new("an unknown method", "FROB", CMS.to_string()));
    out
}

fn headers() -> Vec<Probe> {
    let body = serde_json::to_vec(&valid_configmap("hdr")).unwrap();
    vec![
        Probe::new("Accept that is noise", "GET", CMS).header("accept", "\u{1}\u{2}garbage"),
        Probe::new("Accept of a Table version that does not exist", "GET", CMS).header("accept", "application/json;as=Table;g=meta.k8s.io;v=v9"),
        // Kubernetes reads no quality values: this is JSON.
        Probe::new("Accept of JSON with quality 0", "GET", CMS).header("accept", "application/json;q=0").expect(200),
        Probe::new("Accept of a media type with a thousand parameters", "GET", CMS).header("accept", format!("application/json{}", ";a=b".repeat(1000))),
        Probe::new("a JSON body declared UTF-16", "POST", CMS).body("application/json; charset=utf-16", body.clone()),
        Probe::new("Impersonate-User empty", "GET", CMS).header("impersonate-user", ""),
        Probe::new("Impersonate-Group without a user", "GET", CMS).header("impersonate-group", "system:masters").expect(400),
        Probe::new("Impersonate-Extra with a key that is no escape", "GET", CMS).header("impersonate-user", "u").header("impersonate-extra-%zz", "v"),
        Probe::new("Impersonate-Uid without a user", "GET", CMS).header("impersonate-uid", "1234"),
        Probe::new("Accept-Encoding that is noise", "GET", CMS).header("accept-encoding", "gzip;q=abc, *;q=-1"),
        Probe::new("an If-Match nobody asked for", "GET", CMS).header("if-match", "\"abc\""),
        Probe::new("a header value of 100 KiB", "GET", CMS).header("x-padding", "p".repeat(100 * 1024)),
        Probe::new("an audit id of 10 KiB", "GET", CMS).header("audit-id", "a".repeat(10 * 1024)),
        Probe::new("a user agent with control characters", "GET", CMS).header("user-agent", "agent\u{7f}\u{1b}[31m"),
        Probe::new("a Content-Type of parameters alone", "POST", CMS).body(";;;", body).expect(415),
    ]
}

fn watches() -> Vec<Probe> {
    [
        ("resourceVersion=abc", None),
        // kube-apiserver's own answer, after waiting 3 s for the revision.
        ("resourceVersion=99999999999", Some(504)),
        ("limit=5", None),
        ("sendInitialEvents=true", Some(422)),
        ("sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1", None),
        ("resourceVersionMatch=Exact&resourceVersion=1", None),
        ("timeoutSeconds=1&labelSelector=a%20in%20(", None),
        ("timeoutSeconds=1&fieldSelector=spec.nothing%3D1", None),
        ("timeoutSeconds=1&allowWatchBookmarks=true", None),
    ]
    .into_iter()
    .map(|(q, code)| {
        let probe = Probe::new(format!("a watch with {q}"), "GET", format!("{CMS}?watch=true&timeoutSeconds=1&{q}"));
        match code {
            Some(code) => probe.expect(code),
            None => probe,
        }
    })
    .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn hostile_input_is_refused_without_a_5xx_a_hang_or_a_crash() {
    let server = TestServer::start().await;
    let target = serde_json::to_vec(&valid_configmap("target")).unwrap();
    let created = server.request(http::Request::post(CMS).header("content-type", JSON).body(target).unwrap()).await;
    assert_eq!(created.status, 201, "{}", created.text());

    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let probes: Vec<Probe> = [bodies(&mut rng), patches(), parameters(), paths(), headers(), watches()].into_iter().flatten().collect();
    assert!(probes.len() > 250, "{} probes", probes.len());
    let mut problems = Vec::new();
    for probe in &probes {
        let mut req = http::Request::builder().method(probe.method).uri(&probe.path);
        for (k, v) in &probe.headers {
            req = req.header(*k, v.as_str());
        }
        let Ok(req) = req.body(probe.body.clone()) else {
            // A request the HTTP library will not even build (a client cannot send it either).
            continue;
        };
        let answer = match tokio::time::timeout(Duration::from_secs(15), server.client().send(req.map(kube::client::Body::from))).await {
            Err(_) => {
                problems.push(format!("{}: no answer within 15 s", probe.what));
                continue;
            }
            Ok(Err(e)) => {
                problems.push(format!("{}: the connection failed: {e}", probe.what));
                continue;
            }
            Ok(Ok(resp)) => resp,
        };
        let status = answer.status().as_u16();
        let body = match tokio::time::timeout(Duration::from_secs(15), http_body_util::BodyExt::collect(answer.into_body())).await {
            Ok(Ok(b)) => b.to_bytes(),
            _ => {
                problems.push(format!("{}: the body did not end within 15 s", probe.what));
                continue;
            }
        };
        if status >= 500 && probe.code != Some(status) {
            problems.push(format!("{}: {status} {}", probe.what, String::from_utf8_lossy(&body[..body.len().min(300)])));
        }
        if let Some(code) = probe.code {
            if status != code {
                problems.push(format!("{}: {status}, kube-apiserver answers {code}", probe.what));
            }
        }
        if status >= 400 && probe.method != "HEAD" {
            match serde_json::from_slice::<Value>(&body) {
                Ok(s) if s["kind"] == "Status" && s["code"] == status => {}
                _ => problems.push(format!("{}: {status} without a Status: {}", probe.what, String::from_utf8_lossy(&body[..body.len().min(300)]))),
            }
        }
    }
    assert!(problems.is_empty(), "{} of {} probes:\n{}", problems.len(), probes.len(), problems.join("\n"));

    // The node serves as before, and what it stored still reads back.
    assert_eq!(server.get("/readyz").await.status, 200);
    let list = server.get(CMS).await;
    assert_eq!(list.status, 200, "{}", list.text());
    assert!(list.json()["items"].as_array().unwrap().iter().any(|i| i["metadata"]["name"] == "target"));
    assert!(!server.log().contains("panicked"), "{}", server.log());
}
