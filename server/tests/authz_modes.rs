//! The other authorization modes against the real binary: ABAC from a policy file, a Webhook
//! authorizer backed by a real HTTPS webhook started here (caching, timeouts, failure
//! policies, match conditions), an `AuthorizationConfiguration` file reloaded while the server
//! runs, and the startup errors for bad or conflicting flags.

use crate::common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::webhook_server::{review, WebhookServer};
use common::{send, TestServer};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams};
use serde_json::Value;

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn user_of(review: &Value) -> &str {
    review["spec"]["user"].as_str().unwrap_or_default()
}

async fn start_failing(args: &[&str]) -> String {
    let mut server = TestServer::new(args);
    server.launch();
    server.wait_ready().await.expect_err("the server should refuse to start")
}

#[tokio::test(flavor = "multi_thread")]
async fn abac_policy_file_decides() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.jsonl");
    std::fs::write(
        &policy,
        concat!(
            "# alice reads pods in projectcaribou and asks what she may do; everyone authenticated\n",
            "# reads every non-resource path (discovery, /version)\n",
            r#"{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy", "spec": {"user": "alice", "namespace": "projectcaribou", "resource": "pods", "apiGroup": "", "readonly": true}}"#,
            "\n",
            r#"{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy", "spec": {"user": "alice", "namespace": "*", "resource": "selfsubjectaccessreviews", "apiGroup": "authorization.k8s.io"}}"#,
            "\n",
            r#"{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy", "spec": {"group": "system:authenticated", "readonly": true, "nonResourcePath": "*"}}"#,
            "\n",
        ),
    )
    .unwrap();
    let server = TestServer::start_with(&["--authorization-mode", "ABAC", "--authorization-policy-file", policy.to_str().unwrap()]).await;
    server.kubectl_ok(&["create", "namespace", "projectcaribou"]);
    let alice = server.kubeconfig_for("alice", &[]);
    let out = server.kubectl_as(&alice, &["get", "pods", "-n", "projectcaribou"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = server.kubectl_as(&alice, &["get", "pods", "-n", "default"]);
    assert!(
        stderr(&out).contains("pods is forbidden: User \"alice\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\": No policy matched."),
        "{}",
        stderr(&out)
    );
    let out = server.kubectl_as(&alice, &["auth", "can-i", "create", "pods", "-n", "projectcaribou"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "no - No policy matched.", "{}", stderr(&out));
    let out = server.kubectl_as(&alice, &["auth", "can-i", "watch", "pods", "-n", "projectcaribou"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "yes", "{}", stderr(&out));
    let out = server.kubectl_as(&alice, &["get", "--raw", "/version"]);
    assert!(out.status.success(), "{}", stderr(&out));

    // A policy file that does not parse stops the server, naming the line.
    std::fs::write(&policy, "{\"user\": \"a\"}\n{oops\n").unwrap();
    let err = start_failing(&["--authorization-mode", "ABAC", "--authorization-policy-file", policy.to_str().unwrap()]).await;
    assert!(err.contains(", line 2: {oops"), "{err}");
    let err = start_failing(&["--authorization-mode", "ABAC"]).await;
    assert!(err.contains("authorization-mode ABAC's authorization policy file not passed"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn webhook_mode_asks_a_real_webhook_and_caches_its_answers() {
    let webhook = WebhookServer::start(Arc::new(|r: &Value| {
        let answer = match user_of(r) {
            "alice" => review(true, false, "alice may"),
            "mallory" => review(false, true, "mallory is banned"),
            _ => review(false, false, ""),
        };
        (Duration::ZERO, 200, answer)
    }))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("webhook.kubeconfig");
    webhook.write_kubeconfig(&kubeconfig);
    let server = TestServer::start_with(&[
        "--authorization-mode",
        "Webhook,RBAC",
        "--authorization-webhook-config-file",
        kubeconfig.to_str().unwrap(),
        "--authorization-webhook-cache-unauthorized-ttl",
        "1s",
    ])
    .await;

    // kube-rs as alice (impersonated by the admin): the webhook allows.
    let alice = server.impersonating_client("alice", &[]).await;
    let configmaps: Api<ConfigMap> = Api::namespaced(alice, "default");
    configmaps.list(&ListParams::default()).await.expect("the webhook allows alice");
    // The server's controllers are asked about too (as their own users): look at alice's.
    let asked_about = |user: &str| webhook.received().into_iter().filter(|r| user_of(r) == user).collect::<Vec<_>>();
    let reviews = asked_about("alice");
    let last = reviews.last().expect("the webhook was asked");
    // v1beta1 unless --authorization-webhook-version says otherwise; groups are `group` there.
    assert_eq!(last["apiVersion"], "authorization.k8s.io/v1beta1");
    assert_eq!(last["kind"], "SubjectAccessReview");
    assert_eq!(last["spec"]["resourceAttributes"]["verb"], "list");
    assert_eq!(last["spec"]["resourceAttributes"]["resource"], "configmaps");
    assert_eq!(last["spec"]["resourceAttributes"]["namespace"], "default");
    assert_eq!(last["spec"]["group"], serde_json::json!(["system:authenticated"]));

    // The same question again is answered from the cache (allowed answers live 5 minutes).
    let asked = asked_about("alice").len();
    configmaps.list(&ListParams::default()).await.unwrap();
    assert_eq!(asked_about("alice").len(), asked);

    // A denial from the webhook is a 403 with its reason; RBAC is not asked after a deny.
    server.kubectl_ok(&["create", "clusterrolebinding", "mallory-admin", "--clusterrole=cluster-admin", "--user=mallory"]);
    let mallory = server.impersonating_client("mallory", &[]).await;
    let reply = send(&mallory, http::Request::get("/api/v1/namespaces/default/configmaps").body(vec![]).unwrap()).await;
    let body = reply.expect_status(403, "Forbidden");
    assert_eq!(
        body["message"],
        "configmaps is forbidden: User \"mallory\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\": mallory is banned"
    );

    // No opinion from the webhook: RBAC decides, and kubectl auth can-i says so.
    let bob = server.kubeconfig_for("bob", &[]);
    let out = server.kubectl_as(&bob, &["auth", "can-i", "list", "configmaps"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "no");
    // The webhook's refusals are cached for 1 s here: asked again at once, it is not called...
    let asked = asked_about("bob").len();
    let out = server.kubectl_as(&bob, &["auth", "can-i", "list", "configmaps"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "no");
    assert_eq!(asked_about("bob").len(), asked);
    // ... and once they have expired, it is.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    server.kubectl_ok(&["create", "rolebinding", "bob-view", "--clusterrole=view", "--user=bob", "-n", "default"]);
    let out = server.kubectl_as(&bob, &["auth", "can-i", "list", "configmaps"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "yes");
    assert!(asked_about("bob").len() > asked);
    // A webhook cannot list rules: the rules review says it is incomplete.
    let out = server.kubectl_as(&bob, &["auth", "can-i", "--list", "-n", "default"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("configmaps"), "{}", String::from_utf8_lossy(&out.stdout));

    let metrics = server.kubectl_ok(&["get", "--raw", "/metrics"]);
    assert!(metrics.contains(r#"apiserver_authorization_decisions_total{decision="allowed",name="webhook",type="Webhook"}"#), "{metrics}");
    assert!(metrics.contains(r#"apiserver_authorization_webhook_evaluations_total{name="webhook",result="success"}"#), "{metrics}");
}

/// An AuthorizationConfiguration with two webhooks that never answer in time: one whose
/// failure policy is NoOpinion (RBAC decides next) and one whose policy is Deny.
fn slow_webhooks_config(kubeconfig: &Path) -> String {
    let k = kubeconfig.display();
    format!(
        r#"apiVersion: apiserver.config.k8s.io/v1
kind: AuthorizationConfiguration
authorizers:
- type: Webhook
  name: lenient.example.com
  webhook:
    timeout: 1s
    failurePolicy: NoOpinion
    subjectAccessReviewVersion: v1
    matchConditionSubjectAccessReviewVersion: v1
    connectionInfo: {{type: KubeConfigFile, kubeConfigFile: {k}}}
    matchConditions:
    - expression: request.user == 'carol'
- type: Webhook
  name: strict.example.com
  webhook:
    timeout: 1s
    failurePolicy: Deny
    subjectAccessReviewVersion: v1
    matchConditionSubjectAccessReviewVersion: v1
    connectionInfo: {{type: KubeConfigFile, kubeConfigFile: {k}}}
    matchConditions:
    - expression: request.user == 'dave'
    - expression: has(request.resourceAttributes)
- type: Node
  name: node
- type: RBAC
  name: rbac
"#
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn webhook_timeouts_follow_the_failure_policy_and_stall_nobody_else() {
    let webhook = WebhookServer::start(Arc::new(|_: &Value| (Duration::from_secs(10), 200, review(true, false, "")))).await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("webhook.kubeconfig");
    webhook.write_kubeconfig(&kubeconfig);
    let config = dir.path().join("authz.yaml");
    std::fs::write(&config, slow_webhooks_config(&kubeconfig)).unwrap();
    let server = TestServer::start_with(&["--authorization-config", config.to_str().unwrap()]).await;
    for user in ["carol", "dave", "erin"] {
        server.kubectl_ok(&["create", "rolebinding", &format!("{user}-view"), "--clusterrole=view", &format!("--user={user}"), "-n", "default"]);
    }
    let list = |user: &'static str| {
        let server = &server;
        async move {
            let client = server.impersonating_client(user, &[]).await;
            send(&client, http::Request::get("/api/v1/namespaces/default/configmaps").body(vec![]).unwrap()).await
        }
    };

    // carol: the lenient webhook times out (1 s), has no opinion, and RBAC allows.
    let started = Instant::now();
    let (carol, admin) = tokio::join!(list("carol"), async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let t = Instant::now();
        let reply = server.get("/api/v1/namespaces").await;
        (reply.status, t.elapsed())
    });
    assert_eq!(carol.status, 200, "{}", carol.text());
    let took = started.elapsed();
    assert!(took >= Duration::from_secs(1) && took < Duration::from_secs(5), "{took:?}");
    // Meanwhile the admin was answered at once: a hanging webhook stalls no one else.
    assert_eq!(admin.0, 200);
    assert!(admin.1 < Duration::from_millis(800), "{:?}", admin.1);

    // carol outside what RBAC grants: nobody allows and the webhook failed, so 500.
    let client = server.impersonating_client("carol", &[]).await;
    let reply = send(&client, http::Request::get("/api/v1/namespaces/default/secrets").body(vec![]).unwrap()).await;
    let body = reply.expect_status(500, "InternalError");
    assert!(body["message"].as_str().unwrap().contains("lenient.example.com"), "{body}");

    // dave: the strict webhook fails closed, whatever RBAC would say.
    let dave = list("dave").await;
    dave.expect_status(500, "InternalError");

    // erin matches neither webhook's conditions: they are not asked, RBAC allows at once.
    let asked = webhook.received().len();
    let started = Instant::now();
    assert_eq!(list("erin").await.status, 200);
    assert!(started.elapsed() < Duration::from_millis(900));
    assert_eq!(webhook.received().len(), asked);
    // dave's non-resource requests fail the second condition: not asked either.
    let client = server.impersonating_client("dave", &[]).await;
    assert_eq!(send(&client, http::Request::get("/version").body(vec![]).unwrap()).await.status, 200);
    assert_eq!(webhook.received().len(), asked);

    let metrics = server.kubectl_ok(&["get", "--raw", "/metrics"]);
    assert!(metrics.contains(r#"apiserver_authorization_webhook_evaluations_total{name="lenient.example.com",result="timeout"}"#), "{metrics}");
    assert!(metrics.contains(r#"apiserver_authorization_webhook_evaluations_fail_open_total{name="lenient.example.com",result="timeout"}"#), "{metrics}");
}

fn allow_config(kubeconfig: &Path, user: &str, extra_authorizers: &str) -> String {
    format!(
        r#"apiVersion: apiserver.config.k8s.io/v1
kind: AuthorizationConfiguration
authorizers:
- type: Webhook
  name: allow.example.com
  webhook:
    timeout: 2s
    failurePolicy: NoOpinion
    subjectAccessReviewVersion: v1
    matchConditionSubjectAccessReviewVersion: v1
    connectionInfo: {{type: KubeConfigFile, kubeConfigFile: {}}}
    matchConditions:
    - expression: request.user == '{user}'
{extra_authorizers}"#,
        kubeconfig.display()
    )
}

async fn status_as(server: &TestServer, user: &str) -> u16 {
    let client = server.impersonating_client(user, &[]).await;
    send(&client, http::Request::get("/api/v1/namespaces/default/configmaps").body(vec![]).unwrap()).await.status
}

async fn wait_for_status(server: &TestServer, user: &str, want: u16) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got = status_as(server, user).await;
        if got == want {
            return;
        }
        assert!(Instant::now() < deadline, "{user}: still {got}, want {want}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_configuration_file_is_reloaded_when_it_changes() {
    let webhook = WebhookServer::start(Arc::new(|_: &Value| (Duration::ZERO, 200, review(true, false, "")))).await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("webhook.kubeconfig");
    webhook.write_kubeconfig(&kubeconfig);
    let config = dir.path().join("authz.yaml");
    let rbac = "- type: RBAC\n  name: rbac\n";
    std::fs::write(&config, allow_config(&kubeconfig, "frank", rbac)).unwrap();
    let server = TestServer::start_with(&["--authorization-config", config.to_str().unwrap()]).await;
    assert_eq!(status_as(&server, "frank").await, 200);
    assert_eq!(status_as(&server, "grace").await, 403);

    // The webhook now answers for grace instead.
    std::fs::write(&config, allow_config(&kubeconfig, "grace", rbac)).unwrap();
    wait_for_status(&server, "grace", 200).await;
    assert_eq!(status_as(&server, "frank").await, 403);
    let reloads = |status: &str| {
        let metrics = server.kubectl_ok(&["get", "--raw", "/metrics"]);
        metrics
            .lines()
            .find(|l| l.starts_with("apiserver_authorization_config_controller_automatic_reloads_total{apiserver_id_hash=\"sha256:") && l.contains(&format!("status=\"{status}\"")))
            .and_then(|l| l.rsplit(' ').next())
            .map(str::to_string)
    };
    assert_eq!(reloads("success").as_deref(), Some("1"));
    assert!(server.kubectl_ok(&["get", "--raw", "/metrics"]).contains("apiserver_authorization_config_controller_automatic_reload_last_timestamp_seconds{"));

    // Dropping RBAC (a non-webhook authorizer) is refused; so is a file that does not parse.
    // The configuration in place stays: grace is still allowed.
    std::fs::write(&config, allow_config(&kubeconfig, "frank", "")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while reloads("failure").as_deref() != Some("1") {
        assert!(Instant::now() < deadline, "the refused reload was not counted");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(server.log().contains("the non-webhook authorizers may not change on reload"), "{}", server.log());
    std::fs::write(&config, "authorizers: [").unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while reloads("failure").as_deref() != Some("2") {
        assert!(Instant::now() < deadline, "the unparsable file was not counted");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(status_as(&server, "grace").await, 200);
    assert_eq!(status_as(&server, "frank").await, 403);
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_or_conflicting_configuration_stops_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("authz.yaml");
    std::fs::write(&config, "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\nauthorizers:\n- type: RBAC\n  name: rbac\n").unwrap();
    let path = config.to_str().unwrap();
    let err = start_failing(&["--authorization-config", path, "--authorization-mode", "RBAC"]).await;
    assert!(err.contains("--authorization-config can not be specified when --authorization-mode or --authorization-webhook-* flags are defined"), "{err}");
    let err = start_failing(&["--authorization-config", path, "--authorization-webhook-version", "v1"]).await;
    assert!(err.contains("--authorization-config can not be specified"), "{err}");
    std::fs::write(&config, "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\nauthorizers:\n- type: Webhook\n  name: w\n  webhook:\n    timeout: 90s\n").unwrap();
    let err = start_failing(&["--authorization-config", path]).await;
    assert!(err.contains("authorizers[0].timeout: Invalid value: \"90s\": must be > 0s and <= 30s"), "{err}");
    assert!(err.contains("authorizers[0].failurePolicy: Required value"), "{err}");
    let err = start_failing(&["--authorization-config", dir.path().join("missing.yaml").to_str().unwrap()]).await;
    assert!(err.contains("missing.yaml"), "{err}");
}
