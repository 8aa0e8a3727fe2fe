//! The authorizer chain's configuration: an `AuthorizationConfiguration` file
//! (`apiserver.config.k8s.io/v1`), or the legacy flags (`--authorization-mode` and
//! `--authorization-webhook-*`) turned into the same form, validated as Kubernetes validates it.

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use super::match_conditions::MatchConditions;
use crate::field_errors::{self, FieldErrors};
use crate::options::AuthorizationOptions;
use machinery::go_duration::parse_duration;

/// The modes an authorizer entry may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mode {
    AlwaysAllow,
    AlwaysDeny,
    Abac,
    Rbac,
    Node,
    Webhook,
}

const MODES: &[(&str, Mode)] = &[
    ("AlwaysAllow", Mode::AlwaysAllow),
    ("AlwaysDeny", Mode::AlwaysDeny),
    ("ABAC", Mode::Abac),
    ("Webhook", Mode::Webhook),
    ("RBAC", Mode::Rbac),
    ("Node", Mode::Node),
];

impl Mode {
    fn parse(s: &str) -> Option<Mode> {
        MODES.iter().find(|(n, _)| *n == s).map(|(_, m)| *m)
    }

    /// The mode's name as `--authorization-mode` and the `type` field spell it.
    pub fn as_str(self) -> &'static str {
        MODES.iter().find(|(_, m)| *m == self).map(|(n, _)| *n).unwrap_or_default()
    }

    fn choices() -> String {
        let mut names: Vec<_> = MODES.iter().map(|(n, _)| format!("{n:?}")).collect();
        names.sort();
        names.join(", ")
    }
}

/// What a webhook authorizer decides when it cannot get an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailurePolicy {
    NoOpinion,
    Deny,
}

/// How a webhook is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Connection {
    KubeConfigFile(PathBuf),
    InClusterConfig,
}

/// One webhook authorizer's settings. A TTL of zero caches nothing.
#[derive(Debug, Clone, PartialEq)]
pub struct WebhookSettings {
    pub authorized_ttl: Duration,
    pub unauthorized_ttl: Duration,
    pub timeout: Duration,
    /// `v1` or `v1beta1`: the SubjectAccessReview version sent.
    pub sar_version: String,
    pub failure_policy: FailurePolicy,
    pub connection: Connection,
    pub match_conditions: Vec<String>,
}

/// One authorizer in the chain.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub mode: Mode,
    pub name: String,
    pub webhook: Option<WebhookSettings>,
}

/// The chain, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub authorizers: Vec<Entry>,
}

impl Config {
    /// The non-webhook modes, which a reload may not change.
    pub fn fixed_modes(&self) -> Vec<Mode> {
        let mut modes: Vec<Mode> = self.authorizers.iter().map(|a| a.mode).filter(|m| *m != Mode::Webhook).collect();
        modes.sort();
        modes
    }

    pub fn has(&self, mode: Mode) -> bool {
        self.authorizers.iter().any(|a| a.mode == mode)
    }
}

// The file's form (strict: unknown fields are errors, as Kubernetes decodes it).

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct File {
    api_version: Option<String>,
    kind: Option<String>,
    #[serde(default)]
    authorizers: Vec<FileAuthorizer>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FileAuthorizer {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    name: String,
    webhook: Option<FileWebhook>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FileWebhook {
    #[serde(rename = "authorizedTTL")]
    authorized_ttl: Option<String>,
    cache_authorized_requests: Option<bool>,
    #[serde(rename = "unauthorizedTTL")]
    unauthorized_ttl: Option<String>,
    cache_unauthorized_requests: Option<bool>,
    timeout: Option<String>,
    #[serde(default)]
    subject_access_review_version: String,
    #[serde(default)]
    match_condition_subject_access_review_version: String,
    #[serde(default)]
    failure_policy: String,
    #[serde(default)]
    connection_info: FileConnection,
    #[serde(default)]
    match_conditions: Vec<FileMatchCondition>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FileConnection {
    #[serde(rename = "type", default)]
    kind: String,
    kube_config_file: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileMatchCondition {
    #[serde(default)]
    expression: String,
}

/// Parses and validates an `AuthorizationConfiguration` (YAML or JSON).
pub fn parse(data: &[u8]) -> Result<Config, String> {
    let file: File = serde_yaml::from_slice(data).map_err(|e| format!("failed to load AuthorizationConfiguration from file: {e}"))?;
    field_errors::check_type("AuthorizationConfiguration", file.api_version.as_deref(), file.kind.as_deref())?;
    let mut errs = FieldErrors::default();
    if file.authorizers.is_empty() {
        errs.required("authorizers", "at least one authorization mode must be defined");
    }
    let mut authorizers = Vec::new();
    let mut seen_modes = Vec::new();
    let mut seen_names: Vec<&str> = Vec::new();
    for (i, a) in file.authorizers.iter().enumerate() {
        let path = format!("authorizers[{i}]");
        if a.kind.is_empty() {
            errs.required(&format!("{path}.type"), "");
            continue;
        }
        let Some(mode) = Mode::parse(&a.kind) else {
            errs.not_supported(&format!("{path}.type"), &a.kind, &Mode::choices());
            continue;
        };
        if seen_modes.contains(&mode) && mode != Mode::Webhook {
            errs.duplicate(&format!("{path}.type"), &a.kind);
            continue;
        }
        seen_modes.push(mode);
        if a.name.is_empty() {
            errs.required(&format!("{path}.name"), "");
        } else if seen_names.contains(&a.name.as_str()) {
            errs.duplicate(&format!("{path}.name"), &a.name);
        } else if let Err(e) = dns1123_subdomain(&a.name) {
            errs.invalid(&format!("{path}.name"), &a.name, &format!("authorizer name is invalid: {e}"));
        }
        seen_names.push(&a.name);
        let webhook = match (mode, &a.webhook) {
            (Mode::Webhook, None) => {
                errs.required(&format!("{path}.webhook"), "required when type=Webhook");
                continue;
            }
            (Mode::Webhook, Some(w)) => Some(webhook(&path, w, &mut errs)),
            (_, Some(_)) => {
                errs.invalid(&format!("{path}.webhook"), "non-null", "may only be specified when type=Webhook");
                None
            }
            (_, None) => None,
        };
        let expected = mode.as_str().to_ascii_lowercase();
        if mode != Mode::Webhook && a.name != expected && !a.name.is_empty() {
            errs.0.push(format!("expected name {expected} for authorizer {} instead of {}", mode.as_str(), a.name));
        }
        authorizers.push(Entry { mode, name: a.name.clone(), webhook });
    }
    errs.into_result(Config { authorizers })
}

/// Validates one webhook's settings (paths are the authorizer's, as Kubernetes reports them).
fn webhook(path: &str, w: &FileWebhook, errs: &mut FieldErrors) -> WebhookSettings {
    let mut duration = |field: &str, value: &Option<String>, default: Option<Duration>, max: Option<Duration>| -> Duration {
        let parsed = match value.as_deref() {
            None | Some("") | Some("0") | Some("0s") => None,
            Some(v) => match parse_duration(v) {
                Ok(d) => Some(d),
                Err(e) => {
                    errs.invalid(&format!("{path}.{field}"), v, &e);
                    return Duration::ZERO;
                }
            },
        };
        match (parsed.or(default), max) {
            (None, _) => {
                errs.required(&format!("{path}.{field}"), "");
                Duration::ZERO
            }
            (Some(d), Some(max)) if d > max => {
                errs.invalid(&format!("{path}.{field}"), value.as_deref().unwrap_or_default(), "must be > 0s and <= 30s");
                d
            }
            (Some(d), _) => d,
        }
    };
    let timeout = duration("timeout", &w.timeout, None, Some(Duration::from_secs(30)));
    let mut authorized_ttl = duration("authorizedTTL", &w.authorized_ttl, Some(Duration::from_secs(300)), None);
    let mut unauthorized_ttl = duration("unauthorizedTTL", &w.unauthorized_ttl, Some(Duration::from_secs(30)), None);
    if w.cache_authorized_requests == Some(false) {
        authorized_ttl = Duration::ZERO;
    }
    if w.cache_unauthorized_requests == Some(false) {
        unauthorized_ttl = Duration::ZERO;
    }
    match w.subject_access_review_version.as_str() {
        "" => errs.required(&format!("{path}.subjectAccessReviewVersion"), ""),
        "v1" | "v1beta1" => {}
        v => errs.not_supported(&format!("{path}.subjectAccessReviewVersion"), v, "\"v1\", \"v1beta1\""),
    }
    match w.match_condition_subject_access_review_version.as_str() {
        "" if !w.match_conditions.is_empty() => {
            errs.required(&format!("{path}.matchConditionSubjectAccessReviewVersion"), "required if match conditions are specified")
        }
        "" | "v1" => {}
        v => errs.not_supported(&format!("{path}.matchConditionSubjectAccessReviewVersion"), v, "\"v1\""),
    }
    let failure_policy = match w.failure_policy.as_str() {
        "NoOpinion" => FailurePolicy::NoOpinion,
        "Deny" => FailurePolicy::Deny,
        "" => {
            errs.required(&format!("{path}.failurePolicy"), "");
            FailurePolicy::NoOpinion
        }
        v => {
            errs.not_supported(&format!("{path}.failurePolicy"), v, "\"NoOpinion\", \"Deny\"");
            FailurePolicy::NoOpinion
        }
    };
    let file = w.connection_info.kube_config_file.clone();
    let connection = match w.connection_info.kind.as_str() {
        "" => {
            errs.required(&format!("{path}.connectionInfo.type"), "");
            Connection::InClusterConfig
        }
        "InClusterConfig" => {
            if let Some(f) = &file {
                errs.invalid(&format!("{path}.connectionInfo.kubeConfigFile"), f, "can only be set when type=KubeConfigFile");
            }
            Connection::InClusterConfig
        }
        "KubeConfigFile" => {
            let field = format!("{path}.connectionInfo.kubeConfigFile");
            match file.as_deref() {
                None | Some("") => errs.required(&field, ""),
                Some(f) if !f.starts_with('/') => errs.invalid(&field, f, "must be an absolute path"),
                Some(f) => match std::fs::metadata(f) {
                    Err(e) => errs.invalid(&field, f, &format!("error loading file: {e}")),
                    Ok(m) if !m.is_file() => errs.invalid(&field, f, "must be a regular file"),
                    Ok(_) => {}
                },
            }
            Connection::KubeConfigFile(PathBuf::from(file.unwrap_or_default()))
        }
        v => {
            errs.not_supported(&format!("{path}.connectionInfo.type"), v, "\"InClusterConfig\", \"KubeConfigFile\"");
            Connection::InClusterConfig
        }
    };
    let expressions: Vec<String> = w.match_conditions.iter().map(|c| c.expression.clone()).collect();
    if expressions.len() > 64 {
        errs.too_many(&format!("{path}.matchConditions"), expressions.len(), 64);
    } else {
        for (i, e) in expressions.iter().enumerate() {
            let field = format!("{path}.matchConditions[{i}].expression");
            if e.trim().is_empty() {
                errs.required(&field, "");
            } else if expressions[..i].contains(e) {
                errs.duplicate(&field, e);
            } else if let Err(detail) = MatchConditions::compile_one(e) {
                errs.invalid(&field, e, &detail);
            }
        }
    }
    WebhookSettings {
        authorized_ttl,
        unauthorized_ttl,
        timeout,
        sar_version: w.subject_access_review_version.clone(),
        failure_policy,
        connection,
        match_conditions: expressions,
    }
}

/// The configuration the legacy flags describe, checked as kube-apiserver checks them.
pub fn from_flags(args: &AuthorizationOptions) -> Result<Config, String> {
    let modes_flag = args.authorization_mode.as_deref().unwrap_or(DEFAULT_MODES);
    let names: Vec<&str> = modes_flag.split(',').map(str::trim).filter(|m| !m.is_empty()).collect();
    let mut errors = Vec::new();
    if names.is_empty() {
        errors.push("at least one authorization-mode must be passed".to_string());
    }
    let mut authorizers = Vec::new();
    for name in &names {
        let Some(mode) = Mode::parse(name) else {
            errors.push(format!("authorization-mode {name:?} is not a valid mode (supported: {})", Mode::choices()));
            continue;
        };
        if mode == Mode::Abac && args.authorization_policy_file.is_none() {
            errors.push("authorization-mode ABAC's authorization policy file not passed".into());
        }
        let webhook = if mode == Mode::Webhook {
            match &args.authorization_webhook_config_file {
                None => {
                    errors.push("authorization-mode Webhook's authorization config file not passed".into());
                    None
                }
                Some(file) => match legacy_webhook(args, file.clone()) {
                    Ok(w) => Some(w),
                    Err(e) => {
                        errors.push(e);
                        None
                    }
                },
            }
        } else {
            None
        };
        authorizers.push(Entry { mode, name: name.to_ascii_lowercase(), webhook });
    }
    let config = Config { authorizers };
    if args.authorization_policy_file.is_some() && !config.has(Mode::Abac) {
        errors.push("cannot specify --authorization-policy-file without mode ABAC".into());
    }
    if args.authorization_webhook_config_file.is_some() && !config.has(Mode::Webhook) {
        errors.push("cannot specify --authorization-webhook-config-file without mode Webhook".into());
    }
    let mut sorted = names.clone();
    sorted.sort();
    sorted.dedup();
    if sorted.len() != names.len() {
        errors.push(format!("authorization-mode {modes_flag:?} has mode specified more than once"));
    }
    match errors.len() {
        0 => Ok(config),
        1 => Err(errors.remove(0)),
        _ => Err(format!("[{}]", errors.join(", "))),
    }
}

/// The modes a server runs without `--authorization-mode` or `--authorization-config`.
pub const DEFAULT_MODES: &str = "Node,RBAC";

/// The webhook the legacy flags describe: 30 s timeout, no opinion on failure.
fn legacy_webhook(args: &AuthorizationOptions, file: PathBuf) -> Result<WebhookSettings, String> {
    let ttl = |flag: &str, value: &Option<String>, default: u64| match value {
        None => Ok(Duration::from_secs(default)),
        Some(v) => parse_duration(v).map_err(|e| format!("--{flag}: {e}")),
    };
    let version = args.authorization_webhook_version.clone().unwrap_or_else(|| "v1beta1".into());
    if version != "v1" && version != "v1beta1" {
        return Err(format!("--authorization-webhook-version: unsupported version {version:?} (v1 or v1beta1)"));
    }
    Ok(WebhookSettings {
        authorized_ttl: ttl("authorization-webhook-cache-authorized-ttl", &args.authorization_webhook_cache_authorized_ttl, 300)?,
        unauthorized_ttl: ttl("authorization-webhook-cache-unauthorized-ttl", &args.authorization_webhook_cache_unauthorized_ttl, 30)?,
        timeout: Duration::from_secs(30),
        sar_version: version,
        failure_policy: FailurePolicy::NoOpinion,
        connection: Connection::KubeConfigFile(file),
        match_conditions: Vec::new(),
    })
}

/// Whether any of the flags `--authorization-config` excludes is given.
pub fn legacy_flags_set(args: &AuthorizationOptions) -> bool {
    args.authorization_mode.is_some()
        || args.authorization_webhook_config_file.is_some()
        || args.authorization_webhook_version.is_some()
        || args.authorization_webhook_cache_authorized_ttl.is_some()
        || args.authorization_webhook_cache_unauthorized_ttl.is_some()
}

/// Kubernetes' DNS-1123 subdomain rule for names.
fn dns1123_subdomain(name: &str) -> Result<(), String> {
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if name.len() > 253 {
        return Err("must be no more than 253 characters".into());
    }
    if !name.split('.').all(label_ok) {
        return Err(machinery::meta::DNS1123_SUBDOMAIN.into());
    }
    Ok(())
}

#[cfg(test)]
mod tests;
