//! Webhook conversion of custom resources against the real binary: a definition whose two
//! versions differ in shape, converted by a real HTTPS webhook the test starts; objects are
//! stored in the storage version and read, listed and watched in either; a failing or
//! misbehaving webhook is a 500 with Kubernetes' message; a definition naming no webhook is
//! refused.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::webhook_server::{Answer, WebhookServer};
use common::TestServer;
use serde_json::{json, Value};

const HOSTS: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: hosts.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: hosts, kind: Host}
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: [v1]
      clientConfig:
        url: URL
        caBundle: CA
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              hostPort: {type: string}
  - name: v2
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              host: {type: string}
              port: {type: integer}
"#;

/// v1 keeps `host:port` in one field, v2 in two.
fn convert(obj: &Value, to: &str) -> Value {
    let mut out = obj.clone();
    let spec = &obj["spec"];
    out["spec"] = match to {
        "example.com/v2" => {
            let (host, port) = spec["hostPort"].as_str().unwrap_or_default().split_once(':').unwrap_or_default();
            json!({"host": host, "port": port.parse::<i64>().unwrap_or_default()})
        }
        _ => json!({"hostPort": format!("{}:{}", spec["host"].as_str().unwrap_or_default(), spec["port"])}),
    };
    out["apiVersion"] = json!(to);
    out
}

/// A converter that answers with `edit` applied to each converted object.
fn converter(edit: fn(&mut Value)) -> Answer {
    Arc::new(move |review: &Value| {
        let request = &review["request"];
        let to = request["desiredAPIVersion"].as_str().unwrap_or_default();
        let objects: Vec<Value> = request["objects"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|o| {
                let mut c = convert(o, to);
                edit(&mut c);
                c
            })
            .collect();
        let response = json!({"uid": request["uid"], "convertedObjects": objects, "result": {"status": "Success"}});
        (Duration::ZERO, 200, json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "response": response}))
    })
}

fn post(path: &str, body: Value) -> http::Request<Vec<u8>> {
    http::Request::post(path).header("content-type", "application/json").body(serde_json::to_vec(&body).unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_converts_custom_resources_between_versions() {
    let server = TestServer::start().await;
    let webhook = WebhookServer::start(converter(|_| {})).await;

    // A webhook strategy names its webhook.
    let bare = HOSTS.replace("      clientConfig:\n        url: URL\n        caBundle: CA\n", "");
    let refused = server.request(post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", serde_yaml::from_str(&bare).unwrap())).await;
    let status = refused.expect_status(422, "Invalid");
    assert!(
        status["message"].as_str().unwrap().contains("spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook"),
        "{status}"
    );

    let crd = HOSTS.replace("URL", &webhook.url).replace("CA", &webhook.ca_bundle());
    let created = server.request(post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", serde_yaml::from_str(&crd).unwrap())).await;
    assert_eq!(created.status, 201, "{}", created.text());
    server.kubectl_ok(&["wait", "--for", "condition=established", "crd/hosts.example.com", "--timeout=20s"]);

    // Written in the storage version: no call; read in the other: converted.
    let h1 = json!({"apiVersion": "example.com/v1", "kind": "Host", "metadata": {"name": "h1"}, "spec": {"hostPort": "localhost:8080"}});
    assert_eq!(server.request(post("/apis/example.com/v1/namespaces/default/hosts", h1)).await.status, 201);
    assert!(webhook.received().is_empty(), "nothing to convert yet");
    let v2 = server.get("/apis/example.com/v2/namespaces/default/hosts/h1").await.json();
    assert_eq!(v2["apiVersion"], "example.com/v2");
    assert_eq!(v2["spec"], json!({"host": "localhost", "port": 8080}));
    let review = &webhook.received()[0];
    assert_eq!((review["apiVersion"].as_str(), review["kind"].as_str()), (Some("apiextensions.k8s.io/v1"), Some("ConversionReview")));
    assert_eq!(review["request"]["desiredAPIVersion"], "example.com/v2");
    assert_eq!(review["request"]["objects"][0]["spec"]["hostPort"], "localhost:8080");

    // Written in v2: stored in v1 (converted on the way in), answered in v2.
    let h2 = json!({"apiVersion": "example.com/v2", "kind": "Host", "metadata": {"name": "h2"}, "spec": {"host": "example.org", "port": 443}});
    let created = server.request(post("/apis/example.com/v2/namespaces/default/hosts", h2)).await;
    assert_eq!(created.status, 201, "{}", created.text());
    assert_eq!(created.json()["spec"], json!({"host": "example.org", "port": 443}));
    let v1 = server.get("/apis/example.com/v1/namespaces/default/hosts/h2").await.json();
    assert_eq!((v1["apiVersion"].as_str(), v1["spec"]["hostPort"].as_str()), (Some("example.com/v1"), Some("example.org:443")));
    assert!(webhook.received().iter().any(|r| r["request"]["desiredAPIVersion"] == "example.com/v1"));

    // A list is one review of every item; kubectl reads either version.
    let before = webhook.received().len();
    let list = server.get("/apis/example.com/v2/namespaces/default/hosts").await.json();
    let hosts: Vec<&str> = list["items"].as_array().unwrap().iter().map(|i| i["spec"]["host"].as_str().unwrap()).collect();
    assert_eq!(hosts, ["localhost", "example.org"]);
    assert_eq!(webhook.received().len(), before + 1);
    assert_eq!(webhook.received()[before]["request"]["objects"].as_array().unwrap().len(), 2);
    assert_eq!(server.kubectl_ok(&["get", "hosts.v2.example.com", "h1", "-o", "jsonpath={.spec.port}"]), "8080");
    assert_eq!(server.kubectl_ok(&["get", "hosts.v1.example.com", "h1", "-o", "jsonpath={.spec.hostPort}"]), "localhost:8080");

    // A watch in v2 sees converted objects.
    let events = server.get("/apis/example.com/v2/namespaces/default/hosts?watch=true&timeoutSeconds=1").await.text();
    let first: Value = serde_json::from_str(events.lines().next().unwrap()).unwrap();
    assert_eq!((first["type"].as_str(), first["object"]["spec"]["host"].as_str()), (Some("ADDED"), Some("localhost")));

    // Only labels and annotations of the metadata may change; the rest is kept.
    webhook.answer_with(converter(|o| {
        o["metadata"]["labels"] = json!({"converted": "yes"});
        o["metadata"]["generation"] = json!(99);
    }));
    let relabelled = server.get("/apis/example.com/v2/namespaces/default/hosts/h1").await.json();
    assert_eq!((relabelled["metadata"]["labels"]["converted"].as_str(), relabelled["metadata"]["generation"].as_i64()), (Some("yes"), Some(1)));

    // A webhook that renames, fails or refuses is a 500 with Kubernetes' message.
    webhook.answer_with(converter(|o| o["metadata"]["name"] = json!("other")));
    let renamed = server.get("/apis/example.com/v2/namespaces/default/hosts/h1").await;
    let status = renamed.expect_status(500, "InternalError");
    assert_eq!(
        status["message"],
        "conversion webhook for example.com/v1, Kind=Host returned invalid converted object at index 0: must have the same name: h1 != other"
    );
    webhook.answer_with(Arc::new(|review: &Value| {
        let response = json!({"uid": review["request"]["uid"], "result": {"status": "Failure", "message": "cannot convert today"}});
        (Duration::ZERO, 200, json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "response": response}))
    }));
    let failed = server.get("/apis/example.com/v2/namespaces/default/hosts").await;
    assert_eq!(failed.expect_status(500, "InternalError")["message"], "conversion webhook for example.com/v1, Kind=Host failed: cannot convert today");
    let out = server.kubectl(&["get", "hosts.v2.example.com", "h1"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("conversion webhook for example.com/v1, Kind=Host failed: cannot convert today"));
    // The storage version needs no webhook.
    assert_eq!(server.get("/apis/example.com/v1/namespaces/default/hosts/h1").await.status, 200);
    webhook.answer_with(Arc::new(|_: &Value| (Duration::ZERO, 500, json!({}))));
    let broken = server.get("/apis/example.com/v2/namespaces/default/hosts/h1").await;
    let message = broken.expect_status(500, "InternalError")["message"].as_str().unwrap().to_string();
    assert!(message.starts_with("conversion webhook for example.com/v1, Kind=Host failed: Post \""), "{message}");
}
