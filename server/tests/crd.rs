//! CustomResourceDefinitions against the real binary with kubectl and kube-rs: a definition is
//! established and served (discovery, short names), its custom resources are pruned, defaulted
//! and validated against the schema with Kubernetes' messages, have a status subresource, are
//! watched, and go with the definition; bad definitions and name conflicts are refused or
//! reported as Kubernetes does.

use crate::common;

use std::io::Write;
use std::time::{Duration, Instant};

use common::TestServer;
use futures::StreamExt;
use kube::api::{ApiResource, DynamicObject, PostParams, WatchEvent, WatchParams};
use kube::Api;
use serde_json::{json, Value};

const WIDGETS: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names:
    plural: widgets
    kind: Widget
    shortNames: [wd]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
        labelSelectorPath: .status.selector
COLUMNS
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [color]
            properties:
              color:
                type: string
                enum: [red, green, blue]
              size:
                type: integer
                minimum: 1
                maximum: 10
                default: 3
              labels:
                type: object
                additionalProperties:
                  type: string
              extra:
                type: object
                x-kubernetes-preserve-unknown-fields: true
              replicas:
                type: integer
          status:
            type: object
            properties:
              ready:
                type: boolean
              replicas:
                type: integer
              selector:
                type: string
"#;

/// The printer columns of the widgets' version.
const COLUMNS: &str = r#"    additionalPrinterColumns:
    - {name: Color, type: string, jsonPath: .spec.color}
    - {name: Size, type: integer, jsonPath: .spec.size}
    - {name: Ready, type: boolean, jsonPath: .status.ready, priority: 1}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}"#;

/// The widgets' definition, with or without printer columns.
fn widgets_crd(columns: bool) -> String {
    WIDGETS.replace("COLUMNS\n", &if columns { format!("{COLUMNS}\n") } else { String::new() })
}

/// Writes `text` to a file in the server's directory and returns its path.
fn file(server: &TestServer, name: &str, text: &str) -> String {
    let path = server.dir().join(name);
    std::fs::File::create(&path).unwrap().write_all(text.as_bytes()).unwrap();
    path.to_string_lossy().into_owned()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn widgets(server: &TestServer) -> Api<DynamicObject> {
    let ar = ApiResource { group: "example.com".into(), version: "v1".into(), api_version: "example.com/v1".into(), kind: "Widget".into(), plural: "widgets".into() };
    Api::namespaced_with(server.client(), "default", &ar)
}

async fn established(server: &TestServer, columns: bool) {
    let path = file(server, "widgets.yaml", &widgets_crd(columns));
    server.kubectl_ok(&["apply", "-f", &path]);
    server.kubectl_ok(&["wait", "--for", "condition=established", "crd/widgets.example.com", "--timeout=20s"]);
}

#[tokio::test]
async fn custom_resources_are_served_pruned_defaulted_and_validated() {
    let server = TestServer::start().await;
    established(&server, true).await;
    let crd: Value = serde_json::from_str(&server.kubectl_ok(&["get", "crd", "widgets.example.com", "-o", "json"])).unwrap();
    let conditions: Vec<(&str, &str)> =
        crd["status"]["conditions"].as_array().unwrap().iter().map(|c| (c["type"].as_str().unwrap(), c["status"].as_str().unwrap())).collect();
    assert!(conditions.contains(&("NamesAccepted", "True")) && conditions.contains(&("Established", "True")), "{conditions:?}");
    assert_eq!(crd["status"]["acceptedNames"]["listKind"], "WidgetList");
    assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));
    let resources = server.kubectl_ok(&["api-resources", "--api-group=example.com"]);
    assert!(resources.contains("widgets") && resources.contains("wd") && resources.contains("Widget"), "{resources}");

    // Unknown fields are pruned (with kubectl's warning), defaults filled, preserved fields kept.
    let w = file(&server, "w.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  color: red\n  bogus: 1\n  extra:\n    any: [1, 2]\n");
    let out = server.kubectl(&["create", "-f", &w, "--validate=warn"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("unknown field \"spec.bogus\""), "{}", stderr(&out));
    let got: Value = serde_json::from_str(&server.kubectl_ok(&["get", "wd", "w1", "-o", "json"])).unwrap();
    assert_eq!(got["spec"], json!({"color": "red", "size": 3, "extra": {"any": [1, 2]}}));
    assert_eq!(got["metadata"]["generation"], 1);
    // The printer columns, in kubectl's table (-o wide adds the column of priority 1).
    let table = server.kubectl_ok(&["get", "widgets"]);
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "COLOR", "SIZE", "AGE"], "{table}");
    let row: Vec<&str> = table.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(&row[..3], ["w1", "red", "3"], "{table}");
    let wide = server.kubectl_ok(&["get", "widgets", "-o", "wide"]);
    assert!(wide.lines().next().unwrap().contains("READY"), "{wide}");

    // Strict field validation names the unknown field; schema violations are 422 with causes.
    let w2 = file(&server, "w2.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w2\nspec:\n  color: red\n  bogus: 1\n");
    let out = server.kubectl(&["apply", "-f", &w2, "--validate=strict"]);
    assert!(!out.status.success() && stderr(&out).contains("unknown field \"spec.bogus\""), "{}", stderr(&out));
    let api = widgets(&server);
    let bad: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "bad"},
        "spec": {"color": "purple", "size": 11, "labels": {"a": 1}}
    }))
    .unwrap();
    let err = common::api_error(api.create(&PostParams::default(), &bad).await);
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        err.message,
        "Widget.example.com \"bad\" is invalid: [spec.color: Unsupported value: \"purple\": supported values: \"red\", \"green\", \"blue\", spec.labels.a: Invalid value: 1: spec.labels.a in body must be of type string: \"integer\", spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10]"
    );
    let missing: DynamicObject = serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "m"}, "spec": {}})).unwrap();
    let err = common::api_error(api.create(&PostParams::default(), &missing).await);
    assert!(err.message.contains("spec.color: Required value"), "{}", err.message);

    // The status subresource: the main resource ignores status, status ignores spec; only spec
    // changes move the generation.
    let mut w1 = api.get("w1").await.unwrap();
    w1.data["status"] = json!({"ready": true});
    w1.data["spec"]["size"] = json!(5);
    let after = api.replace("w1", &PostParams::default(), &w1).await.unwrap();
    assert_eq!((after.data["spec"]["size"].clone(), after.data.get("status").cloned()), (json!(5), None));
    assert_eq!(after.metadata.generation, Some(2));
    let mut w1 = after;
    w1.data["status"] = json!({"ready": true});
    w1.data["spec"]["size"] = json!(7);
    let status = api.replace_status("w1", &PostParams::default(), &w1).await.unwrap();
    assert_eq!((status.data["status"]["ready"].clone(), status.data["spec"]["size"].clone()), (json!(true), json!(5)));
    assert_eq!(status.metadata.generation, Some(2));

    // The scale subresource reads and writes the definition's paths; kubectl scale uses it.
    server.kubectl_ok(&["scale", "widget", "w1", "--replicas=4"]);
    let w1 = api.get("w1").await.unwrap();
    assert_eq!(w1.data["spec"]["replicas"], 4);
    let mut w1 = w1;
    w1.data["status"] = json!({"ready": true, "replicas": 2, "selector": "app=w"});
    api.replace_status("w1", &PostParams::default(), &w1).await.unwrap();
    let scale = server.get("/apis/example.com/v1/namespaces/default/widgets/w1/scale").await.json();
    assert_eq!((scale["kind"].as_str(), scale["apiVersion"].as_str()), (Some("Scale"), Some("autoscaling/v1")));
    assert_eq!((scale["spec"]["replicas"].as_i64(), scale["status"]["replicas"].as_i64()), (Some(4), Some(2)));
    assert_eq!(scale["status"]["selector"], "app=w");

    // A watch sees changes to custom resources.
    let list = api.list(&Default::default()).await.unwrap();
    let mut events = api.watch(&WatchParams::default(), list.metadata.resource_version.as_deref().unwrap()).await.unwrap().boxed();
    server.kubectl_ok(&["label", "widget", "w1", "seen=yes"]);
    match tokio::time::timeout(Duration::from_secs(10), events.next()).await.unwrap().unwrap().unwrap() {
        WatchEvent::Modified(o) => assert_eq!(o.metadata.labels.unwrap()["seen"], "yes"),
        other => panic!("expected MODIFIED, got {other:?}"),
    }

    // While the definition is being deleted (a finalizer of another party holds one of its
    // custom resources), no new ones are created.
    server.kubectl_ok(&["patch", "widget", "w1", "--type=merge", "-p", r#"{"metadata":{"finalizers":["example.com/hold"]}}"#]);
    server.kubectl_ok(&["delete", "crd", "widgets.example.com", "--wait=false"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let out = server.kubectl(&["create", "-f", &w2, "--validate=false"]);
        if stderr(&out).contains("create not allowed while custom resource definition is terminating") {
            break;
        }
        assert!(Instant::now() < deadline, "create still allowed: {}", stderr(&out));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    server.kubectl_ok(&["patch", "widget", "w1", "--type=merge", "-p", r#"{"metadata":{"finalizers":null}}"#]);

    // Deleting the definition deletes its custom resources first, then stops serving them.
    // The definition may already be gone once its last resource is: --ignore-not-found.
    server.kubectl_ok(&["delete", "crd", "widgets.example.com", "--wait=true", "--timeout=30s", "--ignore-not-found"]);
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.get("/apis/example.com/v1/namespaces/default/widgets").await.status != 404 {
        assert!(Instant::now() < deadline, "widgets still served");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(server.get("/apis/example.com").await.status, 404);
    let out = server.kubectl(&["get", "crd", "widgets.example.com"]);
    assert!(stderr(&out).contains("NotFound"), "{}", stderr(&out));
    // Recreated, the definition serves an empty collection: nothing of the old one is left.
    established(&server, true).await;
    assert!(api.list(&Default::default()).await.unwrap().items.is_empty());
}

#[tokio::test]
async fn bad_definitions_are_refused_and_name_conflicts_reported() {
    let server = TestServer::start().await;
    let bad = widgets_crd(false).replace("name: widgets.example.com", "name: gadgets.example.com").replace("storage: true", "storage: false").replace("type: integer", "type: int");
    let out = server.kubectl(&["apply", "-f", &file(&server, "bad.yaml", &bad)]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("The CustomResourceDefinition \"gadgets.example.com\" is invalid"), "{err}");
    assert!(err.contains("metadata.name: Invalid value: \"gadgets.example.com\": must be spec.names.plural+\".\"+spec.group"), "{err}");
    assert!(err.contains("must have exactly one version marked as storage version"), "{err}");
    assert!(err.contains("spec.validation.openAPIV3Schema.properties[spec].properties[size].type: Unsupported value: \"int\""), "{err}");

    // A second definition asking for a kind another definition of the group holds is not
    // established.
    established(&server, false).await;
    let rival = widgets_crd(false).replace("widgets", "gizmos").replace("shortNames: [wd]", "shortNames: [gz]");
    server.kubectl_ok(&["apply", "-f", &file(&server, "rival.yaml", &rival)]);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let crd: Value = serde_json::from_str(&server.kubectl_ok(&["get", "crd", "gizmos.example.com", "-o", "json"])).unwrap();
        let names = crd["status"]["conditions"].as_array().into_iter().flatten().find(|c| c["type"] == "NamesAccepted").cloned();
        if let Some(c) = names {
            assert_eq!((c["status"].as_str(), c["reason"].as_str()), (Some("False"), Some("NameConflict")), "{c}");
            assert_eq!(c["message"], "\"widget\" is already in use");
            break;
        }
        assert!(Instant::now() < deadline, "no NamesAccepted condition: {crd}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(server.get("/apis/example.com/v1/namespaces/default/gizmos").await.status, 404);
    // Everything else is still served.
    assert_eq!(server.get("/apis/example.com/v1/namespaces/default/widgets").await.status, 200);
}

#[tokio::test]
async fn definitions_are_published_and_defaults_reach_stored_objects() {
    let server = TestServer::start().await;
    established(&server, false).await;
    let w = file(&server, "w.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  color: red\n");
    server.kubectl_ok(&["create", "-f", &w]);
    // Without printer columns, the table has a name and an age.
    let table = server.kubectl_ok(&["get", "widgets"]);
    assert_eq!(table.lines().next().unwrap().split_whitespace().collect::<Vec<_>>(), ["NAME", "AGE"], "{table}");

    // OpenAPI v3 (kubectl explain) and v2 carry the schema; discovery the storage version hash.
    let explained = server.kubectl_ok(&["explain", "widgets.spec"]);
    assert!(explained.contains("color") && explained.contains("size") && explained.contains("<integer>"), "{explained}");
    let index = server.get("/openapi/v3").await.json();
    let url = index["paths"]["apis/example.com/v1"]["serverRelativeURL"].as_str().expect("custom group version listed").to_string();
    let doc = server.get(&url).await.json();
    let schema = &doc["components"]["schemas"]["com.example.v1.Widget"];
    assert_eq!(schema["properties"]["spec"]["properties"]["size"]["default"], 3);
    assert_eq!(schema["x-kubernetes-group-version-kind"], json!([{"group": "example.com", "version": "v1", "kind": "Widget"}]));
    assert!(doc["components"]["schemas"]["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"].is_object());
    let v2 = server.get("/openapi/v2").await.json();
    assert!(v2["definitions"]["com.example.v1.Widget"].is_object());
    assert!(v2["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"].is_object());
    let list = server.get("/apis/example.com/v1").await.json();
    let hash = list["resources"].as_array().unwrap().iter().find(|r| r["name"] == "widgets").unwrap()["storageVersionHash"].clone();
    assert_eq!(hash, "gIwvi5rymmg=", "base64 of the first 8 bytes of sha256(\"example.com/v1/Widget\")");

    // A default added to the definition shows on objects stored before it, on every read.
    let patch = r#"[{"op": "add", "path": "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/shape", "value": {"type": "string", "default": "round"}}]"#;
    server.kubectl_ok(&["patch", "crd", "widgets.example.com", "--type=json", "-p", patch]);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got: Value = serde_json::from_str(&server.kubectl_ok(&["get", "widget", "w1", "-o", "json"])).unwrap();
        if got["spec"]["shape"] == "round" {
            break;
        }
        assert!(Instant::now() < deadline, "default not applied on read: {got}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let listed = server.get("/apis/example.com/v1/namespaces/default/widgets").await.json();
    assert_eq!(listed["items"][0]["spec"]["shape"], "round");
    let explained = server.kubectl_ok(&["explain", "widgets.spec.shape"]);
    assert!(explained.contains("shape") && explained.contains("<string>"), "{explained}");
}

const RULED: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: limits.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: limits, kind: Limit}
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
            x-kubernetes-validations:
            - rule: self.min <= self.max
              message: min must not exceed max
            - rule: self.max >= oldSelf.max
              messageExpression: "'max may only grow, not go to %d'.format([self.max])"
              reason: FieldValueForbidden
            properties:
              min: {type: integer}
              max: {type: integer}
              name:
                type: string
                x-kubernetes-validations:
                - rule: self.startsWith('lim-')
"#;

#[tokio::test]
async fn validation_rules_are_compiled_checked_and_ratcheted() {
    let server = TestServer::start().await;
    // Rules that do not compile refuse the definition, with Kubernetes' words.
    for (rule, expected) in [("self = 42", "Syntax error"), ("self.z == 100", "undefined field 'z'")] {
        let bad = RULED.replace("self.min <= self.max", rule).replace("limits", "badlimits").replace("kind: Limit", "kind: BadLimit");
        let out = server.kubectl(&["create", "-f", &file(&server, "bad.yaml", &bad)]);
        assert!(!out.status.success() && stderr(&out).contains(expected), "{rule}: {}", stderr(&out));
        assert!(stderr(&out).contains("spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"), "{}", stderr(&out));
    }
    server.kubectl_ok(&["create", "-f", &file(&server, "limits.yaml", RULED)]);
    server.kubectl_ok(&["wait", "--for", "condition=established", "crd/limits.example.com", "--timeout=20s"]);
    let limit = |min: i64, max: i64, name: &str| format!("apiVersion: example.com/v1\nkind: Limit\nmetadata:\n  name: l1\nspec:\n  min: {min}\n  max: {max}\n  name: {name}\n");

    let out = server.kubectl(&["create", "-f", &file(&server, "l.yaml", &limit(5, 1, "x"))]);
    let err = stderr(&out);
    assert!(err.contains("spec: Invalid value: \"object\": min must not exceed max"), "{err}");
    assert!(err.contains("spec.name: Invalid value: \"string\": failed rule: self.startsWith('lim-')"), "{err}");
    // A transition rule does not run on create; on update it does, with its reason and message.
    server.kubectl_ok(&["create", "-f", &file(&server, "l.yaml", &limit(1, 5, "lim-a"))]);
    let out = server.kubectl(&["apply", "-f", &file(&server, "l.yaml", &limit(1, 4, "lim-a")), "--server-side", "--force-conflicts"]);
    assert!(stderr(&out).contains("spec: Forbidden: max may only grow, not go to 4"), "{}", stderr(&out));
    server.kubectl_ok(&["apply", "-f", &file(&server, "l.yaml", &limit(1, 6, "lim-a")), "--server-side", "--force-conflicts"]);

    // Ratcheting: a rule added later does not refuse an update that leaves its field as it was.
    let patch = r#"[{"op": "add", "path": "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/name/x-kubernetes-validations/-", "value": {"rule": "self.size() > 8"}}]"#;
    server.kubectl_ok(&["patch", "crd", "limits.example.com", "--type=json", "-p", patch]);
    let deadline = Instant::now() + Duration::from_secs(10);
    for attempt in 0.. {
        // Until the new rule is served, a changed name passes; then it fails.
        let out = server.kubectl(&["label", "limit", "l1", &format!("probe={attempt}"), "--overwrite"]);
        assert!(out.status.success(), "an unchanged name is ratcheted: {}", stderr(&out));
        let name = format!("lim-{attempt}");
        let out = server.kubectl(&["apply", "-f", &file(&server, "l.yaml", &limit(1, 7, &name)), "--server-side", "--force-conflicts"]);
        if !out.status.success() {
            assert!(stderr(&out).contains("failed rule: self.size() > 8"), "{}", stderr(&out));
            break;
        }
        assert!(Instant::now() < deadline, "the new rule was never applied");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

const VERSIONED: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gears.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gears, kind: Gear}
  versions:
  - name: v1beta1
    served: true
    storage: false
    deprecated: true
    schema:
      openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {teeth: {type: integer}}}}}
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {teeth: {type: integer}}}}}
  - name: v1alpha1
    served: false
    storage: false
    schema:
      openAPIV3Schema: {type: object}
"#;

#[tokio::test]
async fn several_versions_share_one_storage_version() {
    let server = TestServer::start().await;
    server.kubectl_ok(&["create", "-f", &file(&server, "gears.yaml", VERSIONED)]);
    server.kubectl_ok(&["wait", "--for", "condition=established", "crd/gears.example.com", "--timeout=20s"]);
    // The preferred version is the GA one, whatever the definition's order.
    let group = server.get("/apis/example.com").await.json();
    assert_eq!(group["preferredVersion"]["version"], "v1", "{group}");
    assert_eq!(server.get("/apis/example.com/v1alpha1/namespaces/default/gears").await.status, 404);

    // Written through the deprecated version (with its warning), stored in v1, read in either.
    let gear = file(&server, "gear.yaml", "apiVersion: example.com/v1beta1\nkind: Gear\nmetadata:\n  name: g1\nspec:\n  teeth: 12\n");
    let out = server.kubectl(&["create", "-f", &gear]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("Warning: example.com/v1beta1 Gear is deprecated"), "{}", stderr(&out));
    let v1 = server.get("/apis/example.com/v1/namespaces/default/gears/g1").await.json();
    assert_eq!((v1["apiVersion"].as_str(), v1["spec"]["teeth"].as_i64()), (Some("example.com/v1"), Some(12)));
    let beta = server.get("/apis/example.com/v1beta1/namespaces/default/gears/g1").await;
    assert!(beta.headers.get("warning").is_some_and(|w| w.to_str().unwrap().contains("is deprecated")));
    assert_eq!(beta.json()["apiVersion"], "example.com/v1beta1");
    let list = server.get("/apis/example.com/v1beta1/namespaces/default/gears").await.json();
    assert_eq!(list["items"][0]["apiVersion"], "example.com/v1beta1");
    // An update through the old version keeps the object in the storage version.
    let req = http::Request::patch("/apis/example.com/v1beta1/namespaces/default/gears/g1")
        .header("content-type", "application/merge-patch+json")
        .body(br#"{"spec": {"teeth": 14}}"#.to_vec())
        .unwrap();
    let patched = server.request(req).await;
    assert_eq!(patched.status, 200, "{}", patched.text());
    assert_eq!(patched.json()["apiVersion"], "example.com/v1beta1");
    let v1 = server.get("/apis/example.com/v1/namespaces/default/gears/g1").await.json();
    assert_eq!((v1["apiVersion"].as_str(), v1["spec"]["teeth"].as_i64()), (Some("example.com/v1"), Some(14)));
    let crd: Value = serde_json::from_str(&server.kubectl_ok(&["get", "crd", "gears.example.com", "-o", "json"])).unwrap();
    assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));
    // Moving the storage version to v1beta1: objects stored at v1 remain, so both are listed,
    // in the answer to the update itself.
    let patch = r#"[{"op": "replace", "path": "/spec/versions/0/storage", "value": true}, {"op": "replace", "path": "/spec/versions/1/storage", "value": false}]"#;
    let crd: Value = serde_json::from_str(&server.kubectl_ok(&["patch", "crd", "gears.example.com", "--type=json", "-p", patch, "-o", "json"])).unwrap();
    assert_eq!(crd["status"]["storedVersions"], json!(["v1", "v1beta1"]));
}

const PORTED: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: services.net.example.com
spec:
  group: net.example.com
  scope: Namespaced
  names: {plural: services, kind: Service}
  versions:
  - name: v1
    served: true
    storage: true
    selectableFields:
    - jsonPath: .spec.owner
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [port]
                items:
                  type: object
                  required: [port]
                  properties:
                    port: {type: integer}
                    name: {type: string}
              tags:
                type: array
                x-kubernetes-list-type: set
                items: {type: string}
              owner: {type: string}
"#;

#[tokio::test]
async fn server_side_apply_merges_custom_resources_by_their_schema() {
    let server = TestServer::start().await;
    server.kubectl_ok(&["create", "-f", &file(&server, "ported.yaml", PORTED)]);
    server.kubectl_ok(&["wait", "--for", "condition=established", "crd/services.net.example.com", "--timeout=20s"]);
    let config = |name: &str, port: i64, tag: &str, finalizer: &str| {
        format!("apiVersion: net.example.com/v1\nkind: Service\nmetadata:\n  name: s1\n  finalizers: [{finalizer}]\nspec:\n  ports:\n  - port: {port}\n    name: {name}\n  tags: [{tag}]\n")
    };
    let apply = |manager: &str, text: String| server.kubectl(&["apply", "--server-side", "--field-manager", manager, "-f", &file(&server, &format!("{manager}.yaml"), &text)]);
    let out = apply("one", config("http", 80, "a", "example.com/one"));
    assert!(out.status.success(), "{}", stderr(&out));
    // Another manager adds its own item of the map list, its own set member and finalizer: no
    // conflict, and both remain.
    let out = apply("two", config("https", 443, "b", "example.com/two"));
    assert!(out.status.success(), "{}", stderr(&out));
    let got: Value = serde_json::from_str(&server.kubectl_ok(&["get", "services.net.example.com", "s1", "-o", "json", "--show-managed-fields"])).unwrap();
    let ports: Vec<i64> = got["spec"]["ports"].as_array().unwrap().iter().map(|p| p["port"].as_i64().unwrap()).collect();
    assert_eq!(ports, [80, 443], "{got}");
    assert_eq!(got["spec"]["tags"], json!(["a", "b"]));
    assert_eq!(got["metadata"]["finalizers"], json!(["example.com/one", "example.com/two"]));
    let managed: Vec<&str> = got["metadata"]["managedFields"].as_array().unwrap().iter().map(|m| m["manager"].as_str().unwrap()).collect();
    assert_eq!(managed, ["one", "two"]);
    // Changing the other manager's item conflicts on that item alone.
    let out = apply("two", config("web", 80, "b", "example.com/two"));
    assert!(!out.status.success());
    assert!(stderr(&out).contains("conflict with \"one\"") && stderr(&out).contains(".spec.ports[port=80].name"), "{}", stderr(&out));
    // Dropping its item releases it; the first manager's stays.
    let out = apply("two", "apiVersion: net.example.com/v1\nkind: Service\nmetadata:\n  name: s1\nspec:\n  owner: two\n".to_string());
    assert!(out.status.success(), "{}", stderr(&out));
    let got: Value = serde_json::from_str(&server.kubectl_ok(&["get", "services.net.example.com", "s1", "-o", "json"])).unwrap();
    assert_eq!(got["spec"]["ports"], json!([{"port": 80, "name": "http"}]));
    assert_eq!(got["metadata"]["finalizers"], json!(["example.com/one"]));

    // The version's selectable field works in field selectors, beside name and namespace.
    let selected = server.kubectl_ok(&["get", "services.net.example.com", "--field-selector", "spec.owner=two", "-o", "name"]);
    assert_eq!(selected.trim(), "service.net.example.com/s1");
    let none = server.kubectl_ok(&["get", "services.net.example.com", "--field-selector", "spec.owner=one", "-o", "name"]);
    assert!(none.trim().is_empty(), "{none}");
    let out = server.kubectl(&["get", "services.net.example.com", "--field-selector", "spec.ports=1"]);
    assert!(stderr(&out).contains(r#""spec.ports" is not a known field selector: only "metadata.name", "metadata.namespace", "spec.owner""#), "{}", stderr(&out));
    server.kubectl_ok(&["patch", "services.net.example.com", "s1", "--type=merge", "-p", r#"{"metadata":{"finalizers":null}}"#]);
}

/// A definition of `plural.example.com` with `schema` as its only version's.
fn definition(plural: &str, kind: &str, schema: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.example.com")},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": plural, "kind": kind},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema}}]
        }
    })
}

async fn post(server: &TestServer, path: &str, body: &Value) -> common::Reply {
    let req = http::Request::post(path).header("content-type", "application/json").body(serde_json::to_vec(body).unwrap()).unwrap();
    server.request(req).await
}

#[tokio::test]
async fn rule_costs_are_limited_as_kubernetes_limits_them() {
    let server = TestServer::start().await;
    // Kubernetes' e2e definition: a rule on every inner list of an unbounded list of lists.
    let nested = |bound: Option<u64>| {
        let mut inner = json!({"type": "array", "items": {"type": "string"}, "x-kubernetes-validations": [{"rule": "self.all(s, s == 'string constant')"}]});
        let mut outer = json!({"type": "array", "items": inner.clone()});
        if let Some(n) = bound {
            inner["maxItems"] = json!(n);
            outer = json!({"type": "array", "maxItems": n, "items": inner});
        }
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"x": outer}}}})
    };
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let refused = post(&server, crds, &definition("lists", "List", nested(None))).await;
    let status = refused.expect_status(422, "Invalid");
    let causes = status["details"]["causes"].as_array().unwrap();
    let rule = "spec.validation.openAPIV3Schema.properties[spec].properties[x].items.x-kubernetes-validations[0].rule";
    assert!(
        causes.iter().any(|c| c["reason"] == "FieldValueForbidden"
            && c["field"] == rule
            && c["message"] == "Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"),
        "{status}"
    );
    assert!(status["message"].as_str().unwrap().contains("exceeds budget"), "{status}");
    // Bounded, the same rule is cheap enough.
    let accepted = post(&server, crds, &definition("lists", "List", nested(Some(100)))).await;
    assert_eq!(accepted.status, 201, "{}", accepted.text());

    // Kubernetes' e2e runtime case: a rule the schema allows, too dear on a large value.
    let schema = json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "x-kubernetes-validations": [
                    {"rule": "self.x + self.y > 0"},
                    {"rule": "self.firstArray.isSorted() && self.secondArray.isSorted() && ((self.firstArray.sum() + self.secondArray.sum()) % 2 == 0)"},
                    {"rule": "self.largeArray.all(x, self.largeArray.all(y, y == x))"}
                ],
                "properties": {
                    "x": {"type": "integer"},
                    "y": {"type": "integer"},
                    "firstArray": {"type": "array", "maxItems": 1000, "items": {"type": "integer"}},
                    "secondArray": {"type": "array", "maxItems": 1000, "items": {"type": "integer"}},
                    "largeArray": {"type": "array", "maxItems": 725, "items": {"type": "integer"}}
                }
            }
        }
    });
    let created = post(&server, crds, &definition("costs", "Cost", schema)).await;
    assert_eq!(created.status, 201, "{}", created.text());
    server.kubectl_ok(&["wait", "--for", "condition=established", "crd/costs.example.com", "--timeout=20s"]);
    let object = |name: &str, spec: Value| json!({"apiVersion": "example.com/v1", "kind": "Cost", "metadata": {"name": name}, "spec": spec});
    let costs = "/apis/example.com/v1/namespaces/default/costs";
    let small = object("small", json!({"x": 1, "y": 0, "firstArray": [3, 4], "secondArray": [5, 10], "largeArray": [2, 2]}));
    let reply = post(&server, costs, &small).await;
    assert_eq!(reply.status, 201, "{}", reply.text());
    let large = object("large", json!({"largeArray": vec![20; 725]}));
    let status = post(&server, costs, &large).await.expect_status(422, "Invalid");
    let causes = status["details"]["causes"].as_array().unwrap();
    assert!(
        causes.iter().any(|c| c["field"] == "spec"
            && c["message"] == "Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: self.largeArray.all(x, self.largeArray.all(y, y == x))"),
        "{status}"
    );
    assert!(status["message"].as_str().unwrap().contains("call cost exceeds limit"), "{status}");
}

/// Rules calling Kubernetes' CEL libraries (quantity, IP and CIDR, URL, format) accept and refuse
/// custom resources with their messages, and a value a library cannot parse fails its rule with
/// the library's words.
#[tokio::test]
async fn validation_rules_use_kubernetes_libraries() {
    let server = TestServer::start().await;
    let string = json!({"type": "string", "maxLength": 253});
    let schema = json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "x-kubernetes-validations": [
                    {"rule": "quantity(self.memory).isLessThan(quantity('1Gi'))", "message": "memory must be under 1Gi"},
                    {"rule": "isIP(self.address) && ip(self.address).family() == 4", "message": "address must be an IPv4 address"},
                    {"rule": "cidr(self.network).containsIP(self.address)", "message": "address must be in the network"},
                    {"rule": "isURL(self.endpoint) && url(self.endpoint).getScheme() == 'https'", "message": "endpoint must be an https URL"},
                    {"rule": "!format.dns1123Label().validate(self.host).hasValue()", "message": "host must be a DNS label"}
                ],
                "properties": {"memory": string, "address": string, "network": string, "endpoint": string, "host": string}
            }
        }
    });
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let created = post(&server, crds, &definition("endpoints", "Endpoint", schema)).await;
    assert_eq!(created.status, 201, "{}", created.text());
    server.kubectl_ok(&["wait", "--for", "condition=established", "crd/endpoints.example.com", "--timeout=20s"]);
    let object = |name: &str, spec: Value| json!({"apiVersion": "example.com/v1", "kind": "Endpoint", "metadata": {"name": name}, "spec": spec});
    let endpoints = "/apis/example.com/v1/namespaces/default/endpoints";

    let good = json!({"memory": "512Mi", "address": "10.1.2.3", "network": "10.0.0.0/8", "endpoint": "https://example.com/hook", "host": "web"});
    let reply = post(&server, endpoints, &object("good", good)).await;
    assert_eq!(reply.status, 201, "{}", reply.text());

    let bad = json!({"memory": "2Gi", "address": "192.168.0.1", "network": "10.0.0.0/8", "endpoint": "http://example.com", "host": "Web_1"});
    let status = post(&server, endpoints, &object("bad", bad)).await.expect_status(422, "Invalid");
    let messages: Vec<&str> = status["details"]["causes"].as_array().unwrap().iter().filter(|c| c["field"] == "spec").filter_map(|c| c["message"].as_str()).collect();
    assert_eq!(
        messages,
        [
            "Invalid value: \"object\": memory must be under 1Gi",
            "Invalid value: \"object\": address must be in the network",
            "Invalid value: \"object\": endpoint must be an https URL",
            "Invalid value: \"object\": host must be a DNS label",
        ],
        "{status}"
    );

    // A value the library refuses makes the rule fail with Kubernetes' words.
    let unparsable = json!({"memory": "lots", "address": "::1", "network": "::/0", "endpoint": "https://example.com", "host": "web"});
    let status = post(&server, endpoints, &object("unparsable", unparsable)).await.expect_status(422, "Invalid");
    let messages = status["details"]["causes"].to_string();
    assert!(messages.contains("quantity(self.memory).isLessThan(quantity('1Gi')) evaluation error"), "{status}");
    assert!(messages.contains("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"), "{status}");
    assert!(messages.contains("address must be an IPv4 address") && !messages.contains("address must be in"), "{status}");
}

#[tokio::test]
async fn an_oversized_or_deeply_nested_definition_is_refused_with_a_status() {
    let server = TestServer::start().await;
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    // A schema nested past what the decoder takes is a 400, not a crash.
    let mut deep = json!({"type": "string"});
    for _ in 0..100 {
        deep = json!({"type": "object", "properties": {"a": deep}});
    }
    let status = post(&server, crds, &definition("deeps", "Deep", json!({"type": "object", "properties": {"spec": deep}}))).await.expect_status(400, "BadRequest");
    assert!(status["message"].as_str().unwrap().starts_with("couldn't decode the request body as JSON"), "{status}");
    // A body over the request limit is a 413.
    let properties: serde_json::Map<String, Value> = (0..40_000).map(|i| (format!("p{i}"), json!({"type": "string", "description": "x".repeat(80)}))).collect();
    let huge = definition("huges", "Huge", json!({"type": "object", "properties": {"spec": {"type": "object", "properties": properties}}}));
    post(&server, crds, &huge).await.expect_status(413, "RequestEntityTooLarge");
    // A large one within the limit is served, and so is everything else.
    let properties: serde_json::Map<String, Value> = (0..2_000).map(|i| (format!("p{i}"), json!({"type": "string", "maxLength": 10}))).collect();
    let large = definition("larges", "Large", json!({"type": "object", "properties": {"spec": {"type": "object", "properties": properties}}}));
    assert_eq!(post(&server, crds, &large).await.status, 201);
    server.kubectl_ok(&["wait", "--for", "condition=established", "crd/larges.example.com", "--timeout=20s"]);
    let object = json!({"apiVersion": "example.com/v1", "kind": "Large", "metadata": {"name": "l"}, "spec": {"p1999": "ok"}});
    assert_eq!(post(&server, "/apis/example.com/v1/namespaces/default/larges", &object).await.status, 201);
    assert_eq!(server.get("/api/v1/namespaces/default").await.status, 200);
}
