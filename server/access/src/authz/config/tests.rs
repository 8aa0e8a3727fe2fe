//! The configuration file's parsing and validation, the legacy flags, and a fuzzed parser.

use super::*;
use clap::Parser as _;
use crate::options::Flags;
use proptest::prelude::*;

fn kubeconfig() -> tempfile::NamedTempFile {
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), "clusters: []\n").unwrap();
    f
}

fn webhook_yaml(kubeconfig: &str, extra: &str) -> String {
    format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\nauthorizers:\n- type: Node\n  name: node\n- type: Webhook\n  name: policy.example.com\n  webhook:\n    timeout: 3s\n    subjectAccessReviewVersion: v1\n    matchConditionSubjectAccessReviewVersion: v1\n    failurePolicy: Deny\n    connectionInfo:\n      type: KubeConfigFile\n      kubeConfigFile: {kubeconfig}\n{extra}- type: RBAC\n  name: rbac\n"
    )
}

#[test]
fn a_valid_file_with_defaults() {
    let k = kubeconfig();
    let yaml = webhook_yaml(k.path().to_str().unwrap(), "    matchConditions:\n    - expression: has(request.resourceAttributes)\n");
    let config = parse(yaml.as_bytes()).unwrap();
    assert_eq!(config.authorizers.iter().map(|a| a.mode).collect::<Vec<_>>(), vec![Mode::Node, Mode::Webhook, Mode::Rbac]);
    let w = config.authorizers[1].webhook.as_ref().unwrap();
    assert_eq!((w.timeout, w.authorized_ttl, w.unauthorized_ttl), (Duration::from_secs(3), Duration::from_secs(300), Duration::from_secs(30)));
    assert_eq!(w.failure_policy, FailurePolicy::Deny);
    assert_eq!(w.match_conditions, vec!["has(request.resourceAttributes)"]);
    assert_eq!(config.fixed_modes(), vec![Mode::Rbac, Mode::Node]);
    // JSON is YAML too.
    let json = r#"{"apiVersion":"apiserver.config.k8s.io/v1","kind":"AuthorizationConfiguration","authorizers":[{"type":"AlwaysAllow","name":"alwaysallow"}]}"#;
    assert_eq!(parse(json.as_bytes()).unwrap().authorizers[0].mode, Mode::AlwaysAllow);
}

#[test]
fn validation_reports_every_field_as_kubernetes_does() {
    let k = kubeconfig();
    let path = k.path().to_str().unwrap();
    let head = "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\n";
    let cases: Vec<(String, &str)> = vec![
        (format!("{head}authorizers: []\n"), "authorizers: Required value: at least one authorization mode must be defined"),
        (format!("{head}authorizers:\n- type: Foo\n  name: foo\n"), "authorizers[0].type: Unsupported value: \"Foo\""),
        (format!("{head}authorizers:\n- type: RBAC\n  name: rbac\n- type: RBAC\n  name: rbac2\n"), "authorizers[1].type: Duplicate value: \"RBAC\""),
        (format!("{head}authorizers:\n- type: RBAC\n  name: Not_Valid\n"), "authorizers[0].name: Invalid value: \"Not_Valid\": authorizer name is invalid"),
        (format!("{head}authorizers:\n- type: RBAC\n  name: other\n"), "expected name rbac for authorizer RBAC instead of other"),
        (format!("{head}authorizers:\n- type: Webhook\n  name: w\n"), "authorizers[0].webhook: Required value: required when type=Webhook"),
        (format!("{head}authorizers:\n- type: RBAC\n  name: rbac\n  webhook: {{}}\n"), "may only be specified when type=Webhook"),
        (webhook_yaml(path, "").replace("timeout: 3s", "timeout: 45s"), "authorizers[1].timeout: Invalid value: \"45s\": must be > 0s and <= 30s"),
        (webhook_yaml(path, "").replace("    timeout: 3s\n", ""), "authorizers[1].timeout: Required value"),
        (webhook_yaml(path, "").replace("failurePolicy: Deny", "failurePolicy: Allow"), "authorizers[1].failurePolicy: Unsupported value: \"Allow\""),
        (webhook_yaml(path, "").replace("subjectAccessReviewVersion: v1\n", "subjectAccessReviewVersion: v2\n"), "authorizers[1].subjectAccessReviewVersion: Unsupported value: \"v2\""),
        (webhook_yaml("relative/file", ""), "authorizers[1].connectionInfo.kubeConfigFile: Invalid value: \"relative/file\": must be an absolute path"),
        (webhook_yaml("/no/such/file", ""), "error loading file"),
        (webhook_yaml(path, "    matchConditions:\n    - expression: request.user\n"), "authorizers[1].matchConditions[0].expression: Invalid value: \"request.user\": compilation failed: must evaluate to bool"),
        (webhook_yaml(path, "    matchConditions:\n    - expression: 'true'\n    - expression: 'true'\n"), "authorizers[1].matchConditions[1].expression: Duplicate value"),
        (webhook_yaml(path, "    unknownField: 1\n"), "failed to load AuthorizationConfiguration from file: authorizers[1].webhook: unknown field `unknownField`"),
        ("apiVersion: v1\nkind: Pod\n".to_string(), "no kind \"Pod\" is registered"),
    ];
    for (yaml, want) in cases {
        let err = parse(yaml.as_bytes()).unwrap_err();
        assert!(err.contains(want), "{yaml}\nwant {want}\n got {err}");
    }
    let too_many: String = (0..65).map(|i| format!("    - expression: 'request.user != \"u{i}\"'\n")).collect();
    let err = parse(webhook_yaml(path, &format!("    matchConditions:\n{too_many}")).as_bytes()).unwrap_err();
    assert!(err.contains("authorizers[1].matchConditions: Too many: 65: must have at most 64 items"), "{err}");
}

#[test]
fn legacy_flags_become_a_configuration() {
    let args = |extra: &[&str]| Flags::try_parse_from([&["apiserver"], extra].concat()).unwrap().authorization;
    let config = from_flags(&args(&[])).unwrap();
    assert_eq!(config.authorizers.iter().map(|a| a.name.as_str()).collect::<Vec<_>>(), vec!["node", "rbac"]);
    let config = from_flags(&args(&["--authorization-mode", "Webhook,RBAC", "--authorization-webhook-config-file", "/k", "--authorization-webhook-cache-authorized-ttl", "1m"])).unwrap();
    let w = config.authorizers[0].webhook.as_ref().unwrap();
    assert_eq!((w.authorized_ttl, w.unauthorized_ttl, w.timeout, w.sar_version.as_str()), (Duration::from_secs(60), Duration::from_secs(30), Duration::from_secs(30), "v1beta1"));
    assert_eq!(w.failure_policy, FailurePolicy::NoOpinion);
    for (flags, want) in [
        (vec!["--authorization-mode", "ABAC"], "authorization-mode ABAC's authorization policy file not passed"),
        (vec!["--authorization-mode", "Webhook"], "authorization-mode Webhook's authorization config file not passed"),
        (vec!["--authorization-mode", "RBAC", "--authorization-policy-file", "/p"], "cannot specify --authorization-policy-file without mode ABAC"),
        (vec!["--authorization-mode", "RBAC,RBAC"], "has mode specified more than once"),
        (vec!["--authorization-mode", "Magic"], "authorization-mode \"Magic\" is not a valid mode"),
        (vec!["--authorization-mode", ""], "at least one authorization-mode must be passed"),
    ] {
        let err = from_flags(&args(&flags)).unwrap_err();
        assert!(err.contains(want), "{flags:?}: {err}");
    }
    assert!(legacy_flags_set(&args(&["--authorization-webhook-version", "v1"])));
    assert!(!legacy_flags_set(&args(&["--authorization-policy-file", "/p"])));
}

proptest! {
    /// Whatever the file holds, reading it never panics.
    #[test]
    fn parsing_never_panics(text in "\\PC{0,300}") {
        let _ = parse(text.as_bytes());
    }

    /// Files with the right shape and odd values never panic either.
    #[test]
    fn shaped_files_never_panic(
        kind in prop_oneof![Just("Webhook".to_string()), Just("RBAC".to_string()), "[A-Za-z]{0,8}"],
        name in "[a-zA-Z0-9.\\-_]{0,12}",
        timeout in prop_oneof![Just("3s".to_string()), "[0-9a-z.\\-]{0,6}"],
        policy in "[A-Za-z]{0,10}",
        expression in "[a-z.()'=!& \\[\\]0-9]{0,30}",
    ) {
        let yaml = format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\nauthorizers:\n- type: {kind:?}\n  name: {name:?}\n  webhook:\n    timeout: {timeout:?}\n    failurePolicy: {policy:?}\n    subjectAccessReviewVersion: v1\n    matchConditionSubjectAccessReviewVersion: v1\n    connectionInfo: {{type: InClusterConfig}}\n    matchConditions:\n    - expression: {expression:?}\n"
        );
        let _ = parse(yaml.as_bytes());
    }

}
