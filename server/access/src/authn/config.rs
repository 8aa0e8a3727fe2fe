//! The authentication configuration: an `AuthenticationConfiguration` file
//! (`--authentication-config`, `apiserver.config.k8s.io` v1alpha1, v1beta1 or v1) or the
//! `--oidc-*` flags turned into the same form, validated as Kubernetes validates it, with every
//! CEL expression compiled here, once.

use serde::Deserialize;

use super::jwt::claims::{self, ClaimRule, Mapping, Source};
use super::jwt::Settings;
use crate::field_errors::{self, FieldErrors};
use crate::options::AuthenticationOptions;

/// At most this many JWT authenticators.
const MAX_JWT: usize = 64;

/// Algorithms a configuration file's authenticators accept (Kubernetes' list).
const FILE_ALGORITHMS: &[&str] = &["RS256", "RS384", "RS512", "ES256", "ES384", "ES512", "PS256", "PS384", "PS512"];

/// Anonymous access as the file's `anonymous` section says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Anonymous {
    pub enabled: bool,
    /// When not empty, only these paths accept anonymous requests.
    pub paths: Vec<String>,
}

impl Anonymous {
    /// Whether an anonymous request for `path` is accepted.
    pub fn allows(&self, path: &str) -> bool {
        self.enabled && (self.paths.is_empty() || self.paths.iter().any(|p| p == path))
    }
}

/// A validated configuration.
pub struct Config {
    pub jwt: Vec<Settings>,
    pub anonymous: Option<Anonymous>,
}

// The file's form.

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct File {
    api_version: Option<String>,
    kind: Option<String>,
    #[serde(default)]
    jwt: Vec<FileJwt>,
    anonymous: Option<FileAnonymous>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct FileJwt {
    #[serde(default)]
    issuer: FileIssuer,
    #[serde(default)]
    claim_validation_rules: Vec<FileClaimRule>,
    #[serde(default)]
    claim_mappings: FileMappings,
    #[serde(default)]
    user_validation_rules: Vec<FileUserRule>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct FileIssuer {
    #[serde(default)]
    url: String,
    #[serde(default, rename = "discoveryURL")]
    discovery_url: String,
    #[serde(default)]
    certificate_authority: String,
    #[serde(default)]
    audiences: Vec<String>,
    #[serde(default)]
    audience_match_policy: String,
    #[serde(default)]
    egress_selector_type: String,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct FileClaimRule {
    #[serde(default)]
    claim: String,
    #[serde(default)]
    required_value: String,
    #[serde(default)]
    expression: String,
    #[serde(default)]
    message: String,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct FileMappings {
    #[serde(default)]
    username: FilePrefixed,
    #[serde(default)]
    groups: FilePrefixed,
    #[serde(default)]
    uid: FilePrefixed,
    #[serde(default)]
    extra: Vec<FileExtra>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct FilePrefixed {
    #[serde(default)]
    claim: String,
    prefix: Option<String>,
    #[serde(default)]
    expression: String,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct FileExtra {
    #[serde(default)]
    key: String,
    #[serde(default)]
    value_expression: String,
}

#[derive(Deserialize, Default)]
struct FileUserRule {
    #[serde(default)]
    expression: String,
    #[serde(default)]
    message: String,
}

#[derive(Deserialize, Default)]
struct FileAnonymous {
    #[serde(default)]
    enabled: bool,
    #[serde(default)]
    conditions: Vec<FileCondition>,
}

#[derive(Deserialize, Default)]
struct FileCondition {
    #[serde(default)]
    path: String,
}

/// Parses and validates an `AuthenticationConfiguration` (YAML or JSON). `disallowed_issuers`
/// are the service-account issuers, which no JWT authenticator may claim.
pub fn parse(data: &[u8], disallowed_issuers: &[String]) -> Result<Config, String> {
    let file: File = serde_yaml::from_slice(data).map_err(|e| format!("failed to load AuthenticationConfiguration from file: {e}"))?;
    field_errors::check_type("AuthenticationConfiguration", file.api_version.as_deref(), file.kind.as_deref())?;
    let mut errs = FieldErrors::default();
    if file.jwt.len() > MAX_JWT {
        errs.too_many("jwt", file.jwt.len(), MAX_JWT);
    }
    let mut jwt = Vec::new();
    for (i, a) in file.jwt.iter().enumerate() {
        let path = format!("jwt[{i}]");
        for other in &file.jwt[..i] {
            if !a.issuer.url.is_empty() && other.issuer.url == a.issuer.url {
                errs.duplicate(&format!("{path}.issuer.url"), &a.issuer.url);
            }
            if !a.issuer.discovery_url.is_empty() && other.issuer.discovery_url == a.issuer.discovery_url {
                errs.duplicate(&format!("{path}.issuer.discoveryURL"), &a.issuer.discovery_url);
            }
        }
        if let Some(settings) = authenticator(&path, a, disallowed_issuers, &mut errs) {
            jwt.push(settings);
        }
    }
    let anonymous = file.anonymous.map(|a| {
        if !a.enabled && !a.conditions.is_empty() {
            errs.0.push("anonymous.conditions: Invalid value: enabled should be set to true when conditions are defined".to_string());
        }
        let mut paths: Vec<String> = Vec::new();
        for (i, c) in a.conditions.iter().enumerate() {
            if c.path.is_empty() {
                errs.required(&format!("anonymous.conditions[{i}].path"), "");
            } else if paths.contains(&c.path) {
                errs.duplicate(&format!("anonymous.conditions[{i}].path"), &c.path);
            } else {
                paths.push(c.path.clone());
            }
        }
        Anonymous { enabled: a.enabled, paths }
    });
    errs.into_result(Config { jwt, anonymous })
}

/// One `jwt` entry, validated and compiled.
fn authenticator(path: &str, a: &FileJwt, disallowed: &[String], errs: &mut FieldErrors) -> Option<Settings> {
    let before = errs.0.len();
    let issuer = &a.issuer;
    let url_path = format!("{path}.issuer.url");
    if issuer.url.is_empty() {
        errs.required(&url_path, "");
    } else {
        if disallowed.contains(&issuer.url) {
            let mut list = disallowed.to_vec();
            list.sort();
            errs.invalid(&url_path, &issuer.url, &format!("URL must not overlap with disallowed issuers: [{}]", list.join(" ")));
        }
        check_url(&url_path, &issuer.url, errs);
    }
    if !issuer.discovery_url.is_empty() {
        let discovery_path = format!("{path}.issuer.discoveryURL");
        if issuer.url.trim_end_matches('/') == issuer.discovery_url.trim_end_matches('/') {
            errs.invalid(&discovery_path, &issuer.discovery_url, "discoveryURL must be different from URL");
        }
        check_url(&discovery_path, &issuer.discovery_url, errs);
    }
    let audiences_path = format!("{path}.issuer.audiences");
    if issuer.audiences.is_empty() {
        errs.required(&audiences_path, &format!("at least one {audiences_path} is required"));
    }
    for (i, audience) in issuer.audiences.iter().enumerate() {
        if audience.is_empty() {
            errs.required(&format!("{audiences_path}[{i}]"), "");
        } else if issuer.audiences[..i].contains(audience) {
            errs.duplicate(&format!("{audiences_path}[{i}]"), audience);
        }
    }
    let policy_path = format!("{path}.issuer.audienceMatchPolicy");
    match (issuer.audiences.len() > 1, issuer.audience_match_policy.as_str()) {
        (true, "MatchAny") | (false, "" | "MatchAny") => {}
        (true, p) => errs.invalid(&policy_path, p, "audienceMatchPolicy must be MatchAny for multiple audiences"),
        (false, p) => errs.invalid(&policy_path, p, "audienceMatchPolicy must be empty or MatchAny for single audience"),
    }
    let ca_pem = (!issuer.certificate_authority.is_empty()).then(|| issuer.certificate_authority.clone());
    if let Some(pem) = &ca_pem {
        let certs: Vec<_> = rustls_pemfile::certs(&mut pem.as_bytes()).filter_map(Result::ok).collect();
        if certs.is_empty() {
            errs.invalid(&format!("{path}.issuer.certificateAuthority"), "<omitted>", "data does not contain any valid RSA or ECDSA certificates");
        }
    }
    if !issuer.egress_selector_type.is_empty() {
        errs.invalid(&format!("{path}.issuer.egressSelectorType"), &issuer.egress_selector_type, "egress selection is not supported by this server");
    }
    let mapping = mapping(path, a, errs);
    (errs.0.len() == before).then_some(())?;
    Some(Settings {
        issuer: issuer.url.clone(),
        discovery_url: (!issuer.discovery_url.is_empty()).then(|| issuer.discovery_url.clone()),
        ca_pem,
        audiences: issuer.audiences.clone(),
        algorithms: FILE_ALGORITHMS.iter().map(|a| a.to_string()).collect(),
        mapping: mapping?,
    })
}

/// An issuer or discovery URL: https, without user info, query or fragment.
fn check_url(path: &str, url: &str, errs: &mut FieldErrors) {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if scheme != "https" {
        errs.invalid(path, url, "URL scheme must be https");
    }
    if authority.contains('@') {
        errs.invalid(path, url, "URL must not contain a username or password");
    }
    if rest.contains('?') {
        errs.invalid(path, url, "URL must not contain a query");
    }
    if rest.contains('#') {
        errs.invalid(path, url, "URL must not contain a fragment");
    }
}

/// The claim rules and mappings of one entry.
fn mapping(path: &str, a: &FileJwt, errs: &mut FieldErrors) -> Option<Mapping> {
    let m = &a.claim_mappings;
    let mut claim_rules = Vec::new();
    let mut sources: Vec<String> = Vec::new();
    for (i, rule) in a.claim_validation_rules.iter().enumerate() {
        let rule_path = format!("{path}.claimValidationRules[{i}]");
        match (rule.claim.is_empty(), rule.expression.is_empty()) {
            (false, false) => errs.invalid(&rule_path, &rule.claim, "claim and expression can't both be set"),
            (true, true) => errs.required(&rule_path, "claim or expression is required"),
            (false, true) => {
                if !rule.message.is_empty() {
                    errs.invalid(&format!("{rule_path}.message"), &rule.message, "may not be specified when claim is set");
                }
                if a.claim_validation_rules[..i].iter().any(|r| r.claim == rule.claim) {
                    errs.duplicate(&format!("{rule_path}.claim"), &rule.claim);
                }
                claim_rules.push(ClaimRule::Required { claim: rule.claim.clone(), value: rule.required_value.clone() });
            }
            (true, false) => {
                if !rule.required_value.is_empty() {
                    errs.invalid(&format!("{rule_path}.requiredValue"), &rule.required_value, "may not be specified when expression is set");
                }
                if a.claim_validation_rules[..i].iter().any(|r| r.expression == rule.expression) {
                    errs.duplicate(&format!("{rule_path}.expression"), &rule.expression);
                }
                sources.push(rule.expression.clone());
                if let Some(expression) = claims::compile_claims(&rule.expression, Some("bool"), &format!("{rule_path}.expression"), errs) {
                    claim_rules.push(ClaimRule::Expression { expression, message: rule.message.clone() });
                }
            }
        }
    }
    let username = prefixed(&format!("{path}.claimMappings.username"), &m.username, true, errs);
    let groups = prefixed(&format!("{path}.claimMappings.groups"), &m.groups, false, errs);
    let uid_path = format!("{path}.claimMappings.uid");
    let uid = match (m.uid.claim.is_empty(), m.uid.expression.is_empty()) {
        (false, false) => {
            errs.invalid(&uid_path, "", "claim and expression can't both be set");
            None
        }
        (true, true) => None,
        (false, true) => Some(Source::Claim { claim: m.uid.claim.clone(), prefix: String::new() }),
        (true, false) => claims::compile_claims(&m.uid.expression, Some("string"), &format!("{uid_path}.expression"), errs).map(Source::Expression),
    };
    let mut extra = Vec::new();
    for (i, e) in m.extra.iter().enumerate() {
        let extra_path = format!("{path}.claimMappings.extra[{i}]");
        check_extra_key(&format!("{extra_path}.key"), &e.key, errs);
        if m.extra[..i].iter().any(|other| other.key == e.key) {
            errs.duplicate(&format!("{extra_path}.key"), &e.key);
        }
        if e.value_expression.is_empty() {
            errs.required(&format!("{extra_path}.valueExpression"), "");
            continue;
        }
        sources.push(e.value_expression.clone());
        if let Some(expression) = claims::compile_claims(&e.value_expression, None, &format!("{extra_path}.valueExpression"), errs) {
            extra.push((e.key.clone(), expression));
        }
    }
    if claims::reads_claim(&m.username.expression, "email") {
        sources.push(m.username.expression.clone());
        if !sources.iter().any(|s| claims::reads_claim(s, "email_verified")) {
            errs.invalid(
                &format!("{path}.claimMappings.username.expression"),
                &m.username.expression,
                "claims.email_verified must be used in claimMappings.username.expression or claimMappings.extra[*].valueExpression or claimValidationRules[*].expression when claims.email is used in claimMappings.username.expression",
            );
        }
    }
    let mut user_rules = Vec::new();
    for (i, rule) in a.user_validation_rules.iter().enumerate() {
        let rule_path = format!("{path}.userValidationRules[{i}].expression");
        if rule.expression.is_empty() {
            errs.required(&rule_path, "");
        } else if a.user_validation_rules[..i].iter().any(|r| r.expression == rule.expression) {
            errs.duplicate(&rule_path, &rule.expression);
        } else if let Some(expression) = claims::compile_user(&rule.expression, &rule_path, errs) {
            user_rules.push((expression, rule.message.clone()));
        }
    }
    Some(Mapping { username: username??, groups: groups?, uid, extra, claim_rules, user_rules })
}

/// A claim with a prefix, or an expression: `Some(None)` when neither is set (and that is
/// allowed), `None` when it is wrong.
fn prefixed(path: &str, m: &FilePrefixed, required: bool, errs: &mut FieldErrors) -> Option<Option<Source>> {
    match (m.claim.is_empty(), m.expression.is_empty()) {
        (false, false) => {
            errs.invalid(path, "", "claim and expression can't both be set");
            None
        }
        (true, true) if required => {
            errs.required(path, "claim or expression is required");
            None
        }
        (true, true) => Some(None),
        (true, false) => {
            if let Some(prefix) = &m.prefix {
                errs.invalid(&format!("{path}.prefix"), prefix, "may not be specified when expression is set");
            }
            let want = required.then_some("string");
            claims::compile_claims(&m.expression, want, &format!("{path}.expression"), errs).map(|e| Some(Source::Expression(e)))
        }
        (false, true) => match &m.prefix {
            None => {
                errs.required(&format!("{path}.prefix"), "prefix is required when claim is set. It can be set to an empty string to disable prefixing");
                None
            }
            Some(prefix) => Some(Some(Source::Claim { claim: m.claim.clone(), prefix: prefix.clone() })),
        },
    }
}

/// An extra key: a lowercase domain-prefixed path outside Kubernetes' own domains.
fn check_extra_key(path: &str, key: &str, errs: &mut FieldErrors) {
    let Some((domain, rest)) = key.split_once('/') else {
        errs.invalid(path, key, "must be a domain-prefixed path (such as \"acme.io/foo\")");
        return;
    };
    let label_ok = |l: &str| !l.is_empty() && l.len() <= 63 && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') && !l.starts_with('-') && !l.ends_with('-');
    if domain.is_empty() || rest.is_empty() || !domain.split('.').all(label_ok) {
        errs.invalid(path, key, "must be a domain-prefixed path (such as \"acme.io/foo\")");
    }
    if key != key.to_lowercase() {
        errs.invalid(path, key, "must be lowercase");
    }
    let domain = domain.to_lowercase();
    if ["kubernetes.io", "k8s.io"].iter().any(|d| domain == *d || domain.ends_with(&format!(".{d}"))) {
        errs.invalid(path, key, "k8s.io, kubernetes.io and their subdomains are reserved for Kubernetes use");
    }
}

/// Whether any `--oidc-*` flag is set.
pub fn oidc_flags_set(args: &AuthenticationOptions) -> bool {
    args.oidc_issuer_url.is_some()
        || args.oidc_client_id.is_some()
        || args.oidc_username_claim.is_some()
        || args.oidc_username_prefix.is_some()
        || args.oidc_groups_claim.is_some()
        || args.oidc_groups_prefix.is_some()
        || !args.oidc_required_claim.is_empty()
        || args.oidc_ca_file.is_some()
        || !args.oidc_signing_algs.is_empty()
}

/// The authenticator the `--oidc-*` flags describe, as kube-apiserver builds it from them.
pub fn from_oidc_flags(args: &AuthenticationOptions, disallowed_issuers: &[String]) -> Result<Option<Settings>, String> {
    if !oidc_flags_set(args) {
        return Ok(None);
    }
    let (Some(issuer), Some(client_id)) = (&args.oidc_issuer_url, &args.oidc_client_id) else {
        return Err("--oidc-issuer-url and --oidc-client-id must be given together".into());
    };
    let mut algorithms = Vec::new();
    for name in if args.oidc_signing_algs.is_empty() { vec!["RS256".to_string()] } else { args.oidc_signing_algs.clone() } {
        match FILE_ALGORITHMS.iter().find(|a| **a == name.trim()) {
            Some(a) => algorithms.push(a.to_string()),
            None => return Err(format!("oidc: unsupported signing alg: {:?}", name.trim())),
        }
    }
    let claim = args.oidc_username_claim.clone().unwrap_or_else(|| "sub".into());
    let prefix = match args.oidc_username_prefix.as_deref() {
        Some("-") => String::new(),
        None | Some("") if claim != "email" => format!("{issuer}#"),
        other => other.unwrap_or_default().to_string(),
    };
    let mut file = FileJwt {
        issuer: FileIssuer { url: issuer.clone(), audiences: vec![client_id.clone()], ..Default::default() },
        claim_mappings: FileMappings {
            username: FilePrefixed { claim, prefix: Some(prefix), expression: String::new() },
            groups: match &args.oidc_groups_claim {
                Some(g) => FilePrefixed { claim: g.clone(), prefix: Some(args.oidc_groups_prefix.clone().unwrap_or_default()), expression: String::new() },
                None => FilePrefixed::default(),
            },
            ..Default::default()
        },
        ..Default::default()
    };
    for pair in &args.oidc_required_claim {
        let (claim, value) = pair.split_once('=').ok_or_else(|| format!("--oidc-required-claim {pair:?}: want claim=value"))?;
        file.claim_validation_rules.push(FileClaimRule { claim: claim.trim().into(), required_value: value.trim().into(), ..Default::default() });
    }
    let mut errs = FieldErrors::default();
    let ca_pem = match &args.oidc_ca_file {
        Some(path) => Some(std::fs::read_to_string(path).map_err(|e| format!("--oidc-ca-file {}: {e}", path.display()))?),
        None => None,
    };
    file.issuer.certificate_authority = ca_pem.unwrap_or_default();
    let settings = authenticator("jwt[0]", &file, disallowed_issuers, &mut errs);
    errs.into_result(())?;
    Ok(settings.map(|s| Settings { algorithms, ..s }))
}

#[cfg(test)]
mod tests;
