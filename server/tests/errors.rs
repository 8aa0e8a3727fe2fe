//! Error answers and public endpoints of the real binary: 413, 406, 415, 404, 405 as Status
//! bodies with the Kubernetes reasons, anonymous access (403 for the API, 200 for health),
//! /version and discovery.

use crate::common;

use common::{configmap, send, TestServer};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::PostParams;
use kube::Api;
use serde_json::json;

const CMS: &str = "/api/v1/namespaces/default/configmaps";

fn with_body(method: &str, path: &str, content_type: &str, body: Vec<u8>) -> http::Request<Vec<u8>> {
    http::Request::builder().method(method).uri(path).header("content-type", content_type).body(body).unwrap()
}

fn configmap_bytes(name: &str, value_len: usize) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": {"key": "x".repeat(value_len)},
    }))
    .unwrap()
}

#[tokio::test]
async fn bodies_over_3_mib_get_413_and_write_nothing() {
    let s = TestServer::start().await;
    let big = configmap_bytes("big", 4 << 20);
    let status = s.request(with_body("POST", CMS, "application/json", big)).await.expect_status(413, "RequestEntityTooLarge");
    assert_eq!(status["message"], "Request entity too large: limit is 3145728");
    s.get(&format!("{CMS}/big")).await.expect_status(404, "NotFound");

    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let small = api.create(&PostParams::default(), &configmap("small", &[])).await.unwrap();
    let mut big_update: serde_json::Value = serde_json::from_slice(&configmap_bytes("small", 4 << 20)).unwrap();
    big_update["metadata"]["resourceVersion"] = json!(small.metadata.resource_version);
    let body = serde_json::to_vec(&big_update).unwrap();
    s.request(with_body("PUT", &format!("{CMS}/small"), "application/json", body))
        .await
        .expect_status(413, "RequestEntityTooLarge");
    assert_eq!(api.get("small").await.unwrap(), small);
}

#[tokio::test]
async fn unsupported_media_types_get_406_and_415() {
    let s = TestServer::start().await;
    let accept_html = http::Request::get("/api/v1/namespaces").header("accept", "text/html").body(vec![]).unwrap();
    s.request(accept_html).await.expect_status(406, "NotAcceptable");
    let accept_html = http::Request::get(format!("{CMS}/x")).header("accept", "text/html").body(vec![]).unwrap();
    s.request(accept_html).await.expect_status(406, "NotAcceptable");

    let body = configmap_bytes("plain", 1);
    s.request(with_body("POST", CMS, "text/plain", body.clone())).await.expect_status(415, "UnsupportedMediaType");
    s.get(&format!("{CMS}/plain")).await.expect_status(404, "NotFound");
    // PATCH needs one of the patch media types.
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    api.create(&PostParams::default(), &configmap("target", &[])).await.unwrap();
    let patch = serde_json::to_vec(&json!({"data": {"key": "changed"}})).unwrap();
    s.request(with_body("PATCH", &format!("{CMS}/target"), "application/json", patch))
        .await
        .expect_status(415, "UnsupportedMediaType");
    assert_eq!(api.get("target").await.unwrap().data.unwrap()["key"], "value");
    // The same body with a supported type works, and the answer is JSON.
    let created = s.request(with_body("POST", CMS, "application/json", body)).await;
    assert_eq!(created.status, 201, "{}", created.text());
    assert!(created.headers["content-type"].to_str().unwrap().starts_with("application/json"));
}

#[tokio::test]
async fn not_found_and_method_not_allowed() {
    let s = TestServer::start().await;
    for path in
        ["/api/v1/namespaces/default/widgets", "/apis/nothing.example.com/v1/things", "/api/v9/pods", "/no/such/path"]
    {
        s.get(path).await.expect_status(404, "NotFound");
    }
    let missing = s.get(&format!("{CMS}/nope")).await.expect_status(404, "NotFound");
    assert_eq!(
        (missing["details"]["name"].as_str(), missing["details"]["kind"].as_str()),
        (Some("nope"), Some("configmaps"))
    );
    s.request(http::Request::delete(format!("{CMS}/nope")).body(vec![]).unwrap()).await.expect_status(404, "NotFound");

    // POST on a named object, PUT on a collection.
    let body = configmap_bytes("x", 1);
    s.request(with_body("POST", &format!("{CMS}/x"), "application/json", body.clone()))
        .await
        .expect_status(405, "MethodNotAllowed");
    s.request(with_body("PUT", CMS, "application/json", body)).await.expect_status(405, "MethodNotAllowed");
    s.get(&format!("{CMS}/x")).await.expect_status(404, "NotFound");
}

#[tokio::test]
async fn writes_that_contradict_the_url() {
    let s = TestServer::start().await;
    let put = |name: &str, body: serde_json::Value| {
        with_body("PUT", &format!("{CMS}/{name}"), "application/json", body.to_string().into_bytes())
    };
    // PUT of a missing ConfigMap does not create it.
    s.request(put("ghost", json!({"metadata": {"name": "ghost"}}))).await.expect_status(404, "NotFound");
    s.get(&format!("{CMS}/ghost")).await.expect_status(404, "NotFound");

    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let original = api.create(&PostParams::default(), &configmap("real", &[])).await.unwrap();
    s.request(put("real", json!({"metadata": {"name": "other"}}))).await.expect_status(400, "BadRequest");
    let elsewhere = json!({"metadata": {"name": "real", "namespace": "kube-system"}});
    s.request(put("real", elsewhere.clone())).await.expect_status(400, "BadRequest");
    s.request(with_body("POST", CMS, "application/json", elsewhere.to_string().into_bytes()))
        .await
        .expect_status(400, "BadRequest");
    assert_eq!(api.get("real").await.unwrap(), original);
    // Without a resourceVersion a ConfigMap update is unconditional.
    let updated = s.request(put("real", json!({"metadata": {"name": "real"}, "data": {"new": "1"}}))).await;
    assert_eq!(updated.status, 200, "{}", updated.text());
    assert_eq!(api.get("real").await.unwrap().data, Some([("new".to_string(), "1".to_string())].into()));
}

#[tokio::test]
async fn anonymous_requests_reach_health_only() {
    let s = TestServer::start().await;
    let anonymous = s.anonymous_client().await;
    for path in ["/readyz", "/livez", "/healthz"] {
        let reply = send(&anonymous, http::Request::get(path).body(vec![]).unwrap()).await;
        assert_eq!((reply.status, reply.text().as_str()), (200, "ok"), "{path}");
    }
    let version = send(&anonymous, http::Request::get("/version").body(vec![]).unwrap()).await;
    assert_eq!(version.status, 200, "{}", version.text());
    for path in ["/api", "/api/v1/namespaces", &format!("{CMS}/x"), "/apis"] {
        let reply = send(&anonymous, http::Request::get(path).body(vec![]).unwrap()).await;
        let body = reply.expect_status(403, "Forbidden");
        assert!(body["message"].as_str().unwrap().contains("system:anonymous"), "{body}");
    }
    let write = with_body("POST", CMS, "application/json", configmap_bytes("anon", 1));
    let body = send(&anonymous, write).await.expect_status(403, "Forbidden");
    assert_eq!(
        body["message"],
        "configmaps is forbidden: User \"system:anonymous\" cannot create resource \"configmaps\" in API group \"\" in the namespace \"default\""
    );
    s.get(&format!("{CMS}/anon")).await.expect_status(404, "NotFound");
    // Credentials the server cannot verify are refused, not taken as anonymous.
    let token = http::Request::get("/api/v1/namespaces").header("authorization", "Bearer not-a-token").body(vec![]).unwrap();
    send(&anonymous, token).await.expect_status(401, "Unauthorized");
}

#[tokio::test]
async fn version_and_discovery() {
    let s = TestServer::start().await;
    let client = s.client();
    let version = client.apiserver_version().await.unwrap();
    assert_eq!((version.major.as_str(), version.minor.as_str()), ("1", "36"));
    assert!(version.git_version.starts_with("v1.36"), "{}", version.git_version);

    let core = client.list_core_api_versions().await.unwrap();
    assert_eq!(core.versions, ["v1"]);
    let resources = client.list_core_api_resources("v1").await.unwrap();
    let cm = resources.resources.iter().find(|r| r.name == "configmaps").expect("configmaps not in /api/v1");
    assert_eq!((cm.kind.as_str(), cm.namespaced), ("ConfigMap", true));
    assert!(cm.short_names.as_ref().is_some_and(|n| n.iter().any(|n| n == "cm")), "{cm:?}");
    for verb in ["create", "delete", "get", "list", "patch", "update", "watch"] {
        assert!(cm.verbs.iter().any(|v| v == verb), "configmaps lack {verb}: {:?}", cm.verbs);
    }
    let ns = resources.resources.iter().find(|r| r.name == "namespaces").expect("namespaces not in /api/v1");
    assert!(!ns.namespaced);

    let groups = client.list_api_groups().await.unwrap();
    let apps = groups.groups.iter().find(|g| g.name == "apps").expect("no apps group");
    assert_eq!(apps.preferred_version.as_ref().map(|v| v.group_version.as_str()), Some("apps/v1"));
    let apps_v1 = client.list_api_group_resources("apps/v1").await.unwrap();
    let deployments = apps_v1.resources.iter().find(|r| r.name == "deployments").expect("no deployments in apps/v1");
    assert_eq!(deployments.kind, "Deployment");
    assert!(apps_v1.resources.iter().any(|r| r.name == "deployments/scale"));
}

#[tokio::test]
async fn request_timeouts_and_strict_field_validation() {
    let s = TestServer::start().await;
    // `timeout` is a Go duration; one that does not parse is 400, as in Kubernetes.
    let body = s.get(&format!("{CMS}?timeout=invalid")).await.expect_status(400, "BadRequest");
    assert_eq!(body["message"], "invalid timeout specified in the request URL - time: invalid duration \"invalid\"");
    assert_eq!(s.get(&format!("{CMS}?timeout=10s")).await.status, 200);
    assert_eq!(s.get(&format!("{CMS}?timeout=-1s")).await.status, 200);

    // Strict validation names every unknown and every repeated field in one message.
    let deployment = br#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "dup", "labels": {"app": "x"}},
        "spec": {"unknownField": "foo", "replicas": 2, "replicas": 3, "selector": {"matchLabels": {"app": "x"}},
                 "template": {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}"#;
    let path = "/apis/apps/v1/namespaces/default/deployments";
    let body = s
        .request(with_body("POST", &format!("{path}?fieldValidation=Strict"), "application/json", deployment.to_vec()))
        .await
        .expect_status(400, "BadRequest");
    assert_eq!(body["message"], "strict decoding error: unknown field \"spec.unknownField\", duplicate field \"spec.replicas\"");
    // Warn (the default) creates the object, with both as warnings.
    let reply = s.request(with_body("POST", path, "application/json", deployment.to_vec())).await;
    assert_eq!(reply.status, 201, "{}", reply.text());
    let warnings: Vec<_> = reply.headers.get_all("warning").iter().map(|v| v.to_str().unwrap().to_string()).collect();
    assert_eq!(warnings, vec![r#"299 - "unknown field \"spec.unknownField\"""#, r#"299 - "duplicate field \"spec.replicas\"""#]);
    assert_eq!(reply.json()["spec"]["replicas"], 3);
}

#[tokio::test]
async fn reviews_have_no_table_form() {
    let s = TestServer::start().await;
    let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"nonResourceAttributes": {"path": "/", "verb": "get"}}});
    let path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
    let table_only = http::Request::post(path)
        .header("content-type", "application/json")
        .header("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
        .body(review.to_string().into_bytes())
        .unwrap();
    s.request(table_only).await.expect_status(406, "NotAcceptable");
    // With JSON as the fallback, as kubectl asks, the review is answered in JSON.
    let with_fallback = http::Request::post(path)
        .header("content-type", "application/json")
        .header("accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
        .body(review.to_string().into_bytes())
        .unwrap();
    let reply = s.request(with_fallback).await;
    assert_eq!(reply.status, 201, "{}", reply.text());
    assert_eq!(reply.json()["status"]["allowed"], true);
}
