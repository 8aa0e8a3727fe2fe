//! Bootstrap tokens against the real binary: a token Secret in kube-system authenticates with
//! kubectl when `--enable-bootstrap-token-auth` is on (and only then), the signer keeps
//! `cluster-info` signed for signing tokens, and the cleaner deletes expired tokens.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use common::TestServer;
use serde_json::{json, Value};

fn apply(s: &TestServer, dir: &Path, obj: &Value) {
    let path = dir.join("obj.json");
    std::fs::write(&path, obj.to_string()).unwrap();
    s.kubectl_ok(&["apply", "-f", path.to_str().unwrap()]);
}

fn token_secret(id: &str, secret: &str, extra: &[(&str, &str)]) -> Value {
    let mut data = json!({"token-id": id, "token-secret": secret});
    for (k, v) in extra {
        data[*k] = json!(v);
    }
    json!({
        "apiVersion": "v1", "kind": "Secret", "type": "bootstrap.kubernetes.io/token",
        "metadata": {"name": format!("bootstrap-token-{id}"), "namespace": "kube-system"},
        "stringData": data,
    })
}

async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while !done() {
        assert!(Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn bootstrap_tokens_authenticate_sign_and_expire() {
    let s = TestServer::start_with(&["--enable-bootstrap-token-auth"]).await;
    let files = tempfile::tempdir().unwrap();
    let groups = "system:bootstrappers:kubeadm:default-node-token";
    apply(&s, files.path(), &token_secret("abcdef", "0123456789abcdef", &[("usage-bootstrap-authentication", "true"), ("auth-extra-groups", groups)]));

    let joiner = s.token_kubeconfig("joiner", "abcdef.0123456789abcdef");
    let out = s.kubectl_as(&joiner, &["auth", "whoami", "-o", "json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let who: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(who["status"]["userInfo"]["username"], "system:bootstrap:abcdef");
    assert_eq!(who["status"]["userInfo"]["groups"], json!(["system:bootstrappers", groups, "system:authenticated"]));
    // The wrong secret for the id is no credential.
    let wrong = s.token_kubeconfig("wrong", "abcdef.ffffffffffffffff");
    assert!(String::from_utf8_lossy(&s.kubectl_as(&wrong, &["auth", "whoami"]).stderr).contains("Unauthorized"));

    // The signer signs cluster-info's kubeconfig with each signing token.
    let kubeconfig = "apiVersion: v1\nkind: Config\nclusters: []\n";
    apply(&s, files.path(), &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cluster-info", "namespace": "kube-public"}, "data": {"kubeconfig": kubeconfig}}));
    apply(&s, files.path(), &token_secret("signer", "0123456789abcdef", &[("usage-bootstrap-signing", "true")]));
    let read = || s.kubectl_ok(&["-n", "kube-public", "get", "cm", "cluster-info", "-o", "jsonpath={.data.jws-kubeconfig-signer}"]);
    until("cluster-info was never signed", || !read().is_empty()).await;
    let signature = read();
    let (header, sig) = signature.split_once("..").expect("a detached JWS");
    assert_eq!(URL_SAFE_NO_PAD.decode(header).unwrap(), br#"{"alg":"HS256","kid":"signer"}"#);
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, b"signer.0123456789abcdef");
    let signed = format!("{header}.{}", URL_SAFE_NO_PAD.encode(kubeconfig));
    assert!(ring::hmac::verify(&key, signed.as_bytes(), &URL_SAFE_NO_PAD.decode(sig).unwrap()).is_ok(), "the signature verifies with the token");
    // A token without the signing usage gets no signature.
    assert!(s.kubectl_ok(&["-n", "kube-public", "get", "cm", "cluster-info", "-o", "jsonpath={.data.jws-kubeconfig-abcdef}"]).is_empty());

    // An expired token stops working at once, and the cleaner deletes it. The expiration leaves
    // two kubectl calls (on a busy machine, seconds) the time to use the token before it.
    let soon = (chrono::Utc::now() + chrono::Duration::seconds(6)).format("%Y-%m-%dT%H:%M:%SZ").to_string();
    apply(&s, files.path(), &token_secret("expire", "0123456789abcdef", &[("usage-bootstrap-authentication", "true"), ("expiration", &soon)]));
    let expiring = s.token_kubeconfig("expiring", "expire.0123456789abcdef");
    assert!(s.kubectl_as(&expiring, &["auth", "whoami"]).status.success());
    until("the cleaner left an expired token", || !s.kubectl(&["-n", "kube-system", "get", "secret", "bootstrap-token-expire"]).status.success()).await;
    tokio::time::sleep(Duration::from_secs(11)).await;
    assert!(String::from_utf8_lossy(&s.kubectl_as(&expiring, &["auth", "whoami"]).stderr).contains("Unauthorized"));
    // Deleting the signing token removes its signature.
    s.kubectl_ok(&["-n", "kube-system", "delete", "secret", "bootstrap-token-signer"]);
    until("the signature outlived its token", || read().is_empty()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bootstrap_tokens_are_off_by_default() {
    let s = TestServer::start().await;
    let files = tempfile::tempdir().unwrap();
    apply(&s, files.path(), &token_secret("abcdef", "0123456789abcdef", &[("usage-bootstrap-authentication", "true")]));
    let joiner = s.token_kubeconfig("joiner", "abcdef.0123456789abcdef");
    assert!(String::from_utf8_lossy(&s.kubectl_as(&joiner, &["auth", "whoami"]).stderr).contains("Unauthorized"));
}
