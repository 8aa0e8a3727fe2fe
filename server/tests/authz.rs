//! Authorization against the real binary: RBAC with the default policy, kubectl's `auth can-i`
//! (`--as`, `--list`, `--subresource`, non-resource URLs), `create role/rolebinding/
//! clusterrolebinding`, `auth reconcile`, escalation prevention, immutable `roleRef`,
//! impersonation, the review APIs, ClusterRole aggregation, and the AlwaysAllow/AlwaysDeny modes.

use crate::common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use common::{expect_success, send, TestServer};
use serde_json::{json, Value};

/// The default policy the server reconciles at start, as the server reads it.
const POLICY: &str = include_str!("../access/src/rbac/bootstrap-policy.yaml");

fn policy_names(kind: &str) -> BTreeSet<String> {
    use serde::Deserialize;
    serde_yaml::Deserializer::from_str(POLICY)
        .map(|d| serde_yaml::Value::deserialize(d).unwrap())
        .filter(|v| v["kind"].as_str() == Some(kind))
        .map(|v| {
            let name = v["metadata"]["name"].as_str().unwrap().to_string();
            match v["metadata"]["namespace"].as_str() {
                Some(ns) => format!("{ns}/{name}"),
                None => name,
            }
        })
        .collect()
}

fn post(path: &str, body: Value) -> http::Request<Vec<u8>> {
    http::Request::post(path).header("content-type", "application/json").body(serde_json::to_vec(&body).unwrap()).unwrap()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn can_i(server: &TestServer, args: &[&str]) -> String {
    let mut all = vec!["auth", "can-i"];
    all.extend_from_slice(args);
    // `auth can-i` exits 1 for "no": the answer is on stdout either way.
    String::from_utf8_lossy(&server.kubectl(&all).stdout).trim().to_string()
}

#[tokio::test]
async fn default_policy_exists_after_start() {
    let server = TestServer::start().await;
    for (kind, resource, namespaced) in [
        ("ClusterRole", "clusterroles", false),
        ("ClusterRoleBinding", "clusterrolebindings", false),
        ("Role", "roles", true),
        ("RoleBinding", "rolebindings", true),
    ] {
        let want = policy_names(kind);
        let jsonpath = if namespaced { "{range .items[*]}{.metadata.namespace}/{.metadata.name}{\"\\n\"}{end}" } else { "{range .items[*]}{.metadata.name}{\"\\n\"}{end}" };
        let out = server.kubectl_ok(&["get", resource, "-A", "-o", &format!("jsonpath={jsonpath}")]);
        let have: BTreeSet<String> = out.lines().map(str::to_string).collect();
        let missing: Vec<&String> = want.difference(&have).collect();
        assert!(missing.is_empty(), "{kind}s missing after start: {missing:?}");
    }
    assert!(policy_names("ClusterRole").contains("cluster-admin"));
    let role: Value = serde_json::from_str(&server.kubectl_ok(&["get", "clusterrole", "system:basic-user", "-o", "json"])).unwrap();
    assert_eq!(role["metadata"]["labels"]["kubernetes.io/bootstrapping"], "rbac-defaults");
    assert_eq!(role["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"], "true");
}

#[tokio::test]
async fn anonymous_requests_get_kubernetes_403_bodies() {
    let server = TestServer::start().await;
    let anon = server.anonymous_client().await;
    let get = |p: &str| http::Request::get(p).body(vec![]).unwrap();
    assert_eq!(send(&anon, get("/healthz")).await.text(), "ok");
    assert_eq!(send(&anon, get("/version")).await.status, 200);
    let body = send(&anon, get("/api/v1/namespaces/ns/configmaps/x")).await.expect_status(403, "Forbidden");
    assert_eq!(body["message"], "configmaps \"x\" is forbidden: User \"system:anonymous\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"ns\"");
    assert_eq!(body["details"], json!({"name": "x", "kind": "configmaps"}));
    let body = send(&anon, get("/apis/apps/v1/deployments")).await.expect_status(403, "Forbidden");
    assert_eq!(body["message"], "deployments.apps is forbidden: User \"system:anonymous\" cannot list resource \"deployments\" in API group \"apps\" at the cluster scope");
    assert_eq!(body["details"], json!({"group": "apps", "kind": "deployments"}));
    // Authorization comes before the lookup: an unknown resource is refused, not missing.
    let body = send(&anon, get("/apis/example.com/v1/widgets")).await.expect_status(403, "Forbidden");
    assert_eq!(body["message"], "widgets.example.com is forbidden: User \"system:anonymous\" cannot list resource \"widgets\" in API group \"example.com\" at the cluster scope");
    let body = send(&anon, get("/metrics")).await.expect_status(403, "Forbidden");
    assert_eq!(body["message"], "forbidden: User \"system:anonymous\" cannot get path \"/metrics\"");
    assert_eq!(body["details"], json!({}));
    let metrics = server.get("/metrics").await.text();
    assert!(metrics.contains("apiserver_authorization_decisions_total{decision=\"allowed\",name=\"rbac\",type=\"RBAC\"}"), "{metrics}");
}

#[tokio::test]
async fn roles_and_bindings_grant_through_kubectl() {
    let server = TestServer::start().await;
    server.kubectl_ok(&["create", "namespace", "team"]);
    assert_eq!(can_i(&server, &["list", "configmaps", "-n", "team", "--as", "alice"]), "no");
    let denied = server.kubectl(&["get", "configmaps", "-n", "team", "--as", "alice"]);
    assert!(stderr(&denied).contains("configmaps is forbidden: User \"alice\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"team\""), "{}", stderr(&denied));

    server.kubectl_ok(&["create", "role", "cm-reader", "--verb=get,list,watch", "--resource=configmaps", "-n", "team"]);
    server.kubectl_ok(&["create", "rolebinding", "alice-reads", "--role=cm-reader", "--user=alice", "-n", "team"]);
    assert_eq!(can_i(&server, &["list", "configmaps", "-n", "team", "--as", "alice"]), "yes");
    assert_eq!(can_i(&server, &["list", "configmaps", "-n", "default", "--as", "alice"]), "no");
    assert_eq!(can_i(&server, &["delete", "configmaps", "-n", "team", "--as", "alice"]), "no");
    server.kubectl_ok(&["get", "configmaps", "-n", "team", "--as", "alice"]);

    // A group binding through a ClusterRole, limited to one namespace; a subresource rule.
    server.kubectl_ok(&["create", "clusterrole", "scaler", "--verb=get,update", "--resource=deployments.apps/scale"]);
    server.kubectl_ok(&["create", "rolebinding", "devs-scale", "--clusterrole=scaler", "--group=devs", "-n", "team"]);
    assert_eq!(can_i(&server, &["update", "deployments.apps", "--subresource=scale", "-n", "team", "--as", "bob", "--as-group", "devs"]), "yes");
    assert_eq!(can_i(&server, &["update", "deployments.apps", "-n", "team", "--as", "bob", "--as-group", "devs"]), "no");
    assert_eq!(can_i(&server, &["update", "deployments.apps", "--subresource=scale", "-n", "other", "--as", "bob", "--as-group", "devs"]), "no");

    // Cluster-wide bindings and non-resource URLs.
    server.kubectl_ok(&["create", "clusterrole", "metrics-reader", "--verb=get", "--non-resource-url=/metrics"]);
    server.kubectl_ok(&["create", "clusterrolebinding", "carol-metrics", "--clusterrole=metrics-reader", "--user=carol"]);
    assert_eq!(can_i(&server, &["get", "/metrics", "--as", "carol"]), "yes");
    assert_eq!(can_i(&server, &["get", "/metrics", "--as", "alice"]), "no");
    assert_eq!(can_i(&server, &["get", "/healthz", "--as", "alice"]), "yes");

    // `--list` shows the rules of a namespace, from SelfSubjectRulesReview.
    let list = server.kubectl_ok(&["auth", "can-i", "--list", "-n", "team", "--as", "alice"]);
    let row = list.lines().find(|l| l.starts_with("configmaps ")).unwrap_or_else(|| panic!("{list}"));
    assert!(row.contains("[get list watch]"), "{list}");
    assert!(list.contains("selfsubjectaccessreviews.authorization.k8s.io"), "{list}");
    let list = server.kubectl_ok(&["auth", "can-i", "--list", "-n", "default", "--as", "alice"]);
    assert!(!list.lines().any(|l| l.starts_with("configmaps ")), "{list}");

    // A binding removed takes its permissions with it.
    server.kubectl_ok(&["delete", "rolebinding", "alice-reads", "-n", "team"]);
    assert_eq!(can_i(&server, &["list", "configmaps", "-n", "team", "--as", "alice"]), "no");
}

#[tokio::test]
async fn escalation_is_prevented_and_role_ref_is_immutable() {
    let server = TestServer::start().await;
    server.kubectl_ok(&["create", "namespace", "team"]);
    // alice may manage roles and bindings in `team`, and read configmaps there.
    server.kubectl_ok(&["create", "role", "rbac-manager", "--verb=get,list,create,update,delete", "--resource=roles.rbac.authorization.k8s.io,rolebindings.rbac.authorization.k8s.io,configmaps", "-n", "team"]);
    server.kubectl_ok(&["create", "rolebinding", "alice-manages", "--role=rbac-manager", "--user=alice", "-n", "team"]);
    let alice = server.kubeconfig_for("alice", &[]);

    // A role within her own permissions is fine; one with more is refused, naming what is missing.
    expect_success(&["create role"], server.kubectl_as(&alice, &["create", "role", "cm-get", "--verb=get", "--resource=configmaps", "-n", "team"]));
    let out = server.kubectl_as(&alice, &["create", "role", "secret-get", "--verb=get,list", "--resource=secrets", "-n", "team"]);
    assert_eq!(
        stderr(&out).trim(),
        "Error from server (Forbidden): roles.rbac.authorization.k8s.io \"secret-get\" is forbidden: user \"alice\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"list\"]}"
    );
    // Binding a role she holds is fine; binding cluster-admin is not, unless she may `bind` it.
    expect_success(&["create rolebinding"], server.kubectl_as(&alice, &["create", "rolebinding", "bob-cm", "--role=cm-get", "--user=bob", "-n", "team"]));
    let out = server.kubectl_as(&alice, &["create", "rolebinding", "bob-admin", "--clusterrole=cluster-admin", "--user=bob", "-n", "team"]);
    assert!(stderr(&out).contains("rolebindings.rbac.authorization.k8s.io \"bob-admin\" is forbidden: user \"alice\""), "{}", stderr(&out));
    server.kubectl_ok(&["create", "clusterrole", "bind-admin", "--verb=bind", "--resource=clusterroles.rbac.authorization.k8s.io", "--resource-name=cluster-admin"]);
    server.kubectl_ok(&["create", "rolebinding", "alice-binds", "--clusterrole=bind-admin", "--user=alice", "-n", "team"]);
    expect_success(&["bind cluster-admin"], server.kubectl_as(&alice, &["create", "rolebinding", "bob-admin", "--clusterrole=cluster-admin", "--user=bob", "-n", "team"]));
    // `escalate` lets her write a role with permissions she does not hold.
    server.kubectl_ok(&["create", "role", "escalator", "--verb=escalate", "--resource=roles.rbac.authorization.k8s.io", "-n", "team"]);
    server.kubectl_ok(&["create", "rolebinding", "alice-escalates", "--role=escalator", "--user=alice", "-n", "team"]);
    expect_success(&["escalate"], server.kubectl_as(&alice, &["create", "role", "secret-get", "--verb=get", "--resource=secrets", "-n", "team"]));

    // roleRef cannot change.
    let out = server.kubectl(&["patch", "rolebinding", "bob-cm", "-n", "team", "--type=merge", "-p", r#"{"roleRef":{"name":"secret-get"}}"#]);
    assert!(
        stderr(&out).contains(r#"roleRef: Invalid value: {"APIGroup":"rbac.authorization.k8s.io","Kind":"Role","Name":"secret-get"}: cannot change roleRef"#),
        "{}",
        stderr(&out)
    );
    // Malformed RBAC objects are refused at write.
    let bad = post("/apis/rbac.authorization.k8s.io/v1/namespaces/team/roles", json!({"metadata": {"name": "bad"}, "rules": [{"verbs": ["get"]}]}));
    let body = server.request(bad).await.expect_status(422, "Invalid");
    assert_eq!(body["details"]["causes"][0]["field"], "rules[0].apiGroups");
}

#[tokio::test]
async fn impersonation_needs_the_impersonate_verb() {
    let server = TestServer::start().await;
    let alice = server.kubeconfig_for("alice", &["staff"]);
    // (`kubectl get configmaps` would fail at discovery first and print only "Forbidden: unknown",
    // as it does against kube-apiserver; a raw get shows the server's message.)
    let out = server.kubectl_as(&alice, &["get", "--raw", "/api/v1/configmaps", "--as", "bob"]);
    assert!(stderr(&out).contains("users \"bob\" is forbidden: User \"alice\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"), "{}", stderr(&out));
    server.kubectl_ok(&["create", "clusterrole", "impersonate-bob", "--verb=impersonate", "--resource=users", "--resource-name=bob"]);
    server.kubectl_ok(&["create", "clusterrolebinding", "alice-as-bob", "--clusterrole=impersonate-bob", "--user=alice"]);
    server.kubectl_ok(&["create", "clusterrole", "cm-list", "--verb=list", "--resource=configmaps"]);
    server.kubectl_ok(&["create", "clusterrolebinding", "bob-cm", "--clusterrole=cm-list", "--user=bob"]);
    // As bob she may list configmaps (bob's permission, not hers) ...
    expect_success(&["get as bob"], server.kubectl_as(&alice, &["get", "configmaps", "--as", "bob"]));
    assert!(!server.kubectl_as(&alice, &["get", "configmaps"]).status.success());
    // ... but not impersonate anyone else, nor a group she was not granted.
    let out = server.kubectl_as(&alice, &["get", "--raw", "/api/v1/configmaps", "--as", "carol"]);
    assert!(stderr(&out).contains("users \"carol\" is forbidden"), "{}", stderr(&out));
    let out = server.kubectl_as(&alice, &["get", "--raw", "/api/v1/configmaps", "--as", "bob", "--as-group", "system:masters"]);
    assert!(stderr(&out).contains("groups \"system:masters\" is forbidden: User \"alice\" cannot impersonate resource \"groups\""), "{}", stderr(&out));
    // Who am I, as bob: the impersonated identity with system:authenticated added.
    let out = expect_success(&["whoami"], server.kubectl_as(&alice, &["auth", "whoami", "--as", "bob", "-o", "json"]));
    let review: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(review["status"]["userInfo"], json!({"username": "bob", "groups": ["system:authenticated"]}));
    // A group without a user is a bad request.
    let req = http::Request::get("/api/v1/configmaps").header("Impersonate-Group", "x").body(vec![]).unwrap();
    let body = server.request(req).await.expect_status(400, "BadRequest");
    assert_eq!(body["message"], "requested [{Group  x    }] without impersonating a user");
    // Service accounts by their user name, with their groups.
    let req = http::Request::post("/apis/authentication.k8s.io/v1/selfsubjectreviews")
        .header("Impersonate-User", "system:serviceaccount:ns1:robot")
        .header("content-type", "application/json")
        .body(br#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#.to_vec())
        .unwrap();
    let review = server.request(req).await.json();
    assert_eq!(
        review["status"]["userInfo"]["groups"],
        json!(["system:serviceaccounts", "system:serviceaccounts:ns1", "system:authenticated"])
    );
}

#[tokio::test]
async fn review_apis_answer_through_the_chain() {
    let server = TestServer::start().await;
    server.kubectl_ok(&["create", "namespace", "team"]);
    server.kubectl_ok(&["create", "role", "pod-get", "--verb=get", "--resource=pods", "-n", "team"]);
    server.kubectl_ok(&["create", "rolebinding", "devs-pods", "--role=pod-get", "--group=devs", "-n", "team"]);
    let sar = |user: &str, groups: Value, ns: &str| {
        post(
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                "spec": {"user": user, "groups": groups, "resourceAttributes": {"namespace": ns, "verb": "get", "resource": "pods", "name": "p"}}}),
        )
    };
    let reply = server.request(sar("dave", json!(["devs"]), "team")).await;
    assert_eq!(reply.status, 201, "{}", reply.text());
    let review = reply.json();
    assert_eq!(review["status"]["allowed"], true, "{review}");
    assert!(review["status"]["reason"].as_str().unwrap().contains("RoleBinding \"devs-pods/team\""), "{review}");
    let review = server.request(sar("dave", json!([]), "team")).await.json();
    assert_eq!(review["status"], json!({"allowed": false}));
    // A user and no groups, or neither: the review itself is invalid.
    let body = server.request(sar("", json!([]), "team")).await.expect_status(422, "Invalid");
    assert_eq!(body["message"], ".authorization.k8s.io \"\" is invalid: spec.user: Invalid value: \"\": at least one of user or group must be specified");
    // A local review must stay in its namespace.
    let local = |ns: &str| {
        post(
            "/apis/authorization.k8s.io/v1/namespaces/team/localsubjectaccessreviews",
            json!({"apiVersion": "authorization.k8s.io/v1", "kind": "LocalSubjectAccessReview",
                "spec": {"groups": ["devs"], "resourceAttributes": {"namespace": ns, "verb": "get", "resource": "pods"}}}),
        )
    };
    assert_eq!(server.request(local("team")).await.json()["status"]["allowed"], true);
    let body = server.request(local("other")).await.expect_status(422, "Invalid");
    assert_eq!(body["details"]["causes"][0]["field"], "spec.resourceAttributes.namespace");
    // Reviews are created, never read back.
    let reply = server.get("/apis/authorization.k8s.io/v1/subjectaccessreviews").await;
    reply.expect_status(405, "MethodNotAllowed");
    // They are in discovery.
    let resources = server.kubectl_ok(&["api-resources", "--api-group=authorization.k8s.io", "-o", "name"]);
    for r in ["localsubjectaccessreviews", "selfsubjectaccessreviews", "selfsubjectrulesreviews", "subjectaccessreviews"] {
        assert!(resources.contains(r), "{resources}");
    }
}

#[tokio::test]
async fn auth_reconcile_applies_roles() {
    let server = TestServer::start().await;
    server.kubectl_ok(&["create", "namespace", "team"]);
    let manifest = server.dir().join("rbac.yaml");
    std::fs::write(
        &manifest,
        r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader, namespace: team}
rules:
- {apiGroups: [""], resources: [configmaps], verbs: [get, list]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: reader, namespace: team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: erin}
"#,
    )
    .unwrap();
    let out = server.kubectl_ok(&["auth", "reconcile", "-f", manifest.to_str().unwrap()]);
    assert!(out.contains("role.rbac.authorization.k8s.io/reader reconciled"), "{out}");
    assert_eq!(can_i(&server, &["list", "configmaps", "-n", "team", "--as", "erin"]), "yes");
    // Reconciling again adds nothing.
    server.kubectl_ok(&["auth", "reconcile", "-f", manifest.to_str().unwrap()]);
}

#[tokio::test]
async fn aggregated_cluster_roles_follow_their_selectors() {
    let server = TestServer::start().await;
    let apply = |doc: Value| {
        let path = server.dir().join("doc.json");
        std::fs::write(&path, doc.to_string()).unwrap();
        server.kubectl_ok(&["apply", "-f", path.to_str().unwrap()]);
    };
    apply(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "monitoring"},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"example.com/aggregate-to-monitoring": "true"}}]}}));
    apply(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "pod-reader", "labels": {"example.com/aggregate-to-monitoring": "true"}},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}));
    let rules = || server.kubectl_ok(&["get", "clusterrole", "monitoring", "-o", "jsonpath={.rules}"]);
    let wait = |want: &str| {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let now = rules();
            if now.contains(want) || (want.is_empty() && !now.contains("pods")) {
                return;
            }
            assert!(Instant::now() < deadline, "monitoring's rules stayed {now}");
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    wait("pods");
    server.kubectl_ok(&["create", "clusterrolebinding", "frank-monitors", "--clusterrole=monitoring", "--user=frank"]);
    assert_eq!(can_i(&server, &["get", "pods", "-A", "--as", "frank"]), "yes");
    server.kubectl_ok(&["delete", "clusterrole", "pod-reader"]);
    wait("");
    assert_eq!(can_i(&server, &["get", "pods", "-A", "--as", "frank"]), "no");
}

#[tokio::test]
async fn always_allow_and_always_deny_modes() {
    let allow = TestServer::start_with(&["--authorization-mode", "AlwaysAllow"]).await;
    let anyone = allow.impersonating_client("nobody", &[]).await;
    assert_eq!(send(&anyone, http::Request::get("/api/v1/namespaces").body(vec![]).unwrap()).await.status, 200);
    // As in kube-apiserver, anonymous access is off under AlwaysAllow.
    let anon = allow.anonymous_client().await;
    send(&anon, http::Request::get("/api/v1/namespaces").body(vec![]).unwrap()).await.expect_status(401, "Unauthorized");
    let deny = TestServer::start_with(&["--authorization-mode", "AlwaysDeny"]).await;
    let anon = deny.anonymous_client().await;
    let body = send(&anon, http::Request::get("/healthz").body(vec![]).unwrap()).await.expect_status(403, "Forbidden");
    assert_eq!(body["message"], "forbidden: User \"system:anonymous\" cannot get path \"/healthz\": Everything is forbidden.");
    // system:masters is allowed before any authorizer is asked.
    assert_eq!(deny.get("/api/v1/namespaces").await.status, 200);
    let mut bad = TestServer::new(&["--authorization-mode", "RBAC,Bogus"]);
    bad.launch();
    let err = bad.wait_ready().await.unwrap_err();
    assert!(err.contains("authorization-mode \"Bogus\" is not a valid mode"), "{err}");
}
