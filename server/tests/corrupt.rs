//! Objects whose stored bytes cannot be decoded (made so by the `create-corrupt` failpoint): a get
//! names the object in a 500, a list names every such object (`StorageReadError`), a watch ends
//! with an ERROR event, the object survives a restart as it is, and only the unsafe deletion
//! (`ignoreStoreReadErrorWithClusterBreakingPotential`, behind `AllowUnsafeMalformedObjectDeletion`,
//! for a user allowed `unsafe-delete-ignore-read-errors`) removes it.

use crate::common;

use std::time::Duration;

use common::{failpoints, send, TestServer};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{PostParams, WatchEvent, WatchParams};
use kube::Api;
use serde_json::{json, Value};

const KEY: &str = "/registry/configmaps/default/bad";

async fn server(gate: bool) -> TestServer {
    let mut args = vec![];
    if gate {
        args.push("--feature-gates=AllowUnsafeMalformedObjectDeletion=true");
    }
    let mut server = TestServer::new(&args).with_binary(failpoints::apiserver());
    server.launch();
    server.wait_ready().await.unwrap_or_else(|log| panic!("server did not start:\n{log}"));
    server
}

/// Creates ConfigMap `good`, then `bad` with its stored bytes cut in half.
async fn corrupt_one(server: &TestServer) {
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.create(&PostParams::default(), &common::configmap("good", &[])).await.unwrap();
    let set = http::Request::put("/debug/failpoints/create-corrupt").body(b"return(bad)".to_vec()).unwrap();
    assert_eq!(server.request(set).await.status, 200);
    api.create(&PostParams::default(), &common::configmap("bad", &[])).await.unwrap();
    let clear = http::Request::delete("/debug/failpoints/create-corrupt").body(vec![]).unwrap();
    assert_eq!(server.request(clear).await.status, 200);
}

fn delete(path: &str, options: Value) -> http::Request<Vec<u8>> {
    http::Request::delete(path).header("content-type", "application/json").body(serde_json::to_vec(&options).unwrap()).unwrap()
}

fn unsafe_options() -> Value {
    json!({"kind": "DeleteOptions", "apiVersion": "v1", "ignoreStoreReadErrorWithClusterBreakingPotential": true})
}

/// The next watch event, within 10 s.
async fn next_event(events: &mut (impl futures::Stream<Item = kube::Result<WatchEvent<ConfigMap>>> + Unpin)) -> WatchEvent<ConfigMap> {
    tokio::time::timeout(Duration::from_secs(10), events.next()).await.expect("a watch event").expect("stream open").unwrap()
}

#[tokio::test]
async fn corrupt_objects_are_reported_and_deleted_only_unsafely() {
    let mut server = server(true).await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let rv = api.list(&Default::default()).await.unwrap().metadata.resource_version.unwrap();
    let mut before = api.watch(&WatchParams::default(), &rv).await.unwrap().boxed();
    corrupt_one(&server).await;

    // The watch sees `good`, then ends with an error at the object it cannot decode.
    assert!(matches!(next_event(&mut before).await, WatchEvent::Added(cm) if cm.metadata.name.as_deref() == Some("good")));
    match next_event(&mut before).await {
        WatchEvent::Error(e) => {
            assert_eq!(e.code, 500);
            assert!(e.message.contains("corrupt object") && e.message.contains(KEY), "{}", e.message);
        }
        other => panic!("expected an ERROR event, got {other:?}"),
    }

    // A get names the object; a list names every undecodable object in it.
    let get = server.get("/api/v1/namespaces/default/configmaps/bad").await.expect_status(500, "InternalError");
    let message = get["message"].as_str().unwrap();
    assert!(message.starts_with("Internal error occurred: StorageError: corrupt object") && message.contains(KEY), "{message}");
    let list = server.get("/api/v1/namespaces/default/configmaps").await.expect_status(500, "StorageReadError");
    assert_eq!(list["message"], "failed to read one or more configmaps from the storage");
    assert_eq!(list["details"]["name"], "list");
    assert_eq!(list["details"]["kind"], "configmaps");
    let causes = list["details"]["causes"].as_array().unwrap();
    assert_eq!(causes.len(), 1, "{list}");
    assert_eq!(causes[0]["field"], KEY);
    assert_eq!(causes[0]["reason"], "UnexpectedServerResponse");
    let out = server.kubectl(&["get", "configmaps", "-n", "default"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("failed to read one or more configmaps from the storage"));
    // Other namespaces, and a get of a readable object, are not concerned.
    assert_eq!(server.get("/api/v1/namespaces/kube-system/configmaps").await.status, 200);
    assert_eq!(server.get("/api/v1/namespaces/default/configmaps/good").await.status, 200);

    // What is stored stays as it is across a restart.
    server.restart().await;
    server.get("/api/v1/namespaces/default/configmaps/bad").await.expect_status(500, "InternalError");

    // A normal delete cannot read the object.
    let out = server.kubectl(&["delete", "configmap", "bad", "-n", "default"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("corrupt object"), "{}", String::from_utf8_lossy(&out.stderr));

    // The option refuses every other delete option, deletecollection, and readable objects.
    let mut with_others = unsafe_options();
    with_others["dryRun"] = json!(["All"]);
    with_others["gracePeriodSeconds"] = json!(0);
    let refused = server.request(delete("/api/v1/namespaces/default/configmaps/bad", with_others)).await.expect_status(422, "Invalid");
    let fields: Vec<&str> = refused["details"]["causes"].as_array().unwrap().iter().map(|c| c["message"].as_str().unwrap()).collect();
    assert_eq!(
        fields,
        ["Invalid value: true: cannot be set together with .dryRun", "Invalid value: true: cannot be set together with .gracePeriodSeconds"]
    );
    let refused = server.request(delete("/api/v1/namespaces/default/configmaps", unsafe_options())).await.expect_status(422, "Invalid");
    assert!(refused["message"].as_str().unwrap().contains("is not allowed with DELETECOLLECTION"), "{refused}");
    let refused = server.request(delete("/api/v1/namespaces/default/configmaps/good", unsafe_options())).await.expect_status(422, "Invalid");
    assert_eq!(
        refused["message"],
        "configmaps \"good\" is invalid: ignoreStoreReadErrorWithClusterBreakingPotential: Invalid value: true: is exclusively used to delete corrupt object(s), try again by removing this option"
    );

    // Deleting is not enough: the user needs the unsafe verb.
    server.kubectl_ok(&["create", "role", "deleter", "-n", "default", "--verb=get,list,delete", "--resource=configmaps"]);
    server.kubectl_ok(&["create", "rolebinding", "deleter", "-n", "default", "--role=deleter", "--user=alice"]);
    let alice = server.client_for(&server.kubeconfig_for("alice", &[])).await;
    let refused = send(&alice, delete("/api/v1/namespaces/default/configmaps/bad", unsafe_options())).await.expect_status(403, "Forbidden");
    assert!(refused["message"].as_str().unwrap().contains("cannot unsafe-delete-ignore-read-errors resource \"configmaps\""), "{refused}");
    server.kubectl_ok(&["create", "role", "unsafe", "-n", "default", "--verb=unsafe-delete-ignore-read-errors", "--resource=configmaps"]);
    server.kubectl_ok(&["create", "rolebinding", "unsafe", "-n", "default", "--role=unsafe", "--user=alice"]);

    // A watcher from the current revision is told the deleted object was corrupt.
    let rv = server.get("/api/v1/namespaces/default/secrets").await.json()["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let mut during = api.watch(&WatchParams::default(), &rv).await.unwrap().boxed();
    let done = send(&alice, delete("/api/v1/namespaces/default/configmaps/bad", unsafe_options())).await;
    assert_eq!(done.status, 200, "{}", done.text());
    let done = done.json();
    assert_eq!((done["kind"].as_str(), done["status"].as_str()), (Some("Status"), Some("Success")));
    assert_eq!(done["details"]["name"], "bad");
    match next_event(&mut during).await {
        WatchEvent::Error(e) => {
            assert_eq!((e.code, e.reason.as_str()), (500, "StorageReadError"));
            assert!(e.message.starts_with("saw a DELETED event, but object data is corrupt"), "{}", e.message);
        }
        other => panic!("expected an ERROR event, got {other:?}"),
    }

    // Gone: the namespace reads again.
    server.get("/api/v1/namespaces/default/configmaps/bad").await.expect_status(404, "NotFound");
    let names: Vec<String> = api.list(&Default::default()).await.unwrap().items.into_iter().filter_map(|c| c.metadata.name).collect();
    assert!(names.contains(&"good".to_string()) && !names.contains(&"bad".to_string()), "{names:?}");
    let _ = during.try_next().await;
}

#[tokio::test]
async fn without_the_gate_the_option_is_ignored() {
    let server = server(false).await;
    corrupt_one(&server).await;
    // The list fails on the first undecodable object, as a plain internal error.
    let list = server.get("/api/v1/namespaces/default/configmaps").await.expect_status(500, "InternalError");
    assert!(list["message"].as_str().unwrap().contains(KEY), "{list}");
    // The option is dropped: the delete is an ordinary one, which cannot read the object.
    let refused = server.request(delete("/api/v1/namespaces/default/configmaps/bad", unsafe_options())).await.expect_status(500, "InternalError");
    assert!(refused["message"].as_str().unwrap().contains("corrupt object"), "{refused}");
    server.get("/api/v1/namespaces/default/configmaps/bad").await.expect_status(500, "InternalError");
}
