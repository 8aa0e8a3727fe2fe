//! The PodSecurity plugin's configuration from `--admission-control-config-file`: a
//! `PodSecurityConfiguration` (`pod-security.admission.config.k8s.io/v1`, or its `v1beta1` and
//! `v1alpha1`) with the default policy of namespaces without labels and the exempt users,
//! runtime classes and namespaces. Without one, every mode defaults to `privileged:latest`.

use std::collections::HashSet;

use serde_json::Value;

use access::authz::rbac::aggregate;
use machinery::meta;

use super::levels::{Level, LevelVersion, Policy, Version, LEVEL_PROBLEM, VERSION_PROBLEM};

const GROUP: &str = "pod-security.admission.config.k8s.io";
const VERSIONS: &[&str] = &["v1", "v1beta1", "v1alpha1"];

/// The defaults and exemptions.
#[derive(Debug, Clone, PartialEq)]
pub struct Configuration {
    pub defaults: Policy,
    pub usernames: HashSet<String>,
    pub namespaces: HashSet<String>,
    pub runtime_classes: HashSet<String>,
}

impl Default for Configuration {
    fn default() -> Configuration {
        Configuration { defaults: Policy::PRIVILEGED, usernames: HashSet::new(), namespaces: HashSet::new(), runtime_classes: HashSet::new() }
    }
}

impl Configuration {
    /// Reads the plugin's configuration (none: the defaults); an error lists every problem.
    pub fn load(config: Option<&Value>) -> Result<Configuration, String> {
        let Some(config) = config else { return Ok(Configuration::default()) };
        let api_version = config["apiVersion"].as_str().unwrap_or_default();
        let versioned = api_version.split_once('/').is_some_and(|(g, v)| g == GROUP && VERSIONS.contains(&v));
        if config["kind"] != "PodSecurityConfiguration" || !versioned {
            return Err(format!("expected a PodSecurityConfiguration of {GROUP}/v1, not kind {} of {api_version:?}", config["kind"]));
        }
        let mut problems = Vec::new();
        let mut mode = |mode: &str| {
            let field = |name: &str| config["defaults"][name].as_str().filter(|v| !v.is_empty());
            let level = field(mode).unwrap_or("privileged");
            let version_key = format!("{mode}-version");
            let version = field(&version_key).unwrap_or("latest");
            let level = Level::parse(level).unwrap_or_else(|fallback| {
                problems.push(format!("defaults.{mode}: Invalid value: {level:?}: {LEVEL_PROBLEM}"));
                fallback
            });
            let version = Version::parse(version).unwrap_or_else(|latest| {
                problems.push(format!("defaults.{version_key}: Invalid value: {version:?}: {VERSION_PROBLEM}"));
                latest
            });
            LevelVersion { level, version }
        };
        let defaults = Policy { enforce: mode("enforce"), warn: mode("warn"), audit: mode("audit") };
        let namespaces = exemptions(config, "namespaces", &mut problems, |ns| meta::is_dns_label(ns, 63, false), meta::DNS1123_LABEL);
        let runtime_classes = exemptions(config, "runtimeClasses", &mut problems, meta::is_dns_subdomain, meta::DNS1123_SUBDOMAIN);
        let usernames = exemptions(config, "usernames", &mut problems, |u| !u.is_empty(), "username must not be empty");
        match problems.is_empty() {
            true => Ok(Configuration { defaults, usernames, namespaces, runtime_classes }),
            false => Err(aggregate(&problems)),
        }
    }
}

/// One list of exemptions: each value valid, none repeated.
fn exemptions(config: &Value, list: &str, problems: &mut Vec<String>, valid: impl Fn(&str) -> bool, why: &str) -> HashSet<String> {
    let mut found = HashSet::new();
    for (i, value) in config["exemptions"][list].as_array().into_iter().flatten().enumerate() {
        let value = value.as_str().unwrap_or_default();
        if !valid(value) {
            problems.push(format!("exemptions.{list}[{i}]: Invalid value: {value:?}: {why}"));
        } else if !found.insert(value.to_string()) {
            problems.push(format!("exemptions.{list}[{i}]: Duplicate value: {value:?}"));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_and_exemptions() {
        assert_eq!(Configuration::load(None).unwrap(), Configuration::default());
        let config = json!({
            "apiVersion": "pod-security.admission.config.k8s.io/v1", "kind": "PodSecurityConfiguration",
            "defaults": {"enforce": "baseline", "warn": "restricted", "warn-version": "v1.30"},
            "exemptions": {"namespaces": ["kube-system"], "usernames": ["ci"], "runtimeClasses": ["kata"]},
        });
        let c = Configuration::load(Some(&config)).unwrap();
        assert_eq!(c.defaults.enforce, LevelVersion { level: Level::Baseline, version: Version::Latest });
        assert_eq!(c.defaults.warn, LevelVersion { level: Level::Restricted, version: Version::Minor(30) });
        assert_eq!(c.defaults.audit, LevelVersion::PRIVILEGED);
        assert!(c.namespaces.contains("kube-system") && c.usernames.contains("ci") && c.runtime_classes.contains("kata"));
    }

    #[test]
    fn problems_are_refused() {
        let config = json!({
            "apiVersion": "pod-security.admission.config.k8s.io/v1beta1", "kind": "PodSecurityConfiguration",
            "defaults": {"enforce": "strict", "audit-version": "1.2"},
            "exemptions": {"namespaces": ["a", "a", "Not_A_Name"], "usernames": [""]},
        });
        let e = Configuration::load(Some(&config)).unwrap_err();
        assert!(e.contains("defaults.enforce: Invalid value: \"strict\"") && e.contains("defaults.audit-version: Invalid value: \"1.2\""), "{e}");
        assert!(e.contains("exemptions.namespaces[1]: Duplicate value: \"a\"") && e.contains("exemptions.namespaces[2]: Invalid value: \"Not_A_Name\""), "{e}");
        assert!(e.contains("exemptions.usernames[0]: Invalid value: \"\": username must not be empty"), "{e}");
        assert!(Configuration::load(Some(&json!({"apiVersion": "v1", "kind": "PodSecurityConfiguration"}))).is_err());
    }
}
