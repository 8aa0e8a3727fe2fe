//! The Pod Security Standards' checks, as Kubernetes 1.36 has them: each check with its level and
//! the versions of it that apply from a policy version on (a restricted check may replace a
//! baseline one from its version). The table keeps Kubernetes' order (baseline checks by id,
//! then restricted ones by id), which is the order of the reasons in a refusal. The checks read
//! a pod spec as JSON, grouped by what they look at (one file each).

mod host;
mod privileges;
mod profiles;
mod sysctls;
mod volumes;

use std::collections::BTreeSet;

use serde_json::Value;

use super::levels::Level;
use Exempt::{UserNamespaces, Windows};
use Level::{Baseline, Restricted};

/// The pod (or pod template) under evaluation.
#[derive(Clone, Copy)]
pub struct Pod<'a> {
    pub metadata: &'a Value,
    pub spec: &'a Value,
}

impl<'a> Pod<'a> {
    /// Init containers, containers and ephemeral containers, in that order.
    fn containers(&self) -> impl Iterator<Item = &'a Value> {
        let spec = self.spec;
        ["initContainers", "containers", "ephemeralContainers"].into_iter().flat_map(move |k| spec[k].as_array().into_iter().flatten())
    }

    /// The names of the containers for which `bad` holds.
    fn containers_where(&self, mut bad: impl FnMut(&Value) -> bool) -> Vec<&'a str> {
        self.containers().filter(|c| bad(c)).map(name).collect()
    }

    /// The pod-level security context.
    fn security(&self) -> &'a Value {
        &self.spec["securityContext"]
    }
}

fn name(container: &Value) -> &str {
    container["name"].as_str().unwrap_or_default()
}

/// Why a check refuses a pod: a short reason, and what in the pod it objects to (may be empty).
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    pub reason: &'static str,
    pub detail: String,
}

pub type CheckFn = fn(&Pod) -> Option<Violation>;

/// Pods a version of a check lets through whatever they hold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Exempt {
    Nothing,
    /// Windows pods (`spec.os.name: windows`), which cannot set the field checked.
    Windows,
    /// Pods in a user namespace (`spec.hostUsers: false`).
    UserNamespaces,
}

/// One version of a check.
pub struct Versioned {
    /// The first policy version (`v1.<since>`) it applies to.
    pub since: u64,
    check: CheckFn,
    exempt: Exempt,
    /// The baseline checks it replaces in the restricted level.
    pub overrides: &'static [&'static str],
}

impl Versioned {
    const fn from(since: u64, check: CheckFn) -> Versioned {
        Versioned { since, check, exempt: Exempt::Nothing, overrides: &[] }
    }

    const fn exempting(self, exempt: Exempt) -> Versioned {
        Versioned { exempt, ..self }
    }

    const fn overriding(self, overrides: &'static [&'static str]) -> Versioned {
        Versioned { overrides, ..self }
    }

    /// Runs this version of the check.
    pub fn check(&self, pod: &Pod) -> Option<Violation> {
        let exempt = match self.exempt {
            Exempt::Nothing => false,
            Exempt::Windows => pod.spec["os"]["name"] == "windows",
            Exempt::UserNamespaces => pod.spec["hostUsers"] == false,
        };
        if exempt { None } else { (self.check)(pod) }
    }
}

pub struct Check {
    pub id: &'static str,
    pub level: Level,
    /// By increasing version.
    pub versions: &'static [Versioned],
}

impl Check {
    /// The version of the check that applies at policy version `v1.<minor>`, if any does yet.
    pub fn at(&self, minor: u64) -> Option<&Versioned> {
        self.versions.iter().rev().find(|v| v.since <= minor)
    }
}

const fn check(id: &'static str, level: Level, versions: &'static [Versioned]) -> Check {
    Check { id, level, versions }
}

/// Every check, baseline then restricted, each by id.
pub const CHECKS: &[Check] = &[
    check("appArmorProfile", Baseline, &[Versioned::from(0, profiles::app_armor)]),
    check("capabilities_baseline", Baseline, &[Versioned::from(0, privileges::capabilities_baseline)]),
    check("hostNamespaces", Baseline, &[Versioned::from(0, host::namespaces)]),
    check("hostPathVolumes", Baseline, &[Versioned::from(0, volumes::host_path)]),
    check("hostPorts", Baseline, &[Versioned::from(0, host::ports)]),
    check("hostProbesAndHostLifecycle", Baseline, &[Versioned::from(34, host::probe_and_lifecycle_hosts)]),
    check("privileged", Baseline, &[Versioned::from(0, privileges::privileged)]),
    check("procMount", Baseline, &[Versioned::from(0, profiles::proc_mount), Versioned::from(35, profiles::proc_mount).exempting(UserNamespaces)]),
    check("seLinuxOptions", Baseline, &[Versioned::from(0, profiles::se_linux::<0>), Versioned::from(31, profiles::se_linux::<31>)]),
    check("seccompProfile_baseline", Baseline, &[Versioned::from(0, profiles::seccomp_annotations), Versioned::from(19, profiles::seccomp_baseline)]),
    check(
        "sysctls",
        Baseline,
        &[Versioned::from(0, sysctls::sysctls::<0>), Versioned::from(27, sysctls::sysctls::<27>), Versioned::from(29, sysctls::sysctls::<29>), Versioned::from(32, sysctls::sysctls::<32>)],
    ),
    check("windowsHostProcess", Baseline, &[Versioned::from(0, host::windows_host_process)]),
    check("allowPrivilegeEscalation", Restricted, &[Versioned::from(8, privileges::privilege_escalation), Versioned::from(25, privileges::privilege_escalation).exempting(Windows)]),
    check(
        "capabilities_restricted",
        Restricted,
        &[
            Versioned::from(22, privileges::capabilities_restricted).overriding(&["capabilities_baseline"]),
            Versioned::from(25, privileges::capabilities_restricted).exempting(Windows).overriding(&["capabilities_baseline"]),
        ],
    ),
    // From 1.35 baseline lets pods in a user namespace unmask /proc; restricted never does.
    check("procMount_restricted", Restricted, &[Versioned::from(35, profiles::proc_mount).overriding(&["procMount"])]),
    check("restrictedVolumes", Restricted, &[Versioned::from(0, volumes::restricted).overriding(&["hostPathVolumes"])]),
    check("runAsNonRoot", Restricted, &[Versioned::from(0, privileges::run_as_non_root), Versioned::from(35, privileges::run_as_non_root).exempting(UserNamespaces)]),
    check("runAsUser", Restricted, &[Versioned::from(23, privileges::run_as_user), Versioned::from(35, privileges::run_as_user).exempting(UserNamespaces)]),
    check(
        "seccompProfile_restricted",
        Restricted,
        &[
            Versioned::from(19, profiles::seccomp_restricted).overriding(&["seccompProfile_baseline"]),
            Versioned::from(25, profiles::seccomp_restricted).exempting(Windows).overriding(&["seccompProfile_baseline"]),
        ],
    ),
];

/// The newest policy version any check has; `latest` and newer versions evaluate as this one.
pub const NEWEST: u64 = 35;

fn pluralize(singular: &'static str, plural: &'static str, count: usize) -> &'static str {
    if count == 1 { singular } else { plural }
}

/// `"a", "b"`.
fn join_quote<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> String {
    items.into_iter().map(|s| format!("\"{}\"", s.as_ref())).collect::<Vec<_>>().join(", ")
}

/// `container "a"` or `containers "a", "b"`.
fn containers(names: &[&str]) -> String {
    format!("{} {}", pluralize("container", "containers", names.len()), join_quote(names))
}

/// Who set a forbidden value: `pod`, then the containers, joined with ` and `.
fn setters(pod: bool, bad_containers: &[&str]) -> Vec<String> {
    let mut setters = Vec::new();
    if pod {
        setters.push("pod".to_string());
    }
    if !bad_containers.is_empty() {
        setters.push(containers(bad_containers));
    }
    setters
}

/// Sorted, without repeats (Kubernetes' string sets list themselves so).
type Set = BTreeSet<String>;

fn strings(v: &Value) -> impl Iterator<Item = &str> {
    v.as_array().into_iter().flatten().map(|s| s.as_str().unwrap_or_default())
}

#[cfg(test)]
mod tests;
