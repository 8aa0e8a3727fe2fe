//! The authentication benchmark: consistent GETs by a service account presenting a token from
//! `serviceaccounts/token` and by a user presenting an OIDC ID token (of an issuer the bench runs
//! over HTTPS), against the same by a user with a client certificate, all allowed through a
//! RoleBinding, at 1 and 16 clients, two rounds each, alternating. Run with
//! `cargo bench -p apiserver --bench tokens`.

mod common;

use common::{creates, gets, report, Server};
use k8s_openapi::api::core::v1::{ConfigMap, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, PolicyRule, RoleBinding, RoleRef, Subject};
use kube::api::{GetParams, PostParams};
use kube::Api;

#[tokio::main]
async fn main() {
    let issuer = common::oidc_issuer::OidcIssuer::start().await;
    let files = tempfile::tempdir().expect("tempdir");
    let config = files.path().join("authn.yaml");
    let authn = serde_json::json!({
        "apiVersion": "apiserver.config.k8s.io/v1", "kind": "AuthenticationConfiguration",
        "jwt": [{"issuer": {"url": issuer.url, "certificateAuthority": issuer.ca_pem, "audiences": ["kube"]},
                 "claimMappings": {"username": {"claim": "sub", "prefix": ""}}}],
    });
    std::fs::write(&config, authn.to_string()).expect("authentication configuration");
    let server = Server::start(&["--authentication-config", config.to_str().unwrap()]);
    let admin = server.client().await;
    let pp = PostParams::default();
    let mut role = Role { rules: Some(vec![PolicyRule { api_groups: Some(vec![String::new()]), resources: Some(vec!["configmaps".into()]), verbs: vec!["get".into()], ..Default::default() }]), ..Default::default() };
    role.metadata.name = Some("reader".into());
    Api::<Role>::namespaced(admin.clone(), "default").create(&pp, &role).await.expect("role");
    let subjects = vec![
        Subject { api_group: Some("rbac.authorization.k8s.io".into()), kind: "User".into(), name: "bench-user".into(), ..Default::default() },
        Subject { kind: "ServiceAccount".into(), name: "bench-robot".into(), namespace: Some("default".into()), ..Default::default() },
        Subject { api_group: Some("rbac.authorization.k8s.io".into()), kind: "User".into(), name: "oidc-user".into(), ..Default::default() },
    ];
    let mut binding = RoleBinding { role_ref: RoleRef { api_group: Some("rbac.authorization.k8s.io".into()), kind: "Role".into(), name: "reader".into() }, subjects: Some(subjects), ..Default::default() };
    binding.metadata.name = Some("readers".into());
    Api::<RoleBinding>::namespaced(admin.clone(), "default").create(&pp, &binding).await.expect("binding");
    let mut sa = ServiceAccount::default();
    sa.metadata.name = Some("bench-robot".into());
    let accounts: Api<ServiceAccount> = Api::namespaced(admin.clone(), "default");
    accounts.create(&pp, &sa).await.expect("service account");
    let request = k8s_openapi::api::authentication::v1::TokenRequest::default();
    let token = accounts.create_token_request("bench-robot", &pp, &request).await.expect("token").status.expect("status").token.expect("a token");

    let configmaps: Api<ConfigMap> = Api::namespaced(admin.clone(), "default");
    creates(&configmaps, "bench", 200, 8).await;
    let names: Vec<String> = (0..200).map(|i| format!("bench-{}-{}", i % 8, i / 8)).collect();

    let user = server.user_client("bench-user", &[]).await;
    let robot = server.token_client(&token).await;
    let oidc = server.token_client(&issuer.token("oidc-user", "kube", serde_json::json!({}))).await;
    // The issuer's keys are fetched in the background after start.
    let probe: Api<ConfigMap> = Api::namespaced(oidc.clone(), "default");
    for _ in 0..100 {
        if probe.get(&names[0]).await.is_ok() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    for round in 0..2 {
        for (who, client) in [("client certificate", user.clone()), ("service-account token", robot.clone()), ("OIDC token", oidc.clone())] {
            let api: Api<ConfigMap> = Api::namespaced(client, "default");
            for clients in [1, 16] {
                let (lat, el) = gets(&api, &names, &GetParams::default(), 4_000, clients).await;
                report(&format!("round {round}: get, {clients} clients, {who}"), lat, el);
            }
        }
    }
}
