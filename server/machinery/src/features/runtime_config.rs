//! `--runtime-config`: which built-in group versions and resources are served, with
//! kube-apiserver 1.36's keys (`api/all`, `api/ga`, `api/beta`, `api/alpha`, `GROUP/VERSION`,
//! `GROUP/VERSION/RESOURCE`, `v1` for the core group), precedence and refusals. A version
//! switched off leaves discovery, OpenAPI and routing; its objects stay readable through the
//! versions still served, as they share their storage.

use std::collections::BTreeMap;

/// Every group version kube-apiserver 1.36 registers, with its place in the default
/// configuration: `Some(on)` for the versions the defaults name (which the `api/*` keys
/// switch), `None` for versions registered without storage (accepted, serving nothing).
const REGISTERED: &[(&str, &str, Option<bool>)] = &[
    ("", "v1", Some(true)),
    ("admissionregistration.k8s.io", "v1", Some(true)),
    ("admissionregistration.k8s.io", "v1beta1", Some(false)),
    ("admissionregistration.k8s.io", "v1alpha1", Some(false)),
    ("apiextensions.k8s.io", "v1", Some(true)),
    ("apiextensions.k8s.io", "v1beta1", Some(true)),
    ("apiregistration.k8s.io", "v1", Some(true)),
    ("apiregistration.k8s.io", "v1beta1", Some(true)),
    ("apps", "v1", Some(true)),
    ("apps", "v1beta1", None),
    ("apps", "v1beta2", None),
    ("authentication.k8s.io", "v1", Some(true)),
    ("authentication.k8s.io", "v1beta1", Some(false)),
    ("authentication.k8s.io", "v1alpha1", Some(false)),
    ("authorization.k8s.io", "v1", Some(true)),
    ("authorization.k8s.io", "v1beta1", None),
    ("autoscaling", "v1", Some(true)),
    ("autoscaling", "v2", Some(true)),
    ("batch", "v1", Some(true)),
    ("batch", "v1beta1", None),
    ("certificates.k8s.io", "v1", Some(true)),
    ("certificates.k8s.io", "v1beta1", Some(false)),
    ("certificates.k8s.io", "v1alpha1", Some(false)),
    ("coordination.k8s.io", "v1", Some(true)),
    ("coordination.k8s.io", "v1beta1", Some(false)),
    ("coordination.k8s.io", "v1alpha2", Some(false)),
    ("discovery.k8s.io", "v1", Some(true)),
    ("discovery.k8s.io", "v1beta1", None),
    ("events.k8s.io", "v1", Some(true)),
    ("events.k8s.io", "v1beta1", None),
    ("extensions", "v1beta1", None),
    ("flowcontrol.apiserver.k8s.io", "v1", Some(true)),
    ("flowcontrol.apiserver.k8s.io", "v1beta1", Some(false)),
    ("flowcontrol.apiserver.k8s.io", "v1beta2", Some(false)),
    ("flowcontrol.apiserver.k8s.io", "v1beta3", Some(false)),
    ("internal.apiserver.k8s.io", "v1alpha1", Some(false)),
    ("networking.k8s.io", "v1", Some(true)),
    ("networking.k8s.io", "v1beta1", Some(false)),
    ("node.k8s.io", "v1", Some(true)),
    ("node.k8s.io", "v1alpha1", None),
    ("node.k8s.io", "v1beta1", None),
    ("policy", "v1", Some(true)),
    ("policy", "v1beta1", None),
    ("rbac.authorization.k8s.io", "v1", Some(true)),
    ("rbac.authorization.k8s.io", "v1alpha1", None),
    ("rbac.authorization.k8s.io", "v1beta1", None),
    ("resource.k8s.io", "v1", Some(true)),
    ("resource.k8s.io", "v1beta2", Some(false)),
    ("resource.k8s.io", "v1beta1", Some(false)),
    ("resource.k8s.io", "v1alpha3", Some(false)),
    ("scheduling.k8s.io", "v1", Some(true)),
    ("scheduling.k8s.io", "v1beta1", None),
    ("scheduling.k8s.io", "v1alpha2", Some(false)),
    ("storage.k8s.io", "v1", Some(true)),
    ("storage.k8s.io", "v1beta1", Some(false)),
    ("storage.k8s.io", "v1alpha1", Some(false)),
    ("storagemigration.k8s.io", "v1beta1", Some(false)),
    ("admission.k8s.io", "v1", None),
    ("admission.k8s.io", "v1beta1", None),
    ("imagepolicy.k8s.io", "v1alpha1", None),
];

/// The four switches of whole stages, applied in this order before any named version.
const WILDCARDS: &[&str] = &["api/all", "api/ga", "api/beta", "api/alpha"];

/// A group version as `GroupVersion.String()` prints it (`v1` for the core group).
fn gv_string(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

/// `v1`, `v1beta1`, `v1alpha1`: the stage a version string names (`None` for other forms).
fn stage_of(version: &str) -> Option<&'static str> {
    let rest = version.strip_prefix('v')?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let (number, tail) = rest.split_at(digits);
    if number.is_empty() {
        return None;
    }
    let tail_number = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    match tail {
        "" => Some("api/ga"),
        t if t.strip_prefix("beta").is_some_and(tail_number) => Some("api/beta"),
        t if t.strip_prefix("alpha").is_some_and(tail_number) => Some("api/alpha"),
        _ => None,
    }
}

/// What `--runtime-config` made of the defaults.
#[derive(Debug, Default, Clone)]
pub struct RuntimeConfig {
    /// Group versions switched by name or by a stage (absent: the default, or not served).
    versions: BTreeMap<(String, String), bool>,
    /// Resources switched by name; these win over their version.
    resources: BTreeMap<(String, String, String), bool>,
    /// Group versions the flag names on (`GROUP/VERSION=true`, not through `api/*`).
    named_versions: std::collections::BTreeSet<(String, String)>,
}

impl RuntimeConfig {
    /// Reads the flag with kube-apiserver's rewriting (`v1`, `api/v1`, `v1/...` name the core
    /// group's version; `api/legacy` is ignored), validation and precedence.
    /// `priority_and_fairness` is `--enable-priority-and-fairness`, which needs flowcontrol v1.
    pub fn parse(flag: &str, priority_and_fairness: bool) -> Result<RuntimeConfig, String> {
        let mut items: BTreeMap<String, String> = BTreeMap::new();
        for item in flag.split(',').filter(|i| !i.is_empty()) {
            let (key, value) = item.split_once('=').unwrap_or((item, ""));
            let (key, value) = (key.trim(), value.trim());
            let key = if key == "v1" || key.starts_with("v1/") || key == "api/v1" || key.starts_with("api/v1/") { "/v1" } else { key };
            if key != "api/legacy" {
                items.insert(key.to_string(), value.to_string());
            }
        }
        let mut errors = Vec::new();
        if priority_and_fairness {
            let joined = items.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",");
            for key in ["flowcontrol.apiserver.k8s.io/v1", "api/ga", "api/all"] {
                if joined.contains(&format!("{key}=true")) {
                    break;
                }
                if joined.contains(&format!("{key}=false")) {
                    errors.push(format!("--runtime-config={key}=false conflicts with --enable-priority-and-fairness=true"));
                    break;
                }
            }
        }
        if items.len() == 1 && items.get("api/all").is_some_and(|v| v == "false") {
            errors.push("invalid runtime-config with only api/all=false".to_string());
        }
        let mut unknown_groups = Vec::new();
        let mut parsed = Vec::new();
        for (key, value) in &items {
            if WILDCARDS.contains(&key.as_str()) {
                continue;
            }
            let tokens: Vec<&str> = key.split('/').collect();
            if tokens.len() < 2 || tokens.len() > 3 {
                errors.push(format!("runtime-config invalid key {key}"));
                continue;
            }
            if !REGISTERED.iter().any(|(g, _, _)| *g == tokens[0]) {
                unknown_groups.push(gv_string(tokens[0], tokens[1]));
                continue;
            }
            parsed.push((tokens, value));
        }
        if !unknown_groups.is_empty() {
            unknown_groups.sort();
            errors.push(format!("unknown api groups {}", unknown_groups.join(",")));
        }
        if !errors.is_empty() {
            return Err(join(errors));
        }
        let mut config = RuntimeConfig::default();
        for (g, v, default) in REGISTERED {
            if let Some(on) = default {
                config.versions.insert((g.to_string(), v.to_string()), *on);
            }
        }
        for wildcard in WILDCARDS {
            let Some(value) = items.get(*wildcard) else { continue };
            let on = match value.as_str() {
                "true" => true,
                "false" => false,
                _ => return Err(format!("invalid value {wildcard}={value}")),
            };
            for ((_, version), setting) in config.versions.iter_mut() {
                if *wildcard == "api/all" || stage_of(version) == Some(*wildcard) {
                    *setting = on;
                }
            }
        }
        for (tokens, value) in parsed {
            let (group, version) = (tokens[0], tokens[1]);
            if !REGISTERED.iter().any(|(g, v, _)| *g == group && *v == version) {
                return Err(format!("group version {} that has not been registered", gv_string(group, version)));
            }
            let on = match value.as_str() {
                "" => true,
                v => go_bool(v).ok_or_else(|| format!("invalid value of {}: {v}, err: strconv.ParseBool: parsing {v:?}: invalid syntax", tokens.join("/")))?,
            };
            match tokens.get(2) {
                None => {
                    config.versions.insert((group.into(), version.into()), on);
                    config.resources.retain(|(g, v, _), _| g != group || v != version);
                    match on {
                        true => config.named_versions.insert((group.into(), version.into())),
                        false => config.named_versions.remove(&(group.into(), version.into())),
                    };
                }
                Some(resource) if resource.to_lowercase() != *resource => {
                    return Err(format!("invalid key {}: group/version/resource and resource is always lowercase plural, not {resource:?}", tokens.join("/")));
                }
                Some(resource) => {
                    config.resources.insert((group.into(), version.into(), resource.to_string()), on);
                }
            }
        }
        Ok(config)
    }

    /// Whether `resource` of `group`/`version` is served by this configuration.
    pub fn serves(&self, group: &str, version: &str, resource: &str) -> bool {
        match self.resources.get(&(group.to_string(), version.to_string(), resource.to_string())) {
            Some(on) => *on,
            None => self.versions.get(&(group.to_string(), version.to_string())).copied().unwrap_or(false),
        }
    }

    /// Whether the flag names this resource on.
    pub fn names_enabled(&self, group: &str, version: &str, resource: &str) -> bool {
        self.resources.get(&(group.to_string(), version.to_string(), resource.to_string())) == Some(&true)
    }

    /// Whether the flag names this group version on (`GROUP/VERSION=true`).
    pub fn names_version_enabled(&self, group: &str, version: &str) -> bool {
        self.named_versions.contains(&(group.to_string(), version.to_string()))
    }

    /// The configuration without a flag.
    pub fn defaults() -> RuntimeConfig {
        RuntimeConfig::parse("", false).unwrap_or_default()
    }
}

/// Go's `strconv.ParseBool`.
pub(super) fn go_bool(value: &str) -> Option<bool> {
    match value {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
        _ => None,
    }
}

/// Several errors as Go's aggregate prints them.
pub(super) fn join(errors: Vec<String>) -> String {
    if errors.len() == 1 {
        errors.into_iter().next().unwrap_or_default()
    } else {
        format!("[{}]", errors.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_serve_ga_versions_only() {
        let c = RuntimeConfig::defaults();
        assert!(c.serves("", "v1", "pods") && c.serves("apps", "v1", "deployments"));
        assert!(!c.serves("admissionregistration.k8s.io", "v1beta1", "mutatingadmissionpolicies"));
        assert!(!c.serves("apps", "v1beta1", "deployments"));
    }

    #[test]
    fn precedence_is_stage_then_version_then_resource() {
        let c = RuntimeConfig::parse("api/beta=true,apps/v1=false,apps/v1/deployments=true", true).unwrap();
        assert!(c.serves("admissionregistration.k8s.io", "v1beta1", "mutatingadmissionpolicies"));
        assert!(c.serves("apps", "v1", "deployments") && !c.serves("apps", "v1", "daemonsets"));
        assert!(!c.serves("apps", "v1beta1", "deployments"), "a stage switches only versions of the defaults");
        let c = RuntimeConfig::parse("api/all=false,v1=true,flowcontrol.apiserver.k8s.io/v1=true", true).unwrap();
        assert!(c.serves("", "v1", "pods") && !c.serves("apps", "v1", "deployments"));
        let c = RuntimeConfig::parse("v1/pods=false", false).unwrap();
        assert!(!c.serves("", "v1", "configmaps"), "v1/... names the whole core version, as in Kubernetes");
        let c = RuntimeConfig::parse("/v1/pods=false,admissionregistration.k8s.io/v1beta1", false).unwrap();
        assert!(!c.serves("", "v1", "pods") && c.serves("", "v1", "configmaps"));
        assert!(c.serves("admissionregistration.k8s.io", "v1beta1", "mutatingadmissionpolicies"));
    }

    #[test]
    fn refusals_are_kube_apiserver_s() {
        let err = |flag: &str| RuntimeConfig::parse(flag, true).err().unwrap();
        assert_eq!(err("api/all=false"), "[--runtime-config=api/all=false conflicts with --enable-priority-and-fairness=true, invalid runtime-config with only api/all=false]");
        assert_eq!(err("foo=true"), "runtime-config invalid key foo");
        assert_eq!(err("foo.example.com/v1=true"), "unknown api groups foo.example.com/v1");
        assert_eq!(err("api/beta=yes"), "invalid value api/beta=yes");
        assert_eq!(err("apps/v1=yes"), "invalid value of apps/v1: yes, err: strconv.ParseBool: parsing \"yes\": invalid syntax");
        assert_eq!(err("apps/v1beta3=true"), "group version apps/v1beta3 that has not been registered");
        assert_eq!(err("apps/v1/Deployments=true"), "invalid key apps/v1/Deployments: group/version/resource and resource is always lowercase plural, not \"Deployments\"");
        assert_eq!(err("flowcontrol.apiserver.k8s.io/v1=false"), "--runtime-config=flowcontrol.apiserver.k8s.io/v1=false conflicts with --enable-priority-and-fairness=true");
        assert!(RuntimeConfig::parse("apps/v1/foos=false,api/legacy=false", true).is_ok(), "unknown resources are accepted");
    }
}
