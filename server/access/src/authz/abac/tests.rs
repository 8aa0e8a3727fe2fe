//! ABAC policy files: both versions, the matching rules, rule listing, and a fuzzed parser.

use super::*;
use proptest::prelude::*;

fn user(name: &str, groups: &[&str]) -> UserInfo {
    UserInfo { name: name.into(), groups: groups.iter().map(|g| g.to_string()).collect(), ..Default::default() }
}

fn resource(u: &UserInfo, verb: &str, group: &str, resource: &str, namespace: &str) -> Attributes {
    Attributes {
        user: u.clone(),
        verb: verb.into(),
        resource_request: true,
        api_group: group.into(),
        resource: resource.into(),
        namespace: namespace.into(),
        ..Default::default()
    }
}

fn path(u: &UserInfo, verb: &str, path: &str) -> Attributes {
    Attributes { user: u.clone(), verb: verb.into(), path: path.into(), ..Default::default() }
}

fn allows(abac: &Abac, a: &Attributes) -> bool {
    abac.policies.iter().any(|p| Abac::matches(p, a))
}

const FILE: &str = r#"
# comments and blank lines are skipped

{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy", "spec": {"user": "alice", "namespace": "*", "resource": "*", "apiGroup": "*"}}
{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy", "spec": {"user": "bob", "namespace": "projectCaribou", "resource": "pods", "apiGroup": "", "readonly": true}}
{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy", "spec": {"group": "system:authenticated", "readonly": true, "nonResourcePath": "/version*"}}
{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy", "spec": {"user": "*", "readonly": true, "nonResourcePath": "/healthz"}}
{"user": "carol", "namespace": "ops"}
"#;

#[test]
fn v1beta1_and_v0_policies_match_as_in_kubernetes() {
    let abac = Abac::parse(FILE).unwrap();
    assert_eq!(abac.policies.len(), 5);
    let alice = user("alice", &["system:authenticated"]);
    let bob = user("bob", &["system:authenticated"]);
    let carol = user("carol", &["system:authenticated"]);
    let anonymous = user("system:anonymous", &["system:unauthenticated"]);

    assert!(allows(&abac, &resource(&alice, "delete", "apps", "deployments", "x")));
    assert!(allows(&abac, &resource(&alice, "list", "", "nodes", "")));
    // A policy naming resources does not reach non-resource paths.
    assert!(!allows(&abac, &path(&alice, "post", "/api")));

    assert!(allows(&abac, &resource(&bob, "get", "", "pods", "projectCaribou")));
    assert!(!allows(&abac, &resource(&bob, "create", "", "pods", "projectCaribou")));
    assert!(!allows(&abac, &resource(&bob, "get", "", "pods", "other")));
    assert!(!allows(&abac, &resource(&bob, "get", "", "secrets", "projectCaribou")));

    // Prefix paths, group matches, and `user: "*"` turned into all authenticated users.
    assert!(allows(&abac, &path(&bob, "get", "/version/extra")));
    assert!(allows(&abac, &path(&bob, "get", "/healthz")));
    assert!(!allows(&abac, &path(&bob, "post", "/healthz")));
    assert!(!allows(&abac, &path(&anonymous, "get", "/healthz")));

    // v0: namespace given, so every resource there in every group, and no paths.
    assert!(allows(&abac, &resource(&carol, "update", "apps", "deployments", "ops")));
    assert!(!allows(&abac, &resource(&carol, "get", "", "pods", "default")));
}

#[test]
fn an_empty_v0_policy_allows_every_authenticated_user_everything() {
    let abac = Abac::parse("{}").unwrap();
    let p = &abac.policies[0];
    assert_eq!((p.group.as_str(), p.namespace.as_str(), p.resource.as_str(), p.non_resource_path.as_str()), ("system:authenticated", "*", "*", "*"));
    assert!(allows(&abac, &path(&user("x", &["system:authenticated"]), "get", "/metrics")));
    assert!(!allows(&abac, &path(&user("system:anonymous", &["system:unauthenticated"]), "get", "/metrics")));
}

#[test]
fn errors_name_the_line() {
    let (line, data, _) = Abac::parse("# ok\n{\"user\": \"a\"}\n{not json\n").unwrap_err();
    assert_eq!((line, data.as_str()), (3, "{not json"));
    let (line, _, e) = Abac::parse(r#"{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy"}"#).unwrap_err();
    assert_eq!(line, 1);
    assert!(e.contains("spec"), "{e}");
}

#[test]
fn rules_for_lists_what_a_user_may_do_in_a_namespace() {
    let abac = Abac::parse(FILE).unwrap();
    let rules = abac.rules_for(&user("bob", &["system:authenticated"]), "projectCaribou");
    assert_eq!(rules.resource.len(), 1);
    assert_eq!(rules.resource[0].verbs, vec!["get", "list", "watch"]);
    // As in Kubernetes, a policy is listed only when its namespace matches: the path policies
    // name none, so they are left out.
    assert!(rules.non_resource.is_empty());
    assert!(!rules.incomplete);
    assert!(abac.rules_for(&user("bob", &["system:authenticated"]), "other").resource.is_empty());
}

proptest! {
    /// Whatever a policy file holds, parsing never panics.
    #[test]
    fn parsing_never_panics(text in "\\PC{0,400}") {
        let _ = Abac::parse(&text);
    }

    /// Lines that look like policies, with fields of any type, never panic either.
    #[test]
    fn policy_like_lines_never_panic(
        fields in proptest::collection::vec(
            (prop_oneof![Just("user"), Just("group"), Just("readonly"), Just("spec"), Just("apiVersion"), Just("kind"), Just("nonResourcePath")],
             prop_oneof![Just("\"*\"".to_string()), Just("true".to_string()), Just("{}".to_string()), Just("[1]".to_string()), "\"[a-z/*]{0,8}\""]),
            0..6)
    ) {
        let line = format!("{{{}}}", fields.iter().map(|(k, v)| format!("\"{k}\": {v}")).collect::<Vec<_>>().join(", "));
        if let Ok(abac) = Abac::parse(&line) {
            let u = user("alice", &["system:authenticated"]);
            let _ = allows(&abac, &path(&u, "get", "/x"));
            let _ = allows(&abac, &resource(&u, "get", "", "pods", "ns"));
        }
    }
}
