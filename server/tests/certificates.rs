//! CertificateSigningRequests with kubectl: `kubectl certificate approve`/`deny` through the
//! `approval` subresource, the `approve` verb on the signer, and status writes that may not
//! change approval.

use crate::common;

use base64::Engine;
use common::{send, TestServer};
use serde_json::json;

fn csr_pem(user: &str) -> String {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(rcgen::DnType::CommonName, user);
    let key = rcgen::KeyPair::generate().unwrap();
    params.serialize_request(&key).unwrap().pem().unwrap()
}

fn create_csr(s: &TestServer, name: &str, signer: &str) {
    let csr = json!({
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": name},
        "spec": {"request": base64::engine::general_purpose::STANDARD.encode(csr_pem(name)), "signerName": signer, "usages": ["client auth"]},
    });
    let mut cmd = s.kubectl_command(&["create", "-f", "-"]);
    cmd.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(csr.to_string().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[tokio::test(flavor = "multi_thread")]
async fn approval_goes_through_its_subresource_and_the_signer() {
    let s = TestServer::start().await;
    create_csr(&s, "alice", "example.com/client");
    create_csr(&s, "bob", "example.com/client");

    let out = s.kubectl_ok(&["certificate", "approve", "alice"]);
    assert!(out.contains("certificatesigningrequest.certificates.k8s.io/alice approved"), "{out}");
    let got = s.get("/apis/certificates.k8s.io/v1/certificatesigningrequests/alice").await.json();
    let condition = &got["status"]["conditions"][0];
    assert_eq!((condition["type"].as_str(), condition["status"].as_str(), condition["reason"].as_str()), (Some("Approved"), Some("True"), Some("KubectlApprove")));
    assert!(condition["lastUpdateTime"].is_string(), "{got}");
    assert_eq!(got["spec"]["username"], "kubernetes-admin", "the requestor is who created it");
    let listed = s.kubectl_ok(&["get", "csr", "alice"]);
    assert!(listed.contains("example.com/client") && listed.contains("kubernetes-admin") && listed.contains("Approved"), "{listed}");
    s.kubectl_ok(&["certificate", "deny", "bob"]);
    assert!(s.kubectl_ok(&["get", "csr", "bob"]).contains("Denied"));

    // Approved and Denied exclude each other; approval is never taken back.
    let mut both = got.clone();
    both["status"]["conditions"] = json!([condition, {"type": "Denied", "status": "True"}]);
    let put = |path: &str, body: &serde_json::Value| {
        http::Request::put(path).header("content-type", "application/json").body(body.to_string().into_bytes()).unwrap()
    };
    let reply = s.request(put("/apis/certificates.k8s.io/v1/certificatesigningrequests/alice/approval", &both)).await;
    let status = reply.expect_status(422, "Invalid");
    assert!(status["message"].as_str().unwrap().contains("Approved and Denied conditions are mutually exclusive"), "{status}");
    let mut none = got.clone();
    none["status"]["conditions"] = json!([]);
    let reply = s.request(put("/apis/certificates.k8s.io/v1/certificatesigningrequests/alice/approval", &none)).await;
    reply.expect_status(422, "Invalid");

    // A status write keeps approval as it is: a signer cannot approve its own request.
    create_csr(&s, "carol", "example.com/client");
    let carol = s.get("/apis/certificates.k8s.io/v1/certificatesigningrequests/carol").await.json();
    let mut self_approved = carol.clone();
    self_approved["status"] = json!({"conditions": [{"type": "Approved", "status": "True", "reason": "Mine"}]});
    let reply = s.request(put("/apis/certificates.k8s.io/v1/certificatesigningrequests/carol/status", &self_approved)).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert!(reply.json()["status"].get("conditions").is_none_or(|c| c.as_array().unwrap().is_empty()), "{}", reply.text());

    // Someone allowed to update the approval subresource still needs `approve` on the signer.
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "csr-approver"},
        "rules": [{"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests", "certificatesigningrequests/approval"], "verbs": ["get", "list", "update"]}]});
    let post = |path: &str, body: &serde_json::Value| {
        http::Request::post(path).header("content-type", "application/json").body(body.to_string().into_bytes()).unwrap()
    };
    assert_eq!(s.request(post("/apis/rbac.authorization.k8s.io/v1/clusterroles", &role)).await.status, 201);
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "csr-approver"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "csr-approver"},
        "subjects": [{"kind": "User", "name": "approver", "apiGroup": "rbac.authorization.k8s.io"}]});
    assert_eq!(s.request(post("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", &binding)).await.status, 201);
    let approver = s.impersonating_client("approver", &["system:authenticated"]).await;
    let mut approve = s.get("/apis/certificates.k8s.io/v1/certificatesigningrequests/carol").await.json();
    approve["status"] = json!({"conditions": [{"type": "Approved", "status": "True", "reason": "Checked"}]});
    let reply = send(&approver, put("/apis/certificates.k8s.io/v1/certificatesigningrequests/carol/approval", &approve)).await;
    let status = reply.expect_status(403, "Forbidden");
    assert!(status["message"].as_str().unwrap().ends_with("user not permitted to approve requests with signerName \"example.com/client\""), "{status}");
    // `approve` on every signer of the domain is enough.
    let signers = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "example-signers"},
        "rules": [{"apiGroups": ["certificates.k8s.io"], "resources": ["signers"], "resourceNames": ["example.com/*"], "verbs": ["approve"]}]});
    assert_eq!(s.request(post("/apis/rbac.authorization.k8s.io/v1/clusterroles", &signers)).await.status, 201);
    let mut binding = binding.clone();
    binding["metadata"]["name"] = json!("example-signers");
    binding["roleRef"]["name"] = json!("example-signers");
    assert_eq!(s.request(post("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", &binding)).await.status, 201);
    let reply = send(&approver, put("/apis/certificates.k8s.io/v1/certificatesigningrequests/carol/approval", &approve)).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
}
