//! A pod evaluated against one level and version: the checks of that level as they stood at that
//! version (a restricted evaluation includes the baseline checks no restricted check replaces),
//! in Kubernetes' order, and the reasons of those that refuse it as Kubernetes words them.

use super::checks::{Pod, Violation, CHECKS, NEWEST};
use super::levels::{Level, LevelVersion, Version};

/// The checks that refuse a pod (none: allowed).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Verdict {
    pub violations: Vec<Violation>,
}

impl Verdict {
    pub fn allowed(&self) -> bool {
        self.violations.is_empty()
    }

    /// The reasons alone: `host namespaces, privileged`.
    pub fn reasons(&self) -> String {
        self.violations.iter().map(|v| v.reason).collect::<Vec<_>>().join(", ")
    }

    /// The reasons with their details: `host namespaces (hostNetwork=true), privileged (...)`.
    pub fn details(&self) -> String {
        let each = self.violations.iter().map(|v| match v.detail.is_empty() {
            true => v.reason.to_string(),
            false => format!("{} ({})", v.reason, v.detail),
        });
        each.collect::<Vec<_>>().join(", ")
    }
}

/// Evaluates `pod` at `lv`; versions newer than any check's (and `latest`) are the newest.
pub fn evaluate(lv: LevelVersion, pod: &Pod) -> Verdict {
    if lv.level == Level::Privileged {
        return Verdict::default();
    }
    let minor = match lv.version {
        Version::Latest => NEWEST,
        Version::Minor(m) => m.min(NEWEST),
    };
    let applicable = CHECKS.iter().filter(|c| c.level <= lv.level).filter_map(|c| Some((c, c.at(minor)?)));
    let overridden: Vec<&str> = applicable.clone().flat_map(|(_, v)| v.overrides.iter().copied()).collect();
    let violations = applicable.filter(|(c, _)| !overridden.contains(&c.id)).filter_map(|(_, v)| v.check(pod)).collect();
    Verdict { violations }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn details(level: Level, version: Version, pod: &Value) -> String {
        evaluate(LevelVersion { level, version }, &Pod { metadata: &pod["metadata"], spec: &pod["spec"] }).details()
    }

    #[test]
    fn restricted_lists_baseline_then_restricted_reasons() {
        let pod = json!({"spec": {"hostPID": true, "containers": [{"name": "c", "image": "nginx"}]}});
        assert_eq!(
            details(Level::Restricted, Version::Latest, &pod),
            "host namespaces (hostPID=true), allowPrivilegeEscalation != false (container \"c\" must set securityContext.allowPrivilegeEscalation=false), \
             unrestricted capabilities (container \"c\" must set securityContext.capabilities.drop=[\"ALL\"]), \
             runAsNonRoot != true (pod or container \"c\" must set securityContext.runAsNonRoot=true), \
             seccompProfile (pod or container \"c\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"
        );
        assert_eq!(details(Level::Baseline, Version::Latest, &pod), "host namespaces (hostPID=true)");
        assert!(evaluate(LevelVersion::PRIVILEGED, &Pod { metadata: &pod["metadata"], spec: &pod["spec"] }).allowed());
    }

    #[test]
    fn the_version_picks_the_checks() {
        // runAsUser=0 is refused from 1.23, and capabilities are restricted from 1.22.
        let pod = json!({"spec": {"securityContext": {"runAsNonRoot": true, "runAsUser": 0, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "c", "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"add": ["SYS_TIME"]}}}]}});
        assert_eq!(details(Level::Restricted, Version::Minor(21), &pod), "non-default capabilities (container \"c\" must not include \"SYS_TIME\" in securityContext.capabilities.add)");
        assert_eq!(
            details(Level::Restricted, Version::Minor(23), &pod),
            "unrestricted capabilities (container \"c\" must set securityContext.capabilities.drop=[\"ALL\"]; container \"c\" must not include \"SYS_TIME\" in securityContext.capabilities.add), runAsUser=0 (pod must not set runAsUser=0)"
        );
        // A version newer than any check is the newest; seccomp annotations count before 1.19.
        assert_eq!(details(Level::Restricted, Version::Minor(99), &pod), details(Level::Restricted, Version::Latest, &pod));
        let annotated = json!({"metadata": {"annotations": {"seccomp.security.alpha.kubernetes.io/pod": "unconfined"}}, "spec": {"containers": [{"name": "c"}]}});
        assert_eq!(details(Level::Baseline, Version::Minor(18), &annotated), "seccompProfile (forbidden annotation seccomp.security.alpha.kubernetes.io/pod=\"unconfined\")");
        assert_eq!(details(Level::Baseline, Version::Minor(19), &annotated), "");
    }
}
