//! The garbage collector against the real binary: a chain of three owners deleted in the
//! background, in the foreground (the owner goes last) and with its dependents orphaned
//! (`kubectl delete --cascade`), dangling owner references, an owner recreated under the same
//! name, an object with two owners, a cluster-scoped owner, an owner in another namespace, and
//! refused delete options.

use crate::common;

use std::time::{Duration, Instant};

use common::TestServer;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, PostParams, PropagationPolicy};
use kube::{Api, ResourceExt};
use serde_json::json;

/// A ConfigMap owned by `owners` (name and uid of ConfigMaps, or any kind given in full).
fn owned(name: &str, owners: &[serde_json::Value]) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name, "ownerReferences": owners}, "data": {"k": "v"}})).unwrap()
}

fn owner_ref(cm: &ConfigMap, block: bool) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "name": cm.name_any(), "uid": cm.uid().unwrap(), "blockOwnerDeletion": block})
}

async fn create(api: &Api<ConfigMap>, cm: ConfigMap) -> ConfigMap {
    api.create(&PostParams::default(), &cm).await.unwrap()
}

/// Waits up to 15 s for `name` to be gone.
async fn gone(api: &Api<ConfigMap>, name: &str) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while api.get_opt(name).await.unwrap().is_some() {
        assert!(Instant::now() < deadline, "{name} was not collected");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A chain a ← b ← c (each owned by the previous), with blocking references.
async fn chain(api: &Api<ConfigMap>, prefix: &str) -> [ConfigMap; 3] {
    let a = create(api, owned(&format!("{prefix}-a"), &[])).await;
    let b = create(api, owned(&format!("{prefix}-b"), &[owner_ref(&a, true)])).await;
    let c = create(api, owned(&format!("{prefix}-c"), &[owner_ref(&b, true)])).await;
    [a, b, c]
}

#[tokio::test(flavor = "multi_thread")]
async fn owners_take_their_dependents_with_them() {
    let s = TestServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");

    // Background (the default): the owner goes at once, then the chain after it.
    let [a, b, c] = chain(&api, "bg").await;
    s.kubectl_ok(&["delete", "configmap", &a.name_any()]);
    assert!(api.get_opt(&a.name_any()).await.unwrap().is_none(), "the owner goes first");
    gone(&api, &b.name_any()).await;
    gone(&api, &c.name_any()).await;

    // Foreground: the owner waits, marked, until its blocking dependents are gone.
    let [a, b, c] = chain(&api, "fg").await;
    s.kubectl_ok(&["delete", "configmap", &a.name_any(), "--cascade=foreground", "--wait=false"]);
    let marked = api.get_opt(&a.name_any()).await.unwrap();
    if let Some(marked) = marked {
        assert!(marked.metadata.deletion_timestamp.is_some());
        assert!(marked.finalizers().contains(&"foregroundDeletion".to_string()), "{:?}", marked.finalizers());
    }
    gone(&api, &a.name_any()).await;
    for dependent in [&b, &c] {
        assert!(api.get_opt(&dependent.name_any()).await.unwrap().is_none(), "{} outlived its foreground-deleted owner", dependent.name_any());
    }

    // Orphan: the dependents stay, without the reference.
    let [a, b, c] = chain(&api, "or").await;
    s.kubectl_ok(&["delete", "configmap", &a.name_any(), "--cascade=orphan"]);
    gone(&api, &a.name_any()).await;
    let b_now = api.get(&b.name_any()).await.unwrap();
    assert!(b_now.owner_references().is_empty(), "{:?}", b_now.owner_references());
    assert_eq!(api.get(&c.name_any()).await.unwrap().owner_references().len(), 1, "grandchildren keep their own owner");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(api.get_opt(&b.name_any()).await.unwrap().is_some() && api.get_opt(&c.name_any()).await.unwrap().is_some());

    // The older orphanDependents option means the same.
    let [a, b, _] = chain(&api, "od").await;
    let body = json!({"kind": "DeleteOptions", "apiVersion": "v1", "orphanDependents": true});
    let req = http::Request::delete(format!("/api/v1/namespaces/default/configmaps/{}", a.name_any())).header("content-type", "application/json").body(body.to_string().into_bytes()).unwrap();
    assert_eq!(s.request(req).await.status, 200);
    gone(&api, &a.name_any()).await;
    assert!(api.get(&b.name_any()).await.unwrap().owner_references().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn owners_are_matched_by_uid_kind_and_namespace() {
    let s = TestServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");

    // An owner that never existed: the dependent is collectable.
    let ghost = json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost", "uid": "00000000-0000-0000-0000-000000000001"});
    create(&api, owned("orphaned-at-birth", &[ghost])).await;
    gone(&api, "orphaned-at-birth").await;

    // An owner deleted and recreated under the same name is another owner.
    let first = create(&api, owned("phoenix", &[])).await;
    let stale = owner_ref(&first, false);
    api.delete("phoenix", &DeleteParams::default()).await.unwrap();
    gone(&api, "phoenix").await;
    create(&api, owned("phoenix", &[])).await;
    create(&api, owned("ash", &[stale])).await;
    gone(&api, "ash").await;

    // Two owners: losing one drops its reference, the other keeps the object.
    let one = create(&api, owned("owner-one", &[])).await;
    let two = create(&api, owned("owner-two", &[])).await;
    create(&api, owned("shared", &[owner_ref(&one, false), owner_ref(&two, false)])).await;
    api.delete("owner-one", &DeleteParams::default()).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let refs = api.get("shared").await.unwrap().owner_references().to_vec();
        if refs.len() == 1 {
            assert_eq!(refs[0].name, "owner-two");
            break;
        }
        assert!(Instant::now() < deadline, "the reference to the deleted owner stayed: {refs:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    api.delete("owner-two", &DeleteParams::default()).await.unwrap();
    gone(&api, "shared").await;

    // A cluster-scoped owner of a namespaced dependent.
    s.kubectl_ok(&["create", "clusterrole", "gc-owner", "--verb=get", "--resource=pods"]);
    let uid = s.kubectl_ok(&["get", "clusterrole", "gc-owner", "-o", "jsonpath={.metadata.uid}"]);
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "name": "gc-owner", "uid": uid});
    create(&api, owned("role-owned", &[role])).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(api.get_opt("role-owned").await.unwrap().is_some(), "a live cluster-scoped owner keeps its dependent");
    s.kubectl_ok(&["delete", "clusterrole", "gc-owner"]);
    gone(&api, "role-owned").await;

    // An owner in another namespace is no owner: the dependent is collected.
    s.kubectl_ok(&["create", "namespace", "elsewhere"]);
    let owner = create(&api, owned("same-name", &[])).await;
    let other: Api<ConfigMap> = Api::namespaced(s.client(), "elsewhere");
    create(&other, owned("cross", &[owner_ref(&owner, false)])).await;
    gone(&other, "cross").await;
    assert!(api.get_opt("same-name").await.unwrap().is_some());
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_options_are_validated() {
    let s = TestServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    create(&api, owned("target", &[])).await;
    let delete = |body: serde_json::Value| {
        http::Request::delete("/api/v1/namespaces/default/configmaps/target").header("content-type", "application/json").body(body.to_string().into_bytes()).unwrap()
    };
    let reply = s.request(delete(json!({"propagationPolicy": "Sideways"}))).await;
    let status = reply.expect_status(422, "Invalid");
    assert!(status["message"].as_str().unwrap().contains("propagationPolicy: Unsupported value: \"Sideways\""), "{status}");
    let reply = s.request(delete(json!({"propagationPolicy": "Orphan", "orphanDependents": true}))).await;
    let status = reply.expect_status(422, "Invalid");
    assert!(status["message"].as_str().unwrap().contains("orphanDependents and deletionPropagation cannot be both set"), "{status}");
    // kube-rs sends the policy in the body.
    let dp = DeleteParams { propagation_policy: Some(PropagationPolicy::Foreground), ..Default::default() };
    api.delete("target", &dp).await.unwrap();
    gone(&api, "target").await;
}

/// ReplicationControllers and Jobs orphan their dependents when a delete names no policy, as in
/// Kubernetes (a Job's delete also warns that its pods stay); the garbage collector then lets
/// the owner go and the dependent stays without its reference.
#[tokio::test]
async fn replication_controllers_and_jobs_orphan_by_default() {
    let s = TestServer::start().await;
    let post = |path: &str, body: serde_json::Value| http::Request::post(path).header("content-type", "application/json").body(body.to_string().into_bytes()).unwrap();
    let template = json!({"metadata": {"labels": {"app": "rc"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}});
    let rc = s.request(post("/api/v1/namespaces/default/replicationcontrollers", json!({"apiVersion": "v1", "kind": "ReplicationController",
        "metadata": {"name": "rc"}, "spec": {"replicas": 0, "template": template}}))).await.json();
    let uid = rc["metadata"]["uid"].as_str().unwrap().to_string();
    let dependent = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dependent",
        "ownerReferences": [{"apiVersion": "v1", "kind": "ReplicationController", "name": "rc", "uid": uid}]}});
    assert_eq!(s.request(post("/api/v1/namespaces/default/configmaps", dependent)).await.status, 201);

    let deleted = s.request(http::Request::delete("/api/v1/namespaces/default/replicationcontrollers/rc").body(vec![]).unwrap()).await;
    assert_eq!(deleted.status, 200, "{}", deleted.text());
    assert_eq!(deleted.json()["metadata"]["finalizers"], json!(["orphan"]), "{}", deleted.text());
    let deadline = Instant::now() + Duration::from_secs(15);
    while s.get("/api/v1/namespaces/default/replicationcontrollers/rc").await.status != 404 {
        assert!(Instant::now() < deadline, "the controller was not let go");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let kept = s.get("/api/v1/namespaces/default/configmaps/dependent").await.json();
    assert!(kept["metadata"].get("ownerReferences").is_none(), "{kept}");

    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "job"},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}}});
    let created = s.request(post("/apis/batch/v1/namespaces/default/jobs", job)).await;
    assert_eq!(created.status, 201, "{}", created.text());
    // Without a selector of its own, the Job selects its pods by its uid (Kubernetes' generated selector).
    let created = created.json();
    let uid = created["metadata"]["uid"].clone();
    assert_eq!(created["spec"]["selector"]["matchLabels"], json!({"batch.kubernetes.io/controller-uid": uid}));
    assert_eq!(created["spec"]["template"]["metadata"]["labels"]["job-name"], "job");
    let deleted = s.request(http::Request::delete("/apis/batch/v1/namespaces/default/jobs/job").body(vec![]).unwrap()).await;
    let warning = deleted.headers.get("warning").map(|w| w.to_str().unwrap().to_string()).unwrap_or_default();
    assert!(warning.contains("child pods are preserved by default when jobs are deleted"), "{warning:?}");
}
