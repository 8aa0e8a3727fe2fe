//! ValidatingAdmissionPolicy against the real binary, with kubectl: CEL validations over the
//! object, the namespace, parameters and variables; messages and message expressions; the
//! binding's namespace selector and actions; failure policies; the status type check; and
//! MutatingAdmissionPolicy in both the versions it is served in.

use crate::common;

use common::TestServer;
use k8s_pb::apimachinery::pkg::runtime::Unknown;
use prost::Message;

fn try_apply(s: &TestServer, yaml: &str) -> std::process::Output {
    let mut cmd = s.kubectl_command(&["apply", "-f", "-"]);
    cmd.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(yaml.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

fn apply(s: &TestServer, yaml: &str) {
    let out = try_apply(s, yaml);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

fn deployment(name: &str, replicas: u32) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}, namespace: guarded}}\nspec:\n  replicas: {replicas}\n  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n    spec: {{containers: [{{name: c, image: nginx}}]}}\n"
    )
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

const POLICY: &str = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: replicas.example.com}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [apps]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [deployments]
  variables:
  - name: replicas
    expression: object.spec.replicas
  - name: someReplicas
    expression: variables.replicas >= 1
  validations:
  - expression: variables.someReplicas
  - expression: variables.replicas > 1
    messageExpression: "'wants replicas > 1, got ' + string(variables.replicas)"
  - expression: variables.replicas < 10
    reason: Forbidden
    message: too many replicas
  - expression: namespaceObject.metadata.name == 'guarded'
    message: other namespaces are not bound
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: replicas-binding.example.com}
spec:
  policyName: replicas.example.com
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels: {policy: guarded}
"#;

#[tokio::test(flavor = "multi_thread")]
async fn policies_refuse_what_their_validations_reject() {
    let s = TestServer::start().await;
    s.kubectl_ok(&["create", "namespace", "guarded"]);
    s.kubectl_ok(&["label", "namespace", "guarded", "policy=guarded"]);
    s.kubectl_ok(&["create", "namespace", "free"]);
    apply(&s, POLICY);

    let out = s.kubectl(&["create", "deployment", "one", "--image=nginx", "--replicas=1", "-n", "guarded"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains(
            "deployments.apps \"one\" is forbidden: ValidatingAdmissionPolicy 'replicas.example.com' with binding 'replicas-binding.example.com' denied request: wants replicas > 1, got 1"
        ),
        "{}",
        stderr(&out)
    );
    // The reason the validation gives decides the code: Forbidden is a 403.
    let out = try_apply(&s, &deployment("many", 20));
    assert!(stderr(&out).contains("Error from server (Forbidden)") && stderr(&out).contains("denied request: too many replicas"), "{}", stderr(&out));
    let out = try_apply(&s, &deployment("single", 1));
    // kubectl prints a 422's cause without a field, as it does against kube-apiserver.
    assert!(stderr(&out).contains("The deployments \"single\" is invalid: : ValidatingAdmissionPolicy 'replicas.example.com'"), "{}", stderr(&out));
    s.kubectl_ok(&["create", "deployment", "two", "--image=nginx", "--replicas=2", "-n", "guarded"]);
    // An update is checked too; an unselected namespace or kind is not.
    let out = s.kubectl(&["patch", "deployment", "two", "-n", "guarded", "-p", r#"{"spec":{"replicas":1}}"#]);
    assert!(stderr(&out).contains("wants replicas > 1, got 1"), "{}", stderr(&out));
    s.kubectl_ok(&["create", "deployment", "one", "--image=nginx", "--replicas=1", "-n", "free"]);
    s.kubectl_ok(&["create", "job", "j", "--image=busybox", "-n", "guarded"]);

    // Warn and Audit let the write through; Warn tells the client why.
    let patch = r#"{"spec":{"validationActions":["Warn","Audit"]}}"#;
    s.kubectl_ok(&["patch", "validatingadmissionpolicybinding", "replicas-binding.example.com", "--type=merge", "-p", patch]);
    let out = s.kubectl(&["create", "deployment", "warned", "--image=nginx", "--replicas=1", "-n", "guarded"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let warning = "Warning: Validation failed for ValidatingAdmissionPolicy 'replicas.example.com' with binding 'replicas-binding.example.com': wants replicas > 1, got 1";
    assert!(stderr(&out).contains(warning), "{}", stderr(&out));

    // Without the binding nothing is checked.
    s.kubectl_ok(&["delete", "validatingadmissionpolicybinding", "replicas-binding.example.com"]);
    s.kubectl_ok(&["create", "deployment", "one", "--image=nginx", "--replicas=1", "-n", "guarded"]);
}

const PARAMS_POLICY: &str = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: prefix.example.com}
spec:
  failurePolicy: Fail
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [secrets]
  matchConditions:
  - name: not-exempt
    expression: "!has(object.metadata.labels) || !('exempt' in object.metadata.labels)"
  validations:
  - expression: object.metadata.name.startsWith(params.data.prefix)
    messageExpression: "'secret names must start with ' + params.data.prefix"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: prefix-binding.example.com}
spec:
  policyName: prefix.example.com
  validationActions: [Deny]
  paramRef: {name: prefix-rule, parameterNotFoundAction: Deny}
"#;

#[tokio::test(flavor = "multi_thread")]
async fn parameters_conditions_and_failure_policies() {
    let s = TestServer::start().await;
    apply(&s, PARAMS_POLICY);
    // The parameter is looked up in the request's namespace; missing, the binding denies.
    let out = s.kubectl(&["create", "secret", "generic", "app-token", "-n", "default"]);
    assert!(stderr(&out).contains("no params found for policy binding with `Deny` parameterNotFoundAction"), "{}", stderr(&out));
    s.kubectl_ok(&["create", "configmap", "prefix-rule", "--from-literal=prefix=team-", "-n", "default"]);
    let out = s.kubectl(&["create", "secret", "generic", "app-token", "-n", "default"]);
    assert!(stderr(&out).contains("denied request: secret names must start with team-"), "{}", stderr(&out));
    s.kubectl_ok(&["create", "secret", "generic", "team-token", "-n", "default"]);
    // A match condition that is false skips the policy.
    apply(&s, "apiVersion: v1\nkind: Secret\nmetadata: {name: anything, namespace: default, labels: {exempt: \"yes\"}}\n");

    // An expression that fails: Fail refuses, Ignore lets the write through.
    let broken = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: broken.example.com}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  validations:
  - expression: object.data.missing == 'x'
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: broken-binding.example.com}
spec:
  policyName: broken.example.com
  validationActions: [Deny]
"#;
    apply(&s, broken);
    let out = s.kubectl(&["create", "configmap", "c1", "--from-literal=a=b", "-n", "default"]);
    assert!(stderr(&out).contains("ValidatingAdmissionPolicy 'broken.example.com' with binding 'broken-binding.example.com' denied request: expression 'object.data.missing == 'x'' resulted in error"), "{}", stderr(&out));
    apply(&s, &broken.replace("failurePolicy: Fail", "failurePolicy: Ignore"));
    s.kubectl_ok(&["create", "configmap", "c1", "--from-literal=a=b", "-n", "default"]);
}

const AUTHORIZER_POLICY: &str = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: readers.example.com}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  validations:
  - expression: authorizer.requestResource.check('create').allowed()
  - expression: authorizer.path('/healthz').check('get').allowed()
  - expression: authorizer.group('').resource('secrets').namespace(object.metadata.namespace).check('get').allowed()
    messageExpression: "'only readers of secrets may create configmaps here: ' + authorizer.group('').resource('secrets').namespace(object.metadata.namespace).check('get').reason()"
  - expression: >-
      !has(object.data) || !('deployer' in object.data) ||
      authorizer.serviceAccount(object.metadata.namespace, object.data.deployer).group('apps').resource('deployments').namespace(object.metadata.namespace).check('create').allowed()
    message: the deployer may not create deployments
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: readers-binding.example.com}
spec:
  policyName: readers.example.com
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels: {policy: readers}
"#;

#[tokio::test(flavor = "multi_thread")]
async fn validations_ask_the_authorizer() {
    let s = TestServer::start().await;
    s.kubectl_ok(&["create", "namespace", "team"]);
    s.kubectl_ok(&["label", "namespace", "team", "policy=readers"]);
    apply(&s, AUTHORIZER_POLICY);
    s.kubectl_ok(&["create", "role", "writer", "--verb=create", "--resource=configmaps", "-n", "team"]);
    s.kubectl_ok(&["create", "rolebinding", "alice-writer", "--role=writer", "--user=alice", "-n", "team"]);
    let alice = s.kubeconfig_for("alice", &[]);

    // Alice may create configmaps but not read secrets: the policy asks RBAC and refuses.
    let out = s.kubectl_as(&alice, &["create", "configmap", "one", "-n", "team"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("denied request: only readers of secrets may create configmaps here"), "{}", stderr(&out));
    s.kubectl_ok(&["create", "role", "reader", "--verb=get", "--resource=secrets", "-n", "team"]);
    s.kubectl_ok(&["create", "rolebinding", "alice-reader", "--role=reader", "--user=alice", "-n", "team"]);
    let out = s.kubectl_as(&alice, &["create", "configmap", "one", "-n", "team"]);
    assert!(out.status.success(), "{}", stderr(&out));

    // Checks for a service account rather than the requester.
    let out = s.kubectl_as(&alice, &["create", "configmap", "two", "--from-literal=deployer=builder", "-n", "team"]);
    assert!(stderr(&out).contains("the deployer may not create deployments"), "{}", stderr(&out));
    s.kubectl_ok(&["create", "role", "deployer", "--verb=create", "--resource=deployments.apps", "-n", "team"]);
    s.kubectl_ok(&["create", "rolebinding", "builder-deployer", "--role=deployer", "--serviceaccount=team:builder", "-n", "team"]);
    let out = s.kubectl_as(&alice, &["create", "configmap", "two", "--from-literal=deployer=builder", "-n", "team"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // Alice herself still may not create deployments: the check was for the account alone.
    let out = s.kubectl_as(&alice, &["create", "deployment", "web", "--image=nginx", "-n", "team"]);
    assert!(stderr(&out).contains("forbidden"), "{}", stderr(&out));
}

const MUTATING_POLICY: &str = r#"
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicy
metadata: {name: stamp.example.com}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [deployments]}
  matchConditions:
  - name: not-exempt
    expression: "!has(object.metadata.labels) || !('exempt' in object.metadata.labels)"
  variables:
  - name: team
    expression: "namespaceObject.metadata.labels['team']"
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >
        Object{
          metadata: Object.metadata{annotations: {"mutated-by": "admission-policy", "team": variables.team}},
          spec: Object.spec{replicas: object.spec.replicas > 3 ? 3 : object.spec.replicas}
        }
  - patchType: JSONPatch
    jsonPatch:
      expression: >
        [JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey("example.com/stamped"), value: object.metadata.annotations["mutated-by"]}]
  reinvocationPolicy: Never
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: stamp-binding.example.com}
spec:
  policyName: stamp.example.com
  matchResources:
    namespaceSelector:
      matchLabels: {stamp: "yes"}
"#;

#[tokio::test(flavor = "multi_thread")]
async fn mutating_policies_change_what_they_select() {
    // Not served by Kubernetes 1.35 (beta, off); GA in 1.36, with v1beta1 served on request.
    let off = TestServer::start_with(&["--emulated-version=1.35"]).await;
    let out = off.kubectl(&["get", "mutatingadmissionpolicies"]);
    assert!(!out.status.success(), "served by an emulated 1.35");

    let s = TestServer::start_with(&["--runtime-config=admissionregistration.k8s.io/v1beta1=true"]).await;
    let resources = s.kubectl_ok(&["api-resources", "--api-group=admissionregistration.k8s.io", "-o", "name"]);
    assert!(resources.contains("mutatingadmissionpolicies.admissionregistration.k8s.io"), "{resources}");
    s.kubectl_ok(&["create", "namespace", "stamped"]);
    s.kubectl_ok(&["label", "namespace", "stamped", "stamp=yes", "team=blue"]);
    s.kubectl_ok(&["create", "namespace", "plain"]);
    apply(&s, MUTATING_POLICY);
    let listed = s.kubectl_ok(&["get", "mutatingadmissionpolicies"]);
    assert!(listed.contains("MUTATIONS") && listed.contains("stamp.example.com"), "{listed}");
    // v1 (as Kubernetes 1.36 serves it) and v1beta1 are two views of the same objects: the
    // policy was written as v1beta1, its binding as v1.
    let in_v1 = s.kubectl_ok(&["get", "mutatingadmissionpolicies.v1.admissionregistration.k8s.io", "stamp.example.com", "-o", "json"]);
    let in_v1: serde_json::Value = serde_json::from_str(&in_v1).unwrap();
    assert_eq!(in_v1["apiVersion"], "admissionregistration.k8s.io/v1");
    assert_eq!(in_v1["spec"]["reinvocationPolicy"], "Never", "{in_v1}");
    let binding = s.kubectl_ok(&["get", "mutatingadmissionpolicybindings.v1beta1.admissionregistration.k8s.io", "stamp-binding.example.com", "-o", "jsonpath={.apiVersion}"]);
    assert_eq!(binding, "admissionregistration.k8s.io/v1beta1");
    // client-go's typed clients read v1 in Protobuf, the v1beta1 message on the wire.
    let path = "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies/stamp.example.com";
    let reply = s.request(http::Request::get(path).header("accept", "application/vnd.kubernetes.protobuf").body(vec![]).unwrap()).await;
    assert_eq!(reply.status, 200);
    let unknown = Unknown::decode(reply.body.strip_prefix(b"k8s\0").expect("the Protobuf prefix")).unwrap();
    assert_eq!(unknown.type_meta.unwrap().api_version.as_deref(), Some("admissionregistration.k8s.io/v1"));
    let policy = k8s_pb::api::admissionregistration::v1beta1::MutatingAdmissionPolicy::decode(unknown.raw.unwrap().as_slice()).unwrap();
    assert_eq!(policy.metadata.unwrap().name.as_deref(), Some("stamp.example.com"));
    assert_eq!(policy.spec.unwrap().mutations.len(), 2);

    s.kubectl_ok(&["create", "deployment", "web", "--image=nginx", "--replicas=5", "-n", "stamped"]);
    let web: serde_json::Value = serde_json::from_str(&s.kubectl_ok(&["get", "deployment", "web", "-n", "stamped", "-o", "json"])).unwrap();
    assert_eq!(web["metadata"]["annotations"]["mutated-by"], "admission-policy", "{web}");
    assert_eq!(web["metadata"]["annotations"]["team"], "blue");
    assert_eq!(web["spec"]["replicas"], 3, "the apply configuration caps replicas");
    assert_eq!(web["metadata"]["labels"]["example.com/stamped"], "admission-policy", "the JSON patch saw the first mutation");
    assert_eq!(web["spec"]["template"]["spec"]["containers"][0]["image"], "nginx", "the rest of the object is kept");

    // Unselected namespaces and objects the match condition exempts are left alone.
    s.kubectl_ok(&["create", "deployment", "web", "--image=nginx", "--replicas=5", "-n", "plain"]);
    let plain = s.kubectl_ok(&["get", "deployment", "web", "-n", "plain", "-o", "jsonpath={.spec.replicas}"]);
    assert_eq!(plain, "5");
    apply(&s, &deployment("exempted", 5).replace("namespace: guarded", "namespace: stamped, labels: {exempt: \"yes\"}"));
    let exempt = s.kubectl_ok(&["get", "deployment", "exempted", "-n", "stamped", "-o", "jsonpath={.spec.replicas}"]);
    assert_eq!(exempt, "5");

    // A mutation that fails refuses the write under failurePolicy Fail (the default).
    let broken = MUTATING_POLICY.replace("stamp.example.com", "broken.example.com").replace("stamp-binding", "broken-binding")
        .replace("namespaceObject.metadata.labels['team']", "namespaceObject.metadata.labels['missing']");
    apply(&s, &broken);
    let out = s.kubectl(&["create", "deployment", "db", "--image=postgres", "-n", "stamped"]);
    assert!(stderr(&out).contains("MutatingAdmissionPolicy 'broken.example.com' with binding 'broken-binding.example.com' denied request"), "{}", stderr(&out));
}

/// The policy's status once the type check has seen its generation.
async fn checked_status(s: &TestServer, name: &str, generation: i64) -> serde_json::Value {
    for _ in 0..100 {
        let out = s.kubectl(&["get", "validatingadmissionpolicy", name, "-o", "json"]);
        let policy: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        if policy["status"]["observedGeneration"] == generation {
            return policy["status"].clone();
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("{name}: the type check never saw generation {generation}");
}

const CRONTABS: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: crontabs.stable.example.com}
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: crontabs, singular: crontab, kind: CronTab}
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
              cronSpec: {type: string}
              replicas: {type: integer}
"#;

fn typed_policy(name: &str, resource_rule: &str, validations: &str) -> String {
    format!(
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {{name: {name}}}\nspec:\n  matchConstraints:\n    resourceRules:\n    - {resource_rule}\n  validations:\n{validations}"
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn policies_are_type_checked_against_the_kinds_they_match() {
    let s = TestServer::start().await;
    let deployments = "{apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}";
    apply(&s, &typed_policy("correct.example.com", deployments, "  - expression: object.spec.replicas > 1\n"));
    let status = checked_status(&s, "correct.example.com", 1).await;
    assert_eq!(status["typeChecking"], serde_json::json!({}), "{status}");

    let confused = "  - expression: object.spec.replicas > '1'\n    messageExpression: \"'wants replicas > 1, got ' + object.spec.replicas\"\n";
    apply(&s, &typed_policy("confused.example.com", deployments, confused));
    let status = checked_status(&s, "confused.example.com", 1).await;
    let warnings = status["typeChecking"]["expressionWarnings"].as_array().cloned().unwrap_or_default();
    assert_eq!(warnings.len(), 2, "{status}");
    assert_eq!(warnings[0]["fieldRef"], "spec.validations[0].expression");
    let first = warnings[0]["warning"].as_str().unwrap();
    assert!(first.starts_with("apps/v1, Kind=Deployment: compilation failed: ERROR: <input>:1:22: found no matching overload for '_>_' applied to '(int, string)'"), "{first}");
    assert_eq!(warnings[1]["fieldRef"], "spec.validations[0].messageExpression");
    assert!(warnings[1]["warning"].as_str().unwrap().contains("found no matching overload for '_+_' applied to '(string, int)'"));

    // A fixed policy is a new generation, checked again: no warnings left.
    apply(&s, &typed_policy("confused.example.com", deployments, "  - expression: object.spec.replicas > 1\n"));
    let status = checked_status(&s, "confused.example.com", 2).await;
    assert_eq!(status["typeChecking"], serde_json::json!({}), "{status}");

    // A custom resource's schema, as its definition gives it.
    apply(&s, CRONTABS);
    s.kubectl_ok(&["wait", "--for=condition=Established", "crd/crontabs.stable.example.com"]);
    let crontabs = "{apiGroups: [stable.example.com], apiVersions: [v1], operations: [CREATE], resources: [crontabs]}";
    let validations = "  - expression: object.spec.replicas > '1'\n  - expression: object.spec.maxRetries < 10\n  - expression: object.metadata.name.startsWith(object.spec.cronSpec)\n";
    apply(&s, &typed_policy("crontabs.example.com", crontabs, validations));
    let status = checked_status(&s, "crontabs.example.com", 1).await;
    let warnings = status["typeChecking"]["expressionWarnings"].as_array().cloned().unwrap_or_default();
    assert_eq!(warnings.len(), 2, "{status}");
    assert!(warnings[0]["warning"].as_str().unwrap().starts_with("stable.example.com/v1, Kind=CronTab: compilation failed:"));
    assert_eq!(warnings[1]["fieldRef"], "spec.validations[1].expression");
    assert!(warnings[1]["warning"].as_str().unwrap().contains("undefined field 'maxRetries'"));
}
