//! HorizontalPodAutoscalers through both versions Kubernetes serves, against the real binary
//! with kubectl: autoscaling/v2 (preferred) and autoscaling/v1 share one stored object; v1
//! shows the CPU target, keeps what only v2 has in its annotations, and an update through v1
//! loses none of it; Kubernetes' defaults apply in each version.

use crate::common;

use common::TestServer;
use serde_json::{json, Value};

fn request(method: &str, path: &str, content_type: &str, body: Value) -> http::Request<Vec<u8>> {
    http::Request::builder().method(method).uri(path).header("content-type", content_type).body(serde_json::to_vec(&body).unwrap()).unwrap()
}

const V1: &str = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers";
const V2: &str = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers";

#[tokio::test]
async fn an_autoscaler_is_served_in_v1_and_v2() {
    let server = TestServer::start().await;
    let group = server.get("/apis/autoscaling").await.json();
    assert_eq!(group["preferredVersion"]["version"], "v2", "{group}");
    let versions: Vec<&str> = group["versions"].as_array().unwrap().iter().map(|v| v["version"].as_str().unwrap()).collect();
    assert_eq!(versions, ["v2", "v1"]);

    // kubectl writes v2; v1 reads the CPU target out of its metrics.
    server.kubectl_ok(&["create", "deployment", "web", "--image=nginx"]);
    server.kubectl_ok(&["autoscale", "deployment", "web", "--min=2", "--max=5", "--cpu-percent=60"]);
    let v1 = server.get(&format!("{V1}/web")).await.json();
    assert_eq!(v1["apiVersion"], "autoscaling/v1");
    assert_eq!((v1["spec"]["minReplicas"].as_i64(), v1["spec"]["targetCPUUtilizationPercentage"].as_i64()), (Some(2), Some(60)), "{v1}");
    assert!(v1["metadata"]["annotations"].is_null(), "nothing but the CPU target to keep: {v1}");

    // A v1 object without a target gets Kubernetes' default CPU metric in v2.
    let bare = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "bare"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxReplicas": 3}});
    let created = server.request(request("POST", V1, "application/json", bare)).await;
    assert_eq!(created.status, 201, "{}", created.text());
    assert_eq!(created.json()["spec"]["minReplicas"], 1);
    let v2 = server.get(&format!("{V2}/bare")).await.json();
    assert_eq!(v2["spec"]["metrics"], json!([{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]));

    // What only v2 has survives an update through v1.
    let rich = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "rich"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxReplicas": 4,
            "metrics": [{"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "100"}}}],
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}});
    let created = server.request(request("POST", V2, "application/json", rich)).await;
    assert_eq!(created.status, 201, "{}", created.text());
    assert_eq!(created.json()["spec"]["behavior"]["scaleUp"]["policies"].as_array().map(Vec::len), Some(2), "behavior defaults");
    let v1 = server.get(&format!("{V1}/rich")).await.json();
    let metrics: Value = serde_json::from_str(v1["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/metrics"].as_str().unwrap()).unwrap();
    assert_eq!(metrics, json!([{"type": "Pods", "pods": {"metricName": "qps", "targetAverageValue": "100"}}]));
    let patched = server.request(request("PATCH", &format!("{V1}/rich"), "application/merge-patch+json", json!({"spec": {"maxReplicas": 8}}))).await;
    assert_eq!(patched.status, 200, "{}", patched.text());
    let v2 = server.get(&format!("{V2}/rich")).await.json();
    assert_eq!(v2["spec"]["maxReplicas"], 8);
    assert_eq!(v2["spec"]["metrics"][0]["pods"]["metric"]["name"], "qps", "{v2}");
    assert_eq!(v2["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"], 60, "{v2}");
    assert!(v2["metadata"]["annotations"].is_null(), "the annotations are v1's alone: {v2}");

    // kubectl reads either version; a v1 list and table work too.
    let table = server.kubectl_ok(&["get", "horizontalpodautoscalers.v1.autoscaling"]);
    assert!(table.starts_with("NAME") && table.contains("rich") && table.contains("Deployment/web"), "{table}");
    assert_eq!(server.kubectl_ok(&["get", "hpa", "web", "-o", "jsonpath={.apiVersion}"]), "autoscaling/v2");
    let list = server.get(V1).await.json();
    assert_eq!(list["apiVersion"], "autoscaling/v1");
    assert!(list["items"].as_array().unwrap().iter().all(|i| i["spec"].get("metrics").is_none()), "v1 items: {list}");
}
