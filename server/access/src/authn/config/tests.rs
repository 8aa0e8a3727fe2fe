//! The configuration parser against Kubernetes' own examples and messages, and arbitrary input.

use super::*;

fn errors_of(yaml: &str) -> String {
    match parse(yaml.as_bytes(), &["https://kubernetes.default.svc".to_string()]) {
        Ok(_) => String::new(),
        Err(e) => e,
    }
}

#[test]
fn a_full_configuration_parses() {
    let yaml = r#"
apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: https://issuer.example
    audiences: [a, b]
    audienceMatchPolicy: MatchAny
  claimValidationRules:
  - claim: hd
    requiredValue: example.com
  - expression: claims.exp - claims.nbf <= 86400
    message: total token lifetime must not exceed 24 hours
  claimMappings:
    username:
      expression: "'oidc:' + claims.sub"
    groups:
      claim: groups
      prefix: ""
    uid:
      claim: sub
    extra:
    - key: example.com/tenant
      valueExpression: claims.tenant
  userValidationRules:
  - expression: "!user.username.startsWith('system:')"
    message: no system users
anonymous:
  enabled: true
  conditions:
  - path: /livez
"#;
    let config = parse(yaml.as_bytes(), &[]).unwrap();
    assert_eq!(config.jwt.len(), 1);
    assert_eq!(config.jwt[0].audiences, ["a", "b"]);
    let anonymous = config.anonymous.unwrap();
    assert!(anonymous.allows("/livez") && !anonymous.allows("/api"));
}

#[test]
fn kubernetes_field_errors() {
    let yaml = r#"
apiVersion: apiserver.config.k8s.io/v1beta1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: http://issuer.example?x=1
    audiences: [a, a]
  claimMappings:
    username:
      claim: sub
- issuer:
    url: https://kubernetes.default.svc
    audiences: [a]
  claimMappings:
    username:
      expression: claims.email
    extra:
    - key: kubernetes.io/x
      valueExpression: claims.x
anonymous:
  enabled: false
  conditions:
  - path: /livez
"#;
    let errs = errors_of(yaml);
    for want in [
        r#"jwt[0].issuer.url: Invalid value: "http://issuer.example?x=1": URL scheme must be https"#,
        r#"jwt[0].issuer.url: Invalid value: "http://issuer.example?x=1": URL must not contain a query"#,
        r#"jwt[0].issuer.audiences[1]: Duplicate value: "a""#,
        r#"jwt[0].issuer.audienceMatchPolicy: Invalid value: "": audienceMatchPolicy must be MatchAny for multiple audiences"#,
        "jwt[0].claimMappings.username.prefix: Required value: prefix is required when claim is set",
        r#"jwt[1].issuer.url: Invalid value: "https://kubernetes.default.svc": URL must not overlap with disallowed issuers: [https://kubernetes.default.svc]"#,
        "claims.email_verified must be used in claimMappings.username.expression",
        r#"jwt[1].claimMappings.extra[0].key: Invalid value: "kubernetes.io/x": k8s.io, kubernetes.io and their subdomains are reserved"#,
        "anonymous.conditions: Invalid value: enabled should be set to true when conditions are defined",
    ] {
        assert!(errs.contains(want), "missing {want:?} in {errs}");
    }
    assert!(errors_of("kind: AuthenticationConfiguration\n").contains("apiVersion and kind must be set"));
    let bad_cel = "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt:\n- issuer: {url: https://i.example, audiences: [a]}\n  claimMappings:\n    username: {expression: 'claims.sub +'}\n";
    assert!(errors_of(bad_cel).contains("jwt[0].claimMappings.username.expression: Invalid value"), "{}", errors_of(bad_cel));
    let too_many: String = (0..65).map(|i| format!("- issuer: {{url: https://i{i}.example, audiences: [a]}}\n  claimMappings: {{username: {{claim: sub, prefix: ''}}}}\n")).collect();
    let yaml = format!("apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt:\n{too_many}");
    assert!(errors_of(&yaml).contains("jwt: Too many: 65: must have at most 64 items"));
}

proptest::proptest! {
    /// Arbitrary bytes, and arbitrary values where a configuration's fields go, are refused
    /// with a message or accepted, never a panic.
    #[test]
    fn never_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400), field in "\\PC{0,40}", count in 0usize..4) {
        let _ = parse(&bytes, &[]);
        let entry = serde_json::json!({"issuer": {"url": field, "discoveryURL": field, "audiences": [field, field], "audienceMatchPolicy": field, "certificateAuthority": field},
            "claimValidationRules": [{"claim": field, "requiredValue": field}, {"expression": field, "message": field}],
            "claimMappings": {"username": {"expression": field}, "groups": {"claim": field}, "uid": {"claim": field, "expression": field}, "extra": [{"key": field, "valueExpression": field}]},
            "userValidationRules": [{"expression": field}]});
        let doc = serde_json::json!({"apiVersion": "apiserver.config.k8s.io/v1", "kind": "AuthenticationConfiguration", "jwt": vec![entry; count], "anonymous": {"enabled": count > 1, "conditions": [{"path": field}]}});
        let _ = parse(doc.to_string().as_bytes(), std::slice::from_ref(&field));
    }
}

#[test]
fn oidc_flags_become_one_authenticator() {
    use clap::Parser;
    use crate::options::Flags;
    let args = Flags::parse_from(["apiserver", "--oidc-issuer-url=https://i.example", "--oidc-client-id=kube", "--oidc-groups-claim=groups", "--oidc-required-claim=hd=example.com"]).authentication;
    let settings = from_oidc_flags(&args, &[]).unwrap().unwrap();
    assert_eq!(settings.audiences, ["kube"]);
    assert_eq!(settings.algorithms, ["RS256"]);
    let user = settings.mapping.user(&serde_json::json!({"sub": "u1", "groups": ["g"], "hd": "example.com"})).unwrap();
    assert_eq!(user.name, "https://i.example#u1");
    assert_eq!(user.groups, ["g"]);
    let email = Flags::parse_from(["apiserver", "--oidc-issuer-url=https://i.example", "--oidc-client-id=kube", "--oidc-username-claim=email"]).authentication;
    let settings = from_oidc_flags(&email, &[]).unwrap().unwrap();
    assert_eq!(settings.mapping.user(&serde_json::json!({"email": "a@b.c"})).unwrap().name, "a@b.c");
    let lone = Flags::parse_from(["apiserver", "--oidc-issuer-url=https://i.example"]).authentication;
    assert!(from_oidc_flags(&lone, &[]).is_err());
    let es512 = Flags::parse_from(["apiserver", "--oidc-issuer-url=https://i.example", "--oidc-client-id=k", "--oidc-signing-algs=ES512,PS256"]).authentication;
    assert_eq!(from_oidc_flags(&es512, &[]).unwrap().unwrap().algorithms, ["ES512", "PS256"]);
    let hs = Flags::parse_from(["apiserver", "--oidc-issuer-url=https://i.example", "--oidc-client-id=k", "--oidc-signing-algs=HS256"]).authentication;
    assert!(from_oidc_flags(&hs, &[]).err().unwrap().contains("unsupported signing alg"));
}
