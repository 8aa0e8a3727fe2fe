//! CBOR against the real binary, behind the `CBORServingAndStorage` feature gate: objects, lists
//! and watch events answered in CBOR (the self-described tag first), objects created from CBOR
//! bodies, server-side apply in CBOR; without the gate, CBOR is 406 and 415.

use crate::common;

use std::time::Duration;

use common::TestServer;
use http_body_util::BodyExt;
use serde_json::{json, Value};

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const TAG: [u8; 3] = [0xd9, 0xd9, 0xf7];

fn cbor(v: &Value) -> Vec<u8> {
    let mut out = TAG.to_vec();
    ciborium::into_writer(v, &mut out).unwrap();
    out
}

fn decode(bytes: &[u8]) -> Value {
    assert_eq!(&bytes[..3], &TAG, "no self-described tag");
    ciborium::from_reader(&bytes[3..]).unwrap()
}

fn get(path: &str) -> http::Request<Vec<u8>> {
    http::Request::get(path).header("accept", "application/cbor").body(vec![]).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn cbor_requests_and_responses_behind_the_gate() {
    let s = TestServer::start_with(&["--feature-gates", "CBORServingAndStorage=true"]).await;
    let body = cbor(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c1"}, "data": {"k": "v"}}));
    let create = http::Request::post(CMS).header("content-type", "application/cbor").header("accept", "application/cbor").body(body).unwrap();
    let reply = s.request(create).await;
    assert_eq!(reply.status, 201, "{}", reply.text());
    assert_eq!(reply.headers["content-type"], "application/cbor");
    assert_eq!(decode(&reply.body)["data"]["k"], "v");

    let one = s.request(get(&format!("{CMS}/c1"))).await;
    assert_eq!(decode(&one.body)["metadata"]["name"], "c1");
    let list = decode(&s.request(get(CMS)).await.body);
    assert_eq!(list["kind"], "ConfigMapList");
    // JSON clients are unaffected.
    assert_eq!(s.get(&format!("{CMS}/c1")).await.json()["data"]["k"], "v");

    // Server-side apply in CBOR.
    let apply = cbor(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c1"}, "data": {"k": "w"}}));
    let patch = http::Request::patch(format!("{CMS}/c1?fieldManager=cbor-client&force=true")).header("content-type", "application/apply-patch+cbor").body(apply).unwrap();
    let reply = s.request(patch).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.json()["data"]["k"], "w");
    let merge = http::Request::patch(format!("{CMS}/c1")).header("content-type", "application/merge-patch+cbor").body(vec![0xa0]).unwrap();
    assert_eq!(s.request(merge).await.status, 415, "only apply patches come in CBOR");

    // A watch streams a CBOR sequence of events.
    let client = s.client();
    let watch = http::Request::get(format!("{CMS}?watch=true&resourceVersion=0")).header("accept", "application/cbor").body(kube::client::Body::empty()).unwrap();
    let resp = client.send(watch).await.unwrap();
    assert_eq!(resp.headers()["content-type"], "application/cbor-seq");
    let mut body = resp.into_body();
    let frame = tokio::time::timeout(Duration::from_secs(10), body.frame()).await.expect("no event").unwrap().unwrap();
    let event = decode(frame.data_ref().unwrap());
    assert_eq!((event["type"].as_str(), event["object"]["metadata"]["name"].as_str()), (Some("ADDED"), Some("c1")));
}

#[tokio::test(flavor = "multi_thread")]
async fn without_the_gate_cbor_is_refused() {
    let s = TestServer::start().await;
    let reply = s.request(get(CMS)).await;
    reply.expect_status(406, "NotAcceptable");
    let body = cbor(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c1"}}));
    let create = http::Request::post(CMS).header("content-type", "application/cbor").body(body).unwrap();
    s.request(create).await.expect_status(415, "UnsupportedMediaType");
}
