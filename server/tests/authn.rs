//! Authentication against the real binary: static bearer tokens with kubectl (`auth whoami`),
//! a token no method accepts, anonymous access on and off, TokenReview, and a malformed token
//! file stopping the server.

mod common;

use std::path::{Path, PathBuf};

use common::TestServer;
use serde_json::json;

/// The admin kubeconfig with its client certificate replaced by a bearer token.
fn token_kubeconfig(s: &TestServer, token: &str, out: &Path) -> PathBuf {
    let mut config: serde_yaml::Value = serde_yaml::from_str(&std::fs::read_to_string(s.kubeconfig_path()).unwrap()).unwrap();
    config["users"][0]["user"] = serde_yaml::from_str(&format!("token: {token}")).unwrap();
    std::fs::write(out, serde_yaml::to_string(&config).unwrap()).unwrap();
    out.to_path_buf()
}

fn token_file(dir: &Path) -> PathBuf {
    let path = dir.join("tokens.csv");
    std::fs::write(&path, "s3cret-alice,alice,uid-alice,\"dev,ops\"\ns3cret-bob,bob,uid-bob\n").unwrap();
    path
}

#[tokio::test(flavor = "multi_thread")]
async fn static_tokens_identify_their_users() {
    let files = tempfile::tempdir().unwrap();
    let tokens = token_file(files.path());
    let s = TestServer::start_with(&["--token-auth-file", tokens.to_str().unwrap()]).await;

    let alice = token_kubeconfig(&s, "s3cret-alice", &files.path().join("alice.kubeconfig"));
    let out = s.kubectl_as(&alice, &["auth", "whoami"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("alice") && text.contains("uid-alice") && text.contains("[dev ops system:authenticated]"), "{text}");
    // Authenticated is not authorized: RBAC decides what alice may do.
    let out = s.kubectl_as(&alice, &["get", "secrets"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("User \"alice\" cannot list resource \"secrets\""), "{err}");

    // A token no method knows is 401, although anonymous access is on.
    let stranger = token_kubeconfig(&s, "not-a-token", &files.path().join("stranger.kubeconfig"));
    let out = s.kubectl_as(&stranger, &["auth", "whoami"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("Unauthorized"), "{err}");
    let anonymous = s.anonymous_client().await;
    let version = common::send(&anonymous, http::Request::get("/version").body(vec![]).unwrap()).await;
    assert_eq!(version.status, 200);

    // TokenReview answers for a token, without acting as it.
    let review = |token: &str| {
        let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}});
        http::Request::post("/apis/authentication.k8s.io/v1/tokenreviews").header("content-type", "application/json").body(body.to_string().into_bytes()).unwrap()
    };
    let answer = s.request(review("s3cret-bob")).await;
    assert_eq!(answer.status, 201, "{}", answer.text());
    let status = &answer.json()["status"];
    assert_eq!(status["authenticated"], true);
    assert_eq!(status["user"], json!({"username": "bob", "uid": "uid-bob", "groups": ["system:authenticated"]}));
    let answer = s.request(review("wrong")).await.json();
    assert!(answer["status"]["authenticated"].is_null(), "{answer}");
    s.request(review("")).await.expect_status(400, "BadRequest");
    // Bob may not ask: creating token reviews needs its own permission.
    let bob = s.client_for(&token_kubeconfig(&s, "s3cret-bob", &files.path().join("bob.kubeconfig"))).await;
    common::send(&bob, review("s3cret-alice")).await.expect_status(403, "Forbidden");
}

#[tokio::test(flavor = "multi_thread")]
async fn anonymous_access_can_be_turned_off() {
    let s = TestServer::start_with(&["--anonymous-auth=false"]).await;
    let anonymous = s.anonymous_client().await;
    let reply = common::send(&anonymous, http::Request::get("/version").body(vec![]).unwrap()).await;
    reply.expect_status(401, "Unauthorized");
    // The admin's certificate still works.
    assert_eq!(s.get("/version").await.status, 200);
}

#[test]
fn a_malformed_token_file_stops_the_server_naming_the_line() {
    let files = tempfile::tempdir().unwrap();
    let path = files.path().join("tokens.csv");
    std::fs::write(&path, "good,alice,1\nbad,bob\n").unwrap();
    let mut s = TestServer::new(&["--token-auth-file", path.to_str().unwrap()]);
    let err = tokio::runtime::Runtime::new().unwrap().block_on(async {
        s.launch();
        s.wait_ready().await.unwrap_err()
    });
    assert!(err.contains("line 2: must have at least 3 columns (token, user name, user uid), found 2"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_webhook_vouches_for_tokens_and_is_cached() {
    use common::webhook_server::WebhookServer;
    use std::sync::Arc;
    use std::time::Duration;
    let webhook = WebhookServer::start(Arc::new(|review: &serde_json::Value| {
        let answer = match review["spec"]["token"].as_str() {
            Some("carol-token") => json!({"authenticated": true, "user": {"username": "carol", "uid": "c-1", "groups": ["ops"], "extra": {"team": ["blue"]}}}),
            _ => json!({"authenticated": false, "error": "unknown token"}),
        };
        (Duration::ZERO, 200, json!({"apiVersion": review["apiVersion"], "kind": "TokenReview", "status": answer}))
    }))
    .await;
    let files = tempfile::tempdir().unwrap();
    let config = files.path().join("webhook.kubeconfig");
    webhook.write_kubeconfig(&config);
    let s = TestServer::start_with(&["--authentication-token-webhook-config-file", config.to_str().unwrap(), "--authentication-token-webhook-version", "v1"]).await;

    let carol = token_kubeconfig(&s, "carol-token", &files.path().join("carol.kubeconfig"));
    let out = s.kubectl_as(&carol, &["auth", "whoami", "-o", "json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let who: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let info = &who["status"]["userInfo"];
    assert_eq!((info["username"].as_str(), info["uid"].as_str()), (Some("carol"), Some("c-1")));
    assert_eq!(info["groups"], json!(["ops", "system:authenticated"]));
    assert_eq!(info["extra"]["team"], json!(["blue"]));
    let sent = webhook.received();
    assert_eq!(sent[0]["apiVersion"], "authentication.k8s.io/v1");
    assert_eq!(sent[0]["spec"]["audiences"], json!(["https://kubernetes.default.svc.cluster.local"]));
    // Asked again, the answer comes from the cache.
    assert!(s.kubectl_as(&carol, &["auth", "whoami"]).status.success());
    assert_eq!(webhook.received().len(), 1, "the webhook was asked again");

    let mallory = token_kubeconfig(&s, "guess", &files.path().join("mallory.kubeconfig"));
    let out = s.kubectl_as(&mallory, &["auth", "whoami"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("Unauthorized"), "{}", String::from_utf8_lossy(&out.stderr));
    // TokenReview relays the webhook's reason.
    let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": "guess"}});
    let review = s.request(http::Request::post("/apis/authentication.k8s.io/v1/tokenreviews").header("content-type", "application/json").body(body.to_string().into_bytes()).unwrap()).await.json();
    assert!(review["status"]["error"].as_str().unwrap().contains("unknown token"), "{review}");
    // An answer in another TokenReview version than the one sent is no answer.
    webhook.answer_with(Arc::new(|_: &serde_json::Value| {
        let status = json!({"authenticated": true, "user": {"username": "dave"}});
        (Duration::ZERO, 200, json!({"apiVersion": "authentication.k8s.io/v1beta1", "kind": "TokenReview", "status": status}))
    }));
    let dave = token_kubeconfig(&s, "dave-token", &files.path().join("dave.kubeconfig"));
    let out = s.kubectl_as(&dave, &["auth", "whoami"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("Unauthorized"), "{}", String::from_utf8_lossy(&out.stderr));
}
