//! A namespace's Pod Security labels (`pod-security.kubernetes.io/<mode>` and
//! `<mode>-version`) read into its policy over the configured defaults, with Kubernetes'
//! fallbacks for values that name nothing: an invalid enforce level enforces `restricted`, an
//! invalid audit or warn level is `privileged`, an invalid version is `latest`.

use serde_json::{Map, Value};

use machinery::error::Cause;

use super::levels::{Level, Policy, Version, LEVEL_PROBLEM, VERSION_PROBLEM};

pub const ENFORCE: &str = "pod-security.kubernetes.io/enforce";
pub const ENFORCE_VERSION: &str = "pod-security.kubernetes.io/enforce-version";
pub const AUDIT: &str = "pod-security.kubernetes.io/audit";
pub const AUDIT_VERSION: &str = "pod-security.kubernetes.io/audit-version";
pub const WARN: &str = "pod-security.kubernetes.io/warn";
pub const WARN_VERSION: &str = "pod-security.kubernetes.io/warn-version";

type Labels = Map<String, Value>;

/// The policy `labels` give over `defaults`, and the labels' problems in Kubernetes' order
/// (always a usable policy).
pub fn policy(labels: Option<&Labels>, defaults: &Policy) -> (Policy, Vec<Cause>) {
    let mut p = *defaults;
    let mut problems = Vec::new();
    let Some(labels) = labels.filter(|l| !l.is_empty()) else { return (p, problems) };
    let enforce_level = level(labels, ENFORCE, &mut problems);
    if let Some(l) = enforce_level {
        p.enforce.level = l.unwrap_or_else(|fallback| fallback);
    }
    if let Some(v) = version(labels, ENFORCE_VERSION, &mut problems) {
        p.enforce.version = v;
    }
    // Audit and warn fail open.
    if let Some(l) = level(labels, AUDIT, &mut problems) {
        p.audit.level = l.unwrap_or(Level::Privileged);
    }
    if let Some(v) = version(labels, AUDIT_VERSION, &mut problems) {
        p.audit.version = v;
    }
    let warn_level = level(labels, WARN, &mut problems);
    if let Some(l) = warn_level {
        p.warn.level = l.unwrap_or(Level::Privileged);
    }
    let warn_version = version(labels, WARN_VERSION, &mut problems);
    if let Some(v) = warn_version {
        p.warn.version = v;
    }
    // A valid enforce level stricter than warn's, with no warn level of its own, is warned
    // about too (at its version, unless warn has one).
    if warn_level.is_none() && matches!(enforce_level, Some(Ok(_))) && p.enforce.level > p.warn.level {
        p.warn.level = p.enforce.level;
        if warn_version.is_none() {
            p.warn.version = p.enforce.version;
        }
    }
    (p, problems)
}

fn value<'a>(labels: &'a Labels, key: &str) -> Option<&'a str> {
    labels.get(key).map(|v| v.as_str().unwrap_or_default())
}

fn level(labels: &Labels, key: &str, problems: &mut Vec<Cause>) -> Option<Result<Level, Level>> {
    let value = value(labels, key)?;
    let parsed = Level::parse(value);
    if parsed.is_err() {
        problems.push(Cause::invalid(format!("metadata.labels[{key}]"), value, LEVEL_PROBLEM));
    }
    Some(parsed)
}

fn version(labels: &Labels, key: &str, problems: &mut Vec<Cause>) -> Option<Version> {
    let value = value(labels, key)?;
    Some(Version::parse(value).unwrap_or_else(|latest| {
        problems.push(Cause::invalid(format!("metadata.labels[{key}]"), value, VERSION_PROBLEM));
        latest
    }))
}

/// Whether `labels` set a mode's level or version (`mode` being its level label).
pub fn sets_mode(labels: Option<&Labels>, mode: &str) -> bool {
    labels.is_some_and(|l| l.contains_key(mode) || l.contains_key(&format!("{mode}-version")))
}

#[cfg(test)]
mod tests {
    use super::super::levels::LevelVersion;
    use super::*;
    use serde_json::json;

    fn read(labels: Value) -> (Policy, Vec<String>) {
        let (p, problems) = policy(labels.as_object(), &Policy::PRIVILEGED);
        (p, problems.into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect())
    }

    const fn lv(level: Level, version: Version) -> LevelVersion {
        LevelVersion { level, version }
    }

    #[test]
    fn enforce_sets_warn_unless_warn_is_given() {
        let (p, problems) = read(json!({ENFORCE: "restricted", ENFORCE_VERSION: "v1.24"}));
        assert!(problems.is_empty());
        assert_eq!(p.enforce, lv(Level::Restricted, Version::Minor(24)));
        assert_eq!(p.warn, lv(Level::Restricted, Version::Minor(24)));
        assert_eq!(p.audit, LevelVersion::PRIVILEGED);
        let (p, _) = read(json!({ENFORCE: "baseline", WARN_VERSION: "v1.20"}));
        assert_eq!(p.warn, lv(Level::Baseline, Version::Minor(20)));
        let (p, _) = read(json!({ENFORCE: "restricted", WARN: "baseline"}));
        assert_eq!(p.warn, lv(Level::Baseline, Version::Latest));
    }

    #[test]
    fn invalid_values_fail_closed_for_enforce_and_open_otherwise() {
        let (p, problems) = read(json!({ENFORCE: "strict", AUDIT: "nope", WARN: "x", WARN_VERSION: "v2"}));
        assert_eq!(p.enforce.level, Level::Restricted);
        assert_eq!(p.audit.level, Level::Privileged);
        assert_eq!(p.warn, LevelVersion::PRIVILEGED, "an invalid enforce level is not warned about");
        assert_eq!(
            problems,
            [
                "metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: \"strict\": must be one of privileged, baseline, restricted",
                "metadata.labels[pod-security.kubernetes.io/audit]: Invalid value: \"nope\": must be one of privileged, baseline, restricted",
                "metadata.labels[pod-security.kubernetes.io/warn]: Invalid value: \"x\": must be one of privileged, baseline, restricted",
                "metadata.labels[pod-security.kubernetes.io/warn-version]: Invalid value: \"v2\": must be \"latest\" or \"v1.x\"",
            ]
        );
    }
}
