//! Protobuf replies and watch streams (`application/vnd.kubernetes.protobuf`), read with kubectl
//! (client-go's typed clients ask for Protobuf first) and with the `k8s-pb` messages, an
//! independent implementation of Kubernetes' Protobuf encoding.

use crate::common;

use std::time::Duration;

use common::{configmap, rv, TestServer};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_pb::api::core::v1 as core;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::Unknown;
use kube::api::{Api, PostParams};
use prost::Message;

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
const CMS: &str = "/api/v1/namespaces/default/configmaps";

/// The kind named by a Protobuf body's envelope, and the object's message bytes.
fn unwrap_envelope(body: &[u8]) -> (String, String, Vec<u8>) {
    let rest = body.strip_prefix(b"k8s\0").expect("the Kubernetes Protobuf prefix");
    let unknown = Unknown::decode(rest).expect("an Unknown envelope");
    let type_meta = unknown.type_meta.expect("typeMeta");
    (type_meta.api_version.unwrap_or_default(), type_meta.kind.unwrap_or_default(), unknown.raw.unwrap_or_default())
}

async fn get_with_accept(s: &TestServer, path: &str, accept: &str) -> common::Reply {
    s.request(http::Request::get(path).header("accept", accept).body(vec![]).unwrap()).await
}

#[tokio::test]
async fn objects_and_lists_in_protobuf() {
    let s = TestServer::start_with(common::WITHOUT_ROOT_CA).await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let mut cm = configmap("settings", &[("app", "web")]);
    cm.data = Some([("mode".to_string(), "fast".to_string())].into());
    cm.binary_data = Some([("blob".to_string(), k8s_openapi::ByteString(vec![0, 1, 2]))].into());
    let created = api.create(&PostParams::default(), &cm).await.unwrap();

    let reply = get_with_accept(&s, &format!("{CMS}/settings"), &format!("{PROTOBUF}, application/json")).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.headers["content-type"], PROTOBUF);
    let (api_version, kind, raw) = unwrap_envelope(&reply.body);
    assert_eq!((api_version.as_str(), kind.as_str()), ("v1", "ConfigMap"));
    let got = core::ConfigMap::decode(raw.as_slice()).unwrap();
    let metadata = got.metadata.unwrap();
    assert_eq!(metadata.name.as_deref(), Some("settings"));
    assert_eq!(metadata.uid, created.metadata.uid);
    assert_eq!(metadata.resource_version, created.metadata.resource_version);
    assert_eq!(metadata.labels["app"], "web");
    let created_at = created.metadata.creation_timestamp.unwrap().0.as_second();
    assert_eq!(metadata.creation_timestamp.unwrap().seconds, Some(created_at));
    assert_eq!(got.data["mode"], "fast");
    assert_eq!(got.binary_data["blob"], vec![0, 1, 2]);

    api.create(&PostParams::default(), &configmap("second", &[])).await.unwrap();
    let reply = get_with_accept(&s, &format!("{CMS}?limit=1"), PROTOBUF).await;
    let (_, kind, raw) = unwrap_envelope(&reply.body);
    assert_eq!(kind, "ConfigMapList");
    let list = core::ConfigMapList::decode(raw.as_slice()).unwrap();
    let names: Vec<_> = list.items.iter().map(|i| i.metadata.as_ref().unwrap().name.clone().unwrap()).collect();
    assert_eq!(names, ["second"]);
    let list_meta = list.metadata.unwrap();
    assert!(list_meta.r#continue.is_some_and(|c| !c.is_empty()));
    assert_eq!(list_meta.remaining_item_count, Some(1));

    // The metadata client's form.
    let accept = format!("{PROTOBUF};as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json");
    let reply = get_with_accept(&s, CMS, &accept).await;
    let (api_version, kind, raw) = unwrap_envelope(&reply.body);
    assert_eq!((api_version.as_str(), kind.as_str()), ("meta.k8s.io/v1", "PartialObjectMetadataList"));
    let list = meta::PartialObjectMetadataList::decode(raw.as_slice()).unwrap();
    assert_eq!(list.items.len(), 2);
    assert_eq!(list.items[1].metadata.as_ref().unwrap().labels["app"], "web");

    // A Table has no Protobuf form: the fallback is taken, and without one it is 406.
    let reply = get_with_accept(&s, CMS, &format!("{PROTOBUF};as=Table;g=meta.k8s.io;v=v1, application/json")).await;
    assert_eq!(reply.json()["kind"], "ConfigMapList");
    get_with_accept(&s, CMS, &format!("{PROTOBUF};as=Table;g=meta.k8s.io;v=v1")).await.expect_status(406, "NotAcceptable");

    // A list past 16 MiB is streamed as it is made, in Protobuf as in JSON.
    for i in 0..20 {
        let mut cm = configmap(&format!("large-{i}"), &[]);
        cm.data = Some([("payload".to_string(), "z".repeat(1_000_000))].into());
        api.create(&PostParams::default(), &cm).await.unwrap();
    }
    let reply = get_with_accept(&s, CMS, PROTOBUF).await;
    assert!(reply.headers.get("content-length").is_none(), "the list was not streamed");
    let (_, kind, raw) = unwrap_envelope(&reply.body);
    assert_eq!(kind, "ConfigMapList");
    let list = core::ConfigMapList::decode(raw.as_slice()).unwrap();
    assert_eq!(list.items.len(), 22);
    assert!(list.metadata.unwrap().resource_version.is_some_and(|rv| !rv.is_empty()));
    assert_eq!(list.items[10].data["payload"].len(), 1_000_000);
}

/// Splits a Protobuf watch body into its events: (type, kind, object bytes).
fn watch_events(body: &[u8]) -> Vec<(String, String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let len = u32::from_be_bytes(rest[..4].try_into().unwrap()) as usize;
        let event = meta::WatchEvent::decode(&rest[4..4 + len]).expect("a WatchEvent frame");
        let raw = event.object.and_then(|o| o.raw).expect("the event's object");
        let (_, kind, object) = unwrap_envelope(&raw);
        out.push((event.r#type.unwrap_or_default(), kind, object));
        rest = &rest[4 + len..];
    }
    out
}

#[tokio::test]
async fn watch_streams_in_protobuf() {
    let s = TestServer::start_with(&["--history-retention", "2s"]).await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let first = api.create(&PostParams::default(), &configmap("a", &[])).await.unwrap();
    api.create(&PostParams::default(), &configmap("b", &[])).await.unwrap();
    api.delete("a", &Default::default()).await.unwrap();

    let since = rv(&first) - 1;
    let path = format!("{CMS}?watch=true&resourceVersion={since}&timeoutSeconds=1");
    let reply = get_with_accept(&s, &path, &format!("{PROTOBUF};stream=watch")).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.headers["content-type"], "application/vnd.kubernetes.protobuf;stream=watch");
    let events = watch_events(&reply.body);
    let seen: Vec<(String, String)> = events
        .iter()
        .map(|(t, kind, raw)| {
            assert_eq!(kind, "ConfigMap");
            let cm = core::ConfigMap::decode(raw.as_slice()).unwrap();
            (t.clone(), cm.metadata.unwrap().name.unwrap())
        })
        .collect();
    let want = [("ADDED", "a"), ("ADDED", "b"), ("DELETED", "a")].map(|(t, n)| (t.to_string(), n.to_string()));
    assert_eq!(seen, want);
    // Each event's object is encoded once and shared by the watchers of its form: a second
    // watcher gets the same bytes, and one of another form (metadata only) its own.
    let again = get_with_accept(&s, &path, &format!("{PROTOBUF};stream=watch")).await;
    assert_eq!(again.body, reply.body);
    let metadata = get_with_accept(&s, &path, &format!("{PROTOBUF};stream=watch;as=PartialObjectMetadata;g=meta.k8s.io;v=v1")).await;
    let kinds: Vec<(String, String)> = watch_events(&metadata.body).into_iter().map(|(t, kind, _)| (t, kind)).collect();
    assert_eq!(kinds, want.map(|(t, _)| (t, "PartialObjectMetadata".to_string())));

    // kubectl's own fallback list (`Accept: protobuf, json`) streams Protobuf too, and an error
    // inside the stream is a Protobuf `Status`.
    tokio::time::sleep(Duration::from_secs(4)).await;
    api.create(&PostParams::default(), &configmap("c", &[])).await.unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let path = format!("{CMS}?watch=true&resourceVersion={since}&timeoutSeconds=1");
    let reply = get_with_accept(&s, &path, &format!("{PROTOBUF}, application/json")).await;
    let events = watch_events(&reply.body);
    let (event_type, kind, raw) = &events[0];
    assert_eq!((event_type.as_str(), kind.as_str()), ("ERROR", "Status"));
    let status = meta::Status::decode(raw.as_slice()).unwrap();
    assert_eq!((status.code, status.reason.as_deref()), (Some(410), Some("Expired")));
}

#[tokio::test]
async fn kubectl_round_trips_protobuf() {
    let s = TestServer::start().await;
    // `kubectl create` sends Protobuf and reads the Protobuf reply.
    let out = s.kubectl_ok(&["create", "deployment", "web", "--image=nginx", "--replicas=0", "-v=8"]);
    assert!(out.contains("deployment.apps/web created"), "{out}");
    let out = s.kubectl(&["create", "namespace", "pb", "-v=8"]);
    let log = String::from_utf8_lossy(&out.stderr);
    // The reply's headers follow its status line in kubectl's log.
    let reply = log.split("Response Status: 201 Created").nth(1).unwrap_or_else(|| panic!("{log}"));
    assert!(reply.contains("Content-Type: application/vnd.kubernetes.protobuf"), "{log}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("namespace/pb created"));
    let replicas = s.kubectl_ok(&["get", "deployment", "web", "-o", "jsonpath={.spec.replicas}"]);
    assert_eq!(replicas, "0");
    // `kubectl scale` reads and writes the Scale subresource through the typed client.
    s.kubectl_ok(&["scale", "deployment", "web", "--replicas=2"]);
    let out = s.kubectl_ok(&["get", "deployment", "web", "-o", "jsonpath={.spec.replicas}"]);
    assert_eq!(out, "2");
}

/// A Protobuf body, as client-go sends one: the magic, then `Unknown` around the object.
fn protobuf_body(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
    let type_meta = k8s_pb::apimachinery::pkg::runtime::TypeMeta { api_version: Some(api_version.into()), kind: Some(kind.into()) };
    let unknown = Unknown { type_meta: Some(type_meta), raw: Some(raw), content_encoding: Some(String::new()), content_type: Some(String::new()) };
    [b"k8s\0".as_slice(), &unknown.encode_to_vec()].concat()
}

/// kube-controller-manager's namespace controller finalizes a namespace with a Protobuf body
/// whose empty finalizer list is left out: the namespace is then gone, not held again. A plain
/// update without finalizers keeps them.
#[tokio::test]
async fn a_namespace_finalized_in_protobuf_goes_away() {
    let s = TestServer::start().await;
    s.kubectl_ok(&["create", "namespace", "leaving"]);
    let namespace = |finalizers: Vec<String>| core::Namespace {
        metadata: Some(meta::ObjectMeta { name: Some("leaving".into()), ..Default::default() }),
        spec: Some(core::NamespaceSpec { finalizers }),
        ..Default::default()
    };
    let put = |path: &str, ns: core::Namespace| {
        http::Request::put(path)
            .header("content-type", "application/vnd.kubernetes.protobuf")
            .header("accept", "application/json")
            .body(protobuf_body("v1", "Namespace", ns.encode_to_vec()))
            .unwrap()
    };
    let updated = s.request(put("/api/v1/namespaces/leaving", namespace(Vec::new()))).await;
    assert_eq!(updated.status, 200, "{}", updated.text());
    assert_eq!(updated.json()["spec"]["finalizers"], serde_json::json!(["kubernetes"]));
    s.kubectl_ok(&["delete", "namespace", "leaving", "--wait=false"]);
    let finalized = s.request(put("/api/v1/namespaces/leaving/finalize", namespace(Vec::new()))).await;
    assert_eq!(finalized.status, 200, "{}", finalized.text());
    assert!(finalized.json()["spec"].get("finalizers").is_none_or(|f| f.as_array().is_some_and(Vec::is_empty)), "{}", finalized.text());
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while s.kubectl(&["get", "namespace", "leaving"]).status.success() {
        assert!(std::time::Instant::now() < deadline, "the finalized namespace stays");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
