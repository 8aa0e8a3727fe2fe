//! Service-account tokens against the real binary: `kubectl create token` (TokenRequest),
//! acting with the token under RBAC, audiences and TokenReview, tokens bound to a pod, revocation
//! when the account or pod goes, the issuer discovery documents checked as a relying party would,
//! and TokenRequest's refusals.

use crate::common;

use std::time::Duration;

use common::TestServer;
use serde_json::{json, Value};

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn token_review(token: &str, audiences: &[&str]) -> http::Request<Vec<u8>> {
    let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token, "audiences": audiences}});
    http::Request::post("/apis/authentication.k8s.io/v1/tokenreviews").header("content-type", "application/json").body(body.to_string().into_bytes()).unwrap()
}

/// Waits out the authentication cache, so that a revoked token is seen as revoked.
async fn past_token_cache() {
    tokio::time::sleep(Duration::from_secs(11)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_create_token_acts_as_the_account_until_it_is_deleted() {
    let s = TestServer::start().await;
    s.kubectl_ok(&["create", "namespace", "apps"]);
    s.kubectl_ok(&["-n", "apps", "create", "serviceaccount", "robot"]);
    let uid = s.kubectl_ok(&["-n", "apps", "get", "sa", "robot", "-o", "jsonpath={.metadata.uid}"]);

    let token = s.kubectl_ok(&["-n", "apps", "create", "token", "robot", "--duration", "20m"]).trim().to_string();
    assert_eq!(token.split('.').count(), 3, "a JWT: {token}");
    let robot = s.token_kubeconfig("robot", &token);
    let out = s.kubectl_as(&robot, &["auth", "whoami", "-o", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let who: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let info = &who["status"]["userInfo"];
    assert_eq!(info["username"], "system:serviceaccount:apps:robot");
    assert_eq!(info["uid"], uid.as_str());
    assert_eq!(info["groups"], json!(["system:serviceaccounts", "system:serviceaccounts:apps", "system:authenticated"]));
    assert!(info["extra"]["authentication.kubernetes.io/credential-id"][0].as_str().unwrap().starts_with("JTI="), "{info}");

    // RBAC decides what the account may do.
    let out = s.kubectl_as(&robot, &["-n", "apps", "get", "configmaps"]);
    assert!(stderr(&out).contains("User \"system:serviceaccount:apps:robot\" cannot list resource \"configmaps\""), "{}", stderr(&out));
    s.kubectl_ok(&["-n", "apps", "create", "role", "reader", "--verb=list", "--resource=configmaps"]);
    s.kubectl_ok(&["-n", "apps", "create", "rolebinding", "robot-reads", "--role=reader", "--serviceaccount=apps:robot"]);
    let out = s.kubectl_as(&robot, &["-n", "apps", "get", "configmaps"]);
    assert!(out.status.success(), "{}", stderr(&out));

    // The claims Kubernetes puts in, readable by anyone holding the token.
    let claims = decode_claims(&token);
    assert_eq!(claims["sub"], "system:serviceaccount:apps:robot");
    assert_eq!(claims["iss"], "https://kubernetes.default.svc.cluster.local");
    assert_eq!(claims["aud"], json!(["https://kubernetes.default.svc.cluster.local"]));
    assert_eq!(claims["kubernetes.io"]["serviceaccount"], json!({"name": "robot", "uid": uid}));
    assert_eq!(claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(), 1200);
    assert_eq!(claims["nbf"], claims["iat"]);

    // A token for another audience is no credential here; TokenReview says for which it is.
    let other = s.kubectl_ok(&["-n", "apps", "create", "token", "robot", "--audience", "vault"]).trim().to_string();
    let out = s.kubectl_as(&s.token_kubeconfig("other", &other), &["auth", "whoami"]);
    assert!(stderr(&out).contains("Unauthorized"), "{}", stderr(&out));
    let review = s.request(token_review(&other, &["vault", "nomad"])).await.json();
    assert_eq!(review["status"]["authenticated"], true, "{review}");
    assert_eq!(review["status"]["audiences"], json!(["vault"]));
    assert_eq!(review["status"]["user"]["username"], "system:serviceaccount:apps:robot");
    let review = s.request(token_review(&other, &[])).await.json();
    assert!(review["status"]["authenticated"].is_null(), "{review}");
    assert!(review["status"]["error"].as_str().unwrap().contains("invalid for the target audiences"), "{review}");

    // A tampered token fails its signature.
    let mut parts: Vec<&str> = token.split('.').collect();
    let forged_payload = base64_url(&serde_json::to_vec(&json!({"sub": "system:serviceaccount:kube-system:admin", "iss": claims["iss"], "kubernetes.io": {"namespace": "kube-system", "serviceaccount": {"name": "admin", "uid": "x"}}, "exp": 4102444800i64})).unwrap());
    parts[1] = &forged_payload;
    let forged = parts.join(".");
    let out = s.kubectl_as(&s.token_kubeconfig("forged", &forged), &["auth", "whoami"]);
    assert!(stderr(&out).contains("Unauthorized"), "{}", stderr(&out));

    // Deleting the account revokes its tokens (within the cache's lifetime).
    s.kubectl_ok(&["-n", "apps", "delete", "serviceaccount", "robot"]);
    past_token_cache().await;
    let out = s.kubectl_as(&robot, &["auth", "whoami"]);
    assert!(stderr(&out).contains("Unauthorized"), "{}", stderr(&out));
    // A new account of the same name is someone else: the old token stays dead.
    s.kubectl_ok(&["-n", "apps", "create", "serviceaccount", "robot"]);
    let out = s.kubectl_as(&robot, &["auth", "whoami"]);
    assert!(stderr(&out).contains("Unauthorized"), "{}", stderr(&out));
}

#[tokio::test(flavor = "multi_thread")]
async fn pod_bound_tokens_carry_the_pod_and_die_with_it() {
    let s = TestServer::start().await;
    s.kubectl_ok(&["create", "serviceaccount", "runner"]);
    s.kubectl_ok(&["create", "serviceaccount", "other"]);
    s.kubectl_ok(&["run", "job", "--image=busybox", "--overrides={\"spec\":{\"serviceAccountName\":\"runner\"}}"]);
    let pod_uid = s.kubectl_ok(&["get", "pod", "job", "-o", "jsonpath={.metadata.uid}"]);

    let token = s.kubectl_ok(&["create", "token", "runner", "--bound-object-kind", "Pod", "--bound-object-name", "job"]).trim().to_string();
    let claims = decode_claims(&token);
    assert_eq!(claims["kubernetes.io"]["pod"], json!({"name": "job", "uid": pod_uid}));
    let runner = s.token_kubeconfig("runner", &token);
    let who: Value = serde_json::from_str(&stdout(&s.kubectl_as(&runner, &["auth", "whoami", "-o", "json"]))).unwrap();
    assert_eq!(who["status"]["userInfo"]["extra"]["authentication.kubernetes.io/pod-name"], json!(["job"]));
    assert_eq!(who["status"]["userInfo"]["extra"]["authentication.kubernetes.io/pod-uid"], json!([pod_uid]));

    // The pod must run as that account, and be the pod the client means.
    let out = s.kubectl(&["create", "token", "other", "--bound-object-kind", "Pod", "--bound-object-name", "job"]);
    assert!(stderr(&out).contains("cannot bind token for serviceaccount \"other\" to pod running with different serviceaccount name."), "{}", stderr(&out));
    let out = s.kubectl(&["create", "token", "runner", "--bound-object-kind", "Pod", "--bound-object-name", "job", "--bound-object-uid", "wrong"]);
    assert!(stderr(&out).contains("the UID in the bound object reference (wrong) does not match the UID in record"), "{}", stderr(&out));
    let out = s.kubectl(&["create", "token", "runner", "--bound-object-kind", "Pod", "--bound-object-name", "missing"]);
    assert!(stderr(&out).contains("pods \"missing\" not found"), "{}", stderr(&out));

    s.kubectl_ok(&["delete", "pod", "job", "--wait=false"]);
    past_token_cache().await;
    let out = s.kubectl_as(&runner, &["auth", "whoami"]);
    assert!(stderr(&out).contains("Unauthorized"), "{}", stderr(&out));
}

#[tokio::test(flavor = "multi_thread")]
async fn token_requests_are_validated_and_capped() {
    let s = TestServer::start_with(&["--service-account-max-token-expiration", "2h"]).await;
    s.kubectl_ok(&["create", "serviceaccount", "short"]);
    let request = |spec: Value| {
        let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec});
        http::Request::post("/api/v1/namespaces/default/serviceaccounts/short/token").header("content-type", "application/json").body(body.to_string().into_bytes()).unwrap()
    };
    let reply = s.request(request(json!({"expirationSeconds": 60}))).await;
    let status = reply.expect_status(422, "Invalid");
    assert_eq!(status["message"], "TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes");
    let reply = s.request(request(json!({"expirationSeconds": 86400}))).await;
    assert_eq!(reply.status, 201, "{}", reply.text());
    let granted = reply.json();
    assert_eq!(granted["kind"], "TokenRequest");
    assert_eq!(granted["spec"]["expirationSeconds"], 7200, "capped by --service-account-max-token-expiration");
    // The answer names the account by uid and carries its time, as kube-apiserver's does.
    let account = s.get("/api/v1/namespaces/default/serviceaccounts/short").await.json();
    assert_eq!(granted["metadata"]["uid"], account["metadata"]["uid"]);
    assert!(granted["metadata"]["creationTimestamp"].is_string() && granted["spec"]["boundObjectRef"].is_null(), "{granted}");
    let claims = decode_claims(granted["status"]["token"].as_str().unwrap());
    assert_eq!(claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(), 7200);
    let expires = chrono::DateTime::parse_from_rfc3339(granted["status"]["expirationTimestamp"].as_str().unwrap()).unwrap();
    assert_eq!(expires.timestamp(), claims["exp"].as_i64().unwrap());
    let reply = s.request(request(json!({"boundObjectRef": {"kind": "ConfigMap", "apiVersion": "v1", "name": "x"}}))).await;
    reply.expect_status(400, "BadRequest");
    let missing = http::Request::post("/api/v1/namespaces/default/serviceaccounts/nobody/token")
        .header("content-type", "application/json")
        .body(json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}).to_string().into_bytes())
        .unwrap();
    s.request(missing).await.expect_status(404, "NotFound");
    // A user needs `create serviceaccounts/token` to ask.
    let mallory = s.client_for(&s.kubeconfig_for("mallory", &[])).await;
    common::send(&mallory, request(json!({}))).await.expect_status(403, "Forbidden");
    // Garbage that is not a JWT is 401, not a crash.
    for junk in ["a.b.c", "eyJhbGciOiJub25lIn0.e30.", "...."] {
        let out = s.kubectl_as(&s.token_kubeconfig("junk", junk), &["auth", "whoami"]);
        assert!(stderr(&out).contains("Unauthorized"), "{junk}: {}", stderr(&out));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn issuer_discovery_lets_a_relying_party_verify_tokens() {
    let s = TestServer::start_with(&["--service-account-issuer", "https://issuer.example", "--service-account-issuer", "https://old.example"]).await;
    s.kubectl_ok(&["create", "serviceaccount", "relier"]);
    let token = s.kubectl_ok(&["create", "token", "relier"]).trim().to_string();
    let claims = decode_claims(&token);
    assert_eq!(claims["iss"], "https://issuer.example", "the first issuer signs");
    assert_eq!(claims["aud"], json!(["https://issuer.example", "https://old.example"]), "the API audiences default to the issuers");

    // Any service account may read the documents (system:service-account-issuer-discovery);
    // anonymous users may not by default.
    let relier = s.client_for(&s.token_kubeconfig("relier", &token)).await;
    let config = common::send(&relier, http::Request::get("/.well-known/openid-configuration").body(vec![]).unwrap()).await;
    assert_eq!(config.status, 200, "{}", config.text());
    assert_eq!(config.headers["content-type"], "application/json");
    assert_eq!(config.headers["cache-control"], "public, max-age=3600");
    let config = config.json();
    assert_eq!(config["issuer"], "https://issuer.example");
    assert_eq!(config["jwks_uri"], format!("https://127.0.0.1:{}/openid/v1/jwks", s.port()));
    assert_eq!(config["response_types_supported"], json!(["id_token"]));
    let anonymous = s.anonymous_client().await;
    common::send(&anonymous, http::Request::get("/openid/v1/jwks").body(vec![]).unwrap()).await.expect_status(403, "Forbidden");

    let jwks = common::send(&relier, http::Request::get("/openid/v1/jwks").body(vec![]).unwrap()).await;
    assert_eq!(jwks.headers["content-type"], "application/jwk-set+json");
    let set: jsonwebtoken::jwk::JwkSet = serde_json::from_slice(&jwks.body).unwrap();
    let header = jsonwebtoken::decode_header(&token).unwrap();
    let jwk = set.find(header.kid.as_deref().unwrap()).expect("the token's key is published");
    let mut validation = jsonwebtoken::Validation::new(header.alg);
    validation.set_audience(&["https://issuer.example"]);
    validation.set_issuer(&["https://issuer.example"]);
    let verified = jsonwebtoken::decode::<Value>(&token, &jsonwebtoken::DecodingKey::from_jwk(jwk).unwrap(), &validation).unwrap();
    assert_eq!(verified.claims["sub"], "system:serviceaccount:default:relier");

    // A token naming the second issuer is still accepted: sign one with the node's key.
    let key = std::fs::read(s.data_dir().join("pki/sa.key")).unwrap();
    let mut old = claims.clone();
    old["iss"] = json!("https://old.example");
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
    header.kid = Some(jwk.common.key_id.clone().unwrap());
    let old_token = jsonwebtoken::encode(&header, &old, &jsonwebtoken::EncodingKey::from_ec_pem(&key).unwrap()).unwrap();
    let review = s.request(token_review(&old_token, &[])).await.json();
    assert_eq!(review["status"]["authenticated"], true, "{review}");
}

fn base64_url(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A JWT's claims, unverified.
fn decode_claims(token: &str) -> Value {
    use base64::Engine;
    let payload = token.split('.').nth(1).expect("a JWT");
    serde_json::from_slice(&base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap()
}

/// Polls `kubectl` until it succeeds (a controller's work shows up), for at most five seconds.
async fn eventually(s: &TestServer, args: &[&str]) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let out = s.kubectl(args);
        if out.status.success() {
            return stdout(&out);
        }
        assert!(std::time::Instant::now() < deadline, "kubectl {args:?}: {}", stderr(&out));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn namespaces_get_a_default_account_and_pods_run_as_it() {
    let s = TestServer::start().await;
    s.kubectl_ok(&["create", "namespace", "team"]);
    eventually(&s, &["-n", "team", "get", "serviceaccount", "default"]).await;
    let ca = eventually(&s, &["-n", "team", "get", "configmap", "kube-root-ca.crt", "-o", "jsonpath={.data.ca\\.crt}"]).await;
    assert!(ca.starts_with("-----BEGIN CERTIFICATE-----"), "{ca}");
    // Deleted, they come back.
    let first = s.kubectl_ok(&["-n", "team", "get", "sa", "default", "-o", "jsonpath={.metadata.uid}"]);
    s.kubectl_ok(&["-n", "team", "delete", "serviceaccount", "default"]);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let uid = stdout(&s.kubectl(&["-n", "team", "get", "sa", "default", "-o", "jsonpath={.metadata.uid}"]));
        if !uid.is_empty() && uid != first {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the default account was not recreated");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // A pod naming no account runs as `default`, with the token volume mounted everywhere.
    s.kubectl_ok(&["-n", "team", "run", "web", "--image=nginx"]);
    let pod: Value = serde_json::from_str(&s.kubectl_ok(&["-n", "team", "get", "pod", "web", "-o", "json"])).unwrap();
    assert_eq!(pod["spec"]["serviceAccountName"], "default");
    assert_eq!(pod["spec"]["serviceAccount"], "default");
    let volume = &pod["spec"]["volumes"][0];
    assert!(volume["name"].as_str().unwrap().starts_with("kube-api-access-"), "{volume}");
    assert_eq!(volume["projected"]["sources"][1]["configMap"]["name"], "kube-root-ca.crt");
    assert_eq!(pod["spec"]["containers"][0]["volumeMounts"][0]["mountPath"], "/var/run/secrets/kubernetes.io/serviceaccount");
    assert_eq!(pod["spec"]["containers"][0]["volumeMounts"][0]["readOnly"], true);

    // An account that does not exist is refused, as Kubernetes words it.
    let out = s.kubectl(&["-n", "team", "run", "ghost", "--image=nginx", "--overrides={\"spec\":{\"serviceAccountName\":\"nobody\"}}"]);
    assert!(
        stderr(&out).contains("pods \"ghost\" is forbidden: error looking up service account team/nobody: serviceaccount \"nobody\" not found"),
        "{}",
        stderr(&out)
    );
    // An account that opts out of automounting gives its pods no token, and its pull secrets.
    let quiet = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "quiet"}, "automountServiceAccountToken": false, "imagePullSecrets": [{"name": "registry"}]});
    let path = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(path.path(), quiet.to_string()).unwrap();
    s.kubectl_ok(&["-n", "team", "apply", "-f", path.path().to_str().unwrap()]);
    s.kubectl_ok(&["-n", "team", "run", "batch", "--image=busybox", "--overrides={\"spec\":{\"serviceAccountName\":\"quiet\"}}"]);
    let pod: Value = serde_json::from_str(&s.kubectl_ok(&["-n", "team", "get", "pod", "batch", "-o", "json"])).unwrap();
    assert!(pod["spec"]["volumes"].is_null(), "{}", pod["spec"]);
    assert_eq!(pod["spec"]["imagePullSecrets"], json!([{"name": "registry"}]));
}

#[tokio::test(flavor = "multi_thread")]
async fn legacy_token_secrets_are_filled_in_and_revoked_with_their_secret() {
    let s = TestServer::start().await;
    let files = tempfile::tempdir().unwrap();
    s.kubectl_ok(&["create", "serviceaccount", "builder"]);
    let secret = json!({
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
        "metadata": {"name": "builder-token", "annotations": {"kubernetes.io/service-account.name": "builder"}},
    });
    let path = files.path().join("secret.json");
    std::fs::write(&path, secret.to_string()).unwrap();
    s.kubectl_ok(&["apply", "-f", path.to_str().unwrap()]);
    let token = eventually(&s, &["get", "secret", "builder-token", "-o", "jsonpath={.data.token}"]).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let mut token = token;
    while token.is_empty() {
        assert!(std::time::Instant::now() < deadline, "the token was never filled in");
        tokio::time::sleep(Duration::from_millis(100)).await;
        token = s.kubectl_ok(&["get", "secret", "builder-token", "-o", "jsonpath={.data.token}"]);
    }
    use base64::Engine;
    let token = String::from_utf8(base64::engine::general_purpose::STANDARD.decode(token.trim()).unwrap()).unwrap();
    let claims = decode_claims(&token);
    assert_eq!(claims["iss"], "kubernetes/serviceaccount");
    assert_eq!(claims["kubernetes.io/serviceaccount/secret.name"], "builder-token");
    let namespace = s.kubectl_ok(&["get", "secret", "builder-token", "-o", "jsonpath={.data.namespace}"]);
    assert_eq!(base64::engine::general_purpose::STANDARD.decode(namespace.trim()).unwrap(), b"default");

    let builder = s.token_kubeconfig("builder", &token);
    let out = s.kubectl_as(&builder, &["auth", "whoami"]);
    assert!(stdout(&out).contains("system:serviceaccount:default:builder"), "{}", stderr(&out));

    // The token lives as long as its Secret.
    s.kubectl_ok(&["delete", "secret", "builder-token"]);
    past_token_cache().await;
    let out = s.kubectl_as(&builder, &["auth", "whoami"]);
    assert!(stderr(&out).contains("Unauthorized"), "{}", stderr(&out));

    // Deleting the account deletes its token Secrets.
    s.kubectl_ok(&["apply", "-f", path.to_str().unwrap()]);
    eventually(&s, &["get", "secret", "builder-token"]).await;
    s.kubectl_ok(&["delete", "serviceaccount", "builder"]);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while s.kubectl(&["get", "secret", "builder-token"]).status.success() {
        assert!(std::time::Instant::now() < deadline, "the token Secret outlived its account");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
