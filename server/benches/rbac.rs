//! The authorization benchmark: with 1,000 ClusterRoles and 5,000 RoleBindings stored, creates
//! (32 clients) and consistent GETs (1 client) as a user allowed through a RoleBinding, against
//! the same as `system:masters` (allowed before any authorizer runs), and the RSS those RBAC
//! objects add. Run with `cargo bench -p apiserver --bench rbac`.

mod common;

use common::{creates, gets, report, rss_mib, Server};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule, RoleBinding, RoleRef, Subject};
use kube::api::{GetParams, PostParams};
use kube::Api;

const CLUSTER_ROLES: usize = 1_000;
const ROLE_BINDINGS: usize = 5_000;
const NAMESPACES: usize = 50;

fn rule(verbs: &[&str], resource: &str) -> PolicyRule {
    PolicyRule {
        api_groups: Some(vec![String::new()]),
        resources: Some(vec![resource.to_string()]),
        verbs: verbs.iter().map(|v| v.to_string()).collect(),
        ..Default::default()
    }
}

fn binding(name: &str, role: &str, user: &str) -> RoleBinding {
    let mut b = RoleBinding {
        role_ref: RoleRef { api_group: Some("rbac.authorization.k8s.io".into()), kind: "ClusterRole".into(), name: role.into() },
        subjects: Some(vec![Subject { api_group: Some("rbac.authorization.k8s.io".into()), kind: "User".into(), name: user.into(), ..Default::default() }]),
        ..Default::default()
    };
    b.metadata.name = Some(name.into());
    b
}

#[tokio::main]
async fn main() {
    let server = Server::start(&[]);
    let admin = server.client().await;
    let pp = PostParams::default();
    let namespaces: Api<Namespace> = Api::all(admin.clone());
    for n in 0..NAMESPACES {
        let mut ns = Namespace::default();
        ns.metadata.name = Some(format!("team-{n}"));
        namespaces.create(&pp, &ns).await.expect("namespace");
    }
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    let before = rss_mib(server.pid());
    let roles: Api<ClusterRole> = Api::all(admin.clone());
    common::concurrently(CLUSTER_ROLES, 16, move |c, i| {
        let roles = roles.clone();
        async move {
            let mut role = ClusterRole { rules: Some(vec![rule(&["get", "list", "watch"], "pods"), rule(&["get"], &format!("things{c}x{i}"))]), ..Default::default() };
            role.metadata.name = Some(format!("bench-role-{c}-{i}"));
            roles.create(&PostParams::default(), &role).await.expect("cluster role");
        }
    })
    .await;
    let admin2 = admin.clone();
    common::concurrently(ROLE_BINDINGS, 16, move |c, i| {
        let n = (c * 1000 + i) % NAMESPACES;
        let api: Api<RoleBinding> = Api::namespaced(admin2.clone(), &format!("team-{n}"));
        async move {
            let b = binding(&format!("bench-binding-{c}-{i}"), &format!("bench-role-{c}-{}", i % 50), &format!("user-{c}-{i}"));
            api.create(&PostParams::default(), &b).await.expect("role binding");
        }
    })
    .await;
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    println!("{:<40} {:.1} MiB for {CLUSTER_ROLES} ClusterRoles and {ROLE_BINDINGS} RoleBindings", "RSS growth", rss_mib(server.pid()) - before);

    // The measured user may do what it does through one RoleBinding, among the 5,000.
    let cm_role: Api<ClusterRole> = Api::all(admin.clone());
    let mut writer = ClusterRole { rules: Some(vec![rule(&["get", "create"], "configmaps")]), ..Default::default() };
    writer.metadata.name = Some("bench-configmap-writer".into());
    cm_role.create(&pp, &writer).await.expect("writer role");
    let rb: Api<RoleBinding> = Api::namespaced(admin.clone(), "team-7");
    rb.create(&pp, &binding("bench-user", "bench-configmap-writer", "bench-user")).await.expect("binding");
    let user = server.user_client("bench-user", &["bench-group"]).await;

    for round in 0..2 {
        for (who, client) in [("system:masters", admin.clone()), ("RoleBinding user", user.clone())] {
            let api: Api<ConfigMap> = Api::namespaced(client, "team-7");
            let prefix = format!("r{round}-{}", if who == "system:masters" { "admin" } else { "user" });
            let (lat, el) = creates(&api, &prefix, 8_000, 32).await;
            report(&format!("create, 32 clients, {who}"), lat, el);
            let names: Vec<String> = (0..200).map(|i| format!("{prefix}-0-{i}")).collect();
            let (lat, el) = gets(&api, &names, &GetParams::default(), 2_000, 1).await;
            report(&format!("get consistent, 1 client, {who}"), lat, el);
        }
    }
}
