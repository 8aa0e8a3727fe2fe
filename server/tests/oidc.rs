//! JWT / OIDC authentication against the real binary, with a real issuer the test runs over
//! HTTPS (discovery, key set, ES256 keys it rotates): an `AuthenticationConfiguration` file with
//! claim rules, CEL mappings and user rules, seen through `kubectl auth whoami`; every kind of
//! bad token refused with 401; keys rotating without a restart and without a call to the issuer
//! per request; the file reloaded when it changes (and an invalid one refused); anonymous access
//! limited to the listed paths; the `--oidc-*` flags; the conflicts that stop the server.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use common::oidc_issuer::{OidcIssuer, SigningKey};
use common::TestServer;
use serde_json::{json, Value};

/// The configuration file the first test starts with (JSON is YAML).
fn configuration(issuer: &OidcIssuer, username: Value) -> Value {
    json!({
        "apiVersion": "apiserver.config.k8s.io/v1",
        "kind": "AuthenticationConfiguration",
        "jwt": [{
            "issuer": {"url": issuer.url, "certificateAuthority": issuer.ca_pem, "audiences": ["kube"]},
            "claimValidationRules": [
                {"claim": "hd", "requiredValue": "example.com"},
                {"expression": "claims.exp - claims.iat <= 86400", "message": "tokens may live a day at most"},
            ],
            "claimMappings": {
                "username": username,
                "groups": {"claim": "groups", "prefix": "oidc:"},
                "uid": {"expression": "'uid-' + claims.sub"},
                "extra": [{"key": "example.com/tenant", "valueExpression": "claims.tenant"}],
            },
            "userValidationRules": [{"expression": "!user.username.startsWith('system:')", "message": "the system's names are not for tokens"}],
        }],
        "anonymous": {"enabled": true, "conditions": [{"path": "/livez"}]},
    })
}

/// `kubectl auth whoami` with `kubeconfig`: the user info, or kubectl's error.
fn whoami(s: &TestServer, kubeconfig: &Path) -> Result<Value, String> {
    let out = s.kubectl_as(kubeconfig, &["auth", "whoami", "-o", "json"]);
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let review: Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
    Ok(review["status"]["userInfo"].clone())
}

/// Retries [`whoami`] until `accept` holds (discovery and reloads happen in the background).
async fn whoami_until(s: &TestServer, kubeconfig: &Path, accept: impl Fn(&Result<Value, String>) -> bool) -> Result<Value, String> {
    let started = Instant::now();
    loop {
        let got = whoami(s, kubeconfig);
        if accept(&got) || started.elapsed() > Duration::from_secs(30) {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The status of a GET of `/api` with `token`.
async fn status_with(s: &TestServer, name: &str, token: &str) -> u16 {
    let client = s.client_for(&s.token_kubeconfig(name, token)).await;
    let reply = common::send(&client, http::Request::get("/api").body(vec![]).unwrap()).await;
    if reply.status == 401 {
        assert_eq!(reply.json()["reason"], "Unauthorized", "{}", reply.text());
    }
    reply.status
}

fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

#[tokio::test(flavor = "multi_thread")]
async fn oidc_tokens_from_an_authentication_configuration() {
    let issuer = OidcIssuer::start().await;
    let files = tempfile::tempdir().unwrap();
    let config = files.path().join("authn.yaml");
    std::fs::write(&config, configuration(&issuer, json!({"expression": "claims.sub"})).to_string()).unwrap();
    let s = TestServer::start_with(&["--authentication-config", config.to_str().unwrap()]).await;

    // A good token: who it is comes from the claims, through the mappings.
    let good = issuer.token("alice", "kube", json!({"groups": ["dev"], "hd": "example.com", "tenant": "t1"}));
    let alice = s.token_kubeconfig("alice", &good);
    let info = whoami_until(&s, &alice, Result::is_ok).await.unwrap();
    assert_eq!(info["username"], "alice");
    assert_eq!(info["uid"], "uid-alice");
    assert_eq!(info["groups"], json!(["oidc:dev", "system:authenticated"]));
    assert_eq!(info["extra"]["example.com/tenant"], json!(["t1"]));
    // Authenticated, not authorized: RBAC decides.
    let out = s.kubectl_as(&alice, &["get", "secrets"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("User \"alice\" cannot list resource \"secrets\""));

    // TokenReview says the same.
    let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": good}});
    let review = s.request(http::Request::post("/apis/authentication.k8s.io/v1/tokenreviews").header("content-type", "application/json").body(body.to_string().into_bytes()).unwrap()).await.json();
    assert_eq!(review["status"]["authenticated"], true, "{review}");
    assert_eq!(review["status"]["user"]["username"], "alice");

    // Every kind of bad token is 401, never a crash.
    let hd = json!({"hd": "example.com", "tenant": "t"});
    let mut expired = issuer.claims("bob", "kube");
    expired["exp"] = json!(now() - 10);
    expired["hd"] = json!("example.com");
    let mut early = issuer.claims("bob", "kube");
    early["nbf"] = json!(now() + 3600);
    early["hd"] = json!("example.com");
    let mut long_lived = issuer.claims("bob", "kube");
    long_lived["exp"] = json!(now() + 3 * 86400);
    long_lived["hd"] = json!("example.com");
    let payload = URL_SAFE_NO_PAD.encode(issuer.claims("bob", "kube").to_string());
    let none = format!("{}.{payload}.", URL_SAFE_NO_PAD.encode(r#"{"alg":"none","typ":"JWT"}"#));
    let hmac = {
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
        header.kid = Some("key-1".into());
        jsonwebtoken::encode(&header, &issuer.claims("bob", "kube"), &jsonwebtoken::EncodingKey::from_secret(issuer.ca_pem.as_bytes())).unwrap()
    };
    let current = issuer.current_key();
    let impostor = SigningKey::generate(&current.kid);
    let cases = [
        ("wrong-audience", issuer.token("bob", "someone-else", hd.clone())),
        ("expired", current.sign(&expired)),
        ("not-yet-valid", current.sign(&early)),
        ("too-long", current.sign(&long_lived)),
        ("wrong-domain", issuer.token("bob", "kube", json!({"hd": "evil.com", "tenant": "t"}))),
        ("system-name", issuer.token("system:admin", "kube", hd.clone())),
        ("impostor-key", impostor.sign(&json!({"iss": issuer.url, "sub": "bob", "aud": "kube", "exp": now() + 60, "iat": now(), "hd": "example.com"}))),
        ("alg-none", none),
        ("hmac", hmac),
        ("truncated", good[..good.len() - 10].to_string()),
        ("oversized", format!("{}{}", good, "A".repeat(64 * 1024))),
    ];
    for (name, token) in &cases {
        assert_eq!(status_with(&s, name, token).await, 401, "{name} was accepted");
    }

    // Keys rotate without a restart: a token of the new key makes the server fetch the set again.
    let old = issuer.rotate("key-2");
    let bob = s.token_kubeconfig("bob", &issuer.token("bob", "kube", hd.clone()));
    let info = whoami_until(&s, &bob, Result::is_ok).await.unwrap();
    assert_eq!(info["username"], "bob");
    // The old key is gone from the set, so a fresh token of it no longer verifies.
    let stale = old.sign(&json!({"iss": issuer.url, "sub": "carol", "aud": "kube", "exp": now() + 60, "iat": now(), "hd": "example.com"}));
    assert_eq!(status_with(&s, "stale", &stale).await, 401);
    // Unknown keys do not make every request call the issuer.
    let before = issuer.key_fetches();
    for i in 0..20 {
        let stranger = SigningKey::generate(&format!("unknown-{i}"));
        let token = stranger.sign(&json!({"iss": issuer.url, "sub": "x", "aud": "kube", "exp": now() + 60, "iat": now()}));
        assert_eq!(status_with(&s, "unknown", &token).await, 401);
    }
    assert!(issuer.key_fetches() - before <= 3, "{} fetches for 20 requests", issuer.key_fetches() - before);

    // Anonymous requests only where the conditions allow them.
    let anonymous = s.anonymous_client().await;
    assert_eq!(common::send(&anonymous, http::Request::get("/livez").body(vec![]).unwrap()).await.status, 200);
    common::send(&anonymous, http::Request::get("/version").body(vec![]).unwrap()).await.expect_status(401, "Unauthorized");

    // The file is reloaded when it changes.
    std::fs::write(&config, configuration(&issuer, json!({"claim": "sub", "prefix": "oidc:"})).to_string()).unwrap();
    let info = whoami_until(&s, &bob, |r| r.as_ref().is_ok_and(|i| i["username"] == "oidc:bob")).await.unwrap();
    assert_eq!(info["username"], "oidc:bob");
    // An invalid file is refused and the configuration in place stays.
    let mut broken = configuration(&issuer, json!({"claim": "sub", "prefix": "oidc:"}));
    broken["jwt"][0]["issuer"]["audiences"] = json!([]);
    std::fs::write(&config, broken.to_string()).unwrap();
    let started = Instant::now();
    while !s.log().contains("refused to reload the authentication configuration") {
        assert!(started.elapsed() < Duration::from_secs(70), "the invalid file was not noticed");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(s.log().contains("jwt[0].issuer.audiences: Required value"), "the log should say why");
    let carol = s.token_kubeconfig("carol", &issuer.token("carol", "kube", hd));
    assert_eq!(whoami(&s, &carol).unwrap()["username"], "oidc:carol");
    // Tokens are never logged.
    assert!(!s.log().contains(&good[good.len() - 20..]), "a token reached the log");
}

#[tokio::test(flavor = "multi_thread")]
async fn oidc_flags_configure_one_issuer() {
    let issuer = OidcIssuer::start().await;
    let files = tempfile::tempdir().unwrap();
    let ca = files.path().join("oidc-ca.crt");
    std::fs::write(&ca, &issuer.ca_pem).unwrap();
    let s = TestServer::start_with(&[
        "--oidc-issuer-url",
        &issuer.url,
        "--oidc-client-id",
        "kube",
        "--oidc-ca-file",
        ca.to_str().unwrap(),
        "--oidc-signing-algs",
        "ES256",
        "--oidc-groups-claim",
        "groups",
        "--oidc-groups-prefix",
        "oidc:",
        "--oidc-required-claim",
        "hd=example.com",
    ])
    .await;
    let token = issuer.token("alice", "kube", json!({"groups": "dev", "hd": "example.com"}));
    let info = whoami_until(&s, &s.token_kubeconfig("alice", &token), Result::is_ok).await.unwrap();
    // Without --oidc-username-prefix, user names carry the issuer.
    assert_eq!(info["username"], format!("{}#alice", issuer.url));
    assert_eq!(info["groups"], json!(["oidc:dev", "system:authenticated"]));
    let missing = issuer.token("alice", "kube", json!({}));
    assert_eq!(status_with(&s, "missing", &missing).await, 401);
}

#[test]
fn conflicting_authentication_settings_stop_the_server() {
    let files = tempfile::tempdir().unwrap();
    let config = files.path().join("authn.yaml");
    std::fs::write(&config, "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\nanonymous:\n  enabled: false\n").unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    for (flags, want) in [
        (vec!["--oidc-issuer-url", "https://issuer.example", "--oidc-client-id", "k"], "authentication-config file and oidc-* flags are mutually exclusive"),
        (vec!["--anonymous-auth=true"], "--anonymous-auth flag is set"),
    ] {
        let mut args = vec!["--authentication-config", config.to_str().unwrap()];
        args.extend(flags);
        let mut s = TestServer::new(&args);
        let err = runtime.block_on(async {
            s.launch();
            s.wait_ready().await.unwrap_err()
        });
        assert!(err.contains(want), "{err}");
    }
    let invalid = files.path().join("invalid.yaml");
    std::fs::write(&invalid, "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt:\n- issuer: {url: http://x}\n").unwrap();
    let mut s = TestServer::new(&["--authentication-config", invalid.to_str().unwrap()]);
    let err = runtime.block_on(async {
        s.launch();
        s.wait_ready().await.unwrap_err()
    });
    assert!(err.contains("URL scheme must be https") && err.contains("claim or expression is required"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_issuer_stalls_nothing() {
    // An issuer nobody answers for: the server starts anyway, serves everyone else, and refuses
    // the issuer's tokens at once (its keys were never fetched).
    let url = format!("https://127.0.0.1:{}", common::free_port());
    let files = tempfile::tempdir().unwrap();
    let config = files.path().join("authn.yaml");
    let doc = json!({"apiVersion": "apiserver.config.k8s.io/v1", "kind": "AuthenticationConfiguration",
        "jwt": [{"issuer": {"url": url, "audiences": ["kube"]}, "claimMappings": {"username": {"claim": "sub", "prefix": ""}}}]});
    std::fs::write(&config, doc.to_string()).unwrap();
    let s = TestServer::start_with(&["--authentication-config", config.to_str().unwrap()]).await;
    assert_eq!(s.get("/api").await.status, 200);
    let key = SigningKey::generate("k");
    let token = key.sign(&json!({"iss": url, "sub": "alice", "aud": "kube", "exp": now() + 60}));
    let started = Instant::now();
    assert_eq!(status_with(&s, "unreachable", &token).await, 401);
    assert!(started.elapsed() < Duration::from_secs(3), "refusing took {:?}", started.elapsed());
    let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}});
    let review = s.request(http::Request::post("/apis/authentication.k8s.io/v1/tokenreviews").header("content-type", "application/json").body(body.to_string().into_bytes()).unwrap()).await.json();
    assert!(review["status"]["error"].as_str().unwrap_or_default().contains("is not initialized"), "{review}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_in_the_query_is_ignored() {
    let issuer = OidcIssuer::start().await;
    let files = tempfile::tempdir().unwrap();
    let config = files.path().join("authn.yaml");
    std::fs::write(&config, configuration(&issuer, json!({"claim": "sub", "prefix": ""})).to_string()).unwrap();
    let s = TestServer::start_with(&["--authentication-config", config.to_str().unwrap()]).await;
    let token = issuer.token("alice", "kube", json!({"hd": "example.com", "tenant": "t"}));
    whoami_until(&s, &s.token_kubeconfig("alice", &token), Result::is_ok).await.unwrap();
    let anonymous = s.anonymous_client().await;
    for param in ["access_token", "token"] {
        let path = format!("/apis/authentication.k8s.io/v1/selfsubjectreviews?{param}={token}");
        let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}).to_string().into_bytes();
        // Anonymous access is only for /livez here: a query token does not make alice.
        let reply = common::send(&anonymous, http::Request::post(path).header("content-type", "application/json").body(body).unwrap()).await;
        reply.expect_status(401, "Unauthorized");
    }
}
