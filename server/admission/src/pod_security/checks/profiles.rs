//! Baseline and restricted checks of the kernel security profiles a pod runs under: AppArmor,
//! SELinux options, seccomp (the alpha annotations before 1.19, the `seccompProfile` fields
//! since) and the `/proc` mount.

use serde_json::Value;

use machinery::expr::quote;

use super::{containers, join_quote, pluralize, setters, Pod, Set, Violation};

const APPARMOR_ANNOTATION_PREFIX: &str = "container.apparmor.security.beta.kubernetes.io/";
const SECCOMP_POD_ANNOTATION: &str = "seccomp.security.alpha.kubernetes.io/pod";
const SECCOMP_CONTAINER_ANNOTATION_PREFIX: &str = "container.seccomp.security.alpha.kubernetes.io/";

/// The SELinux types baseline allows, each from the policy version that added it.
const SE_LINUX_TYPES: &[(&str, u64)] = &[("", 0), ("container_t", 0), ("container_init_t", 0), ("container_kvm_t", 0), ("container_engine_t", 31)];

/// The containers whose security context sets `field` to something `bad` refuses.
fn setting<'a>(pod: &Pod<'a>, field: &str, mut bad: impl FnMut(&Value) -> bool) -> Vec<&'a str> {
    pod.containers_where(|c| {
        let set = &c["securityContext"][field];
        set.is_object() && bad(set)
    })
}

fn profile_type(profile: &Value) -> &str {
    profile["type"].as_str().unwrap_or_default()
}

/// An annotation as Kubernetes prints it: `key="value"`.
fn annotation(key: &str, value: &str) -> String {
    format!("{key}={}", quote(value))
}

/// AppArmor profiles of type `RuntimeDefault` or `Localhost` only, and annotations naming
/// `runtime/default` or a `localhost/` profile.
pub fn app_armor(pod: &Pod) -> Option<Violation> {
    let mut values = Set::new();
    let mut bad = |profile: &Value| {
        let t = profile_type(profile);
        let forbidden = !matches!(t, "RuntimeDefault" | "Localhost");
        if forbidden {
            values.insert(t.to_string());
        }
        forbidden
    };
    let pod_set = pod.security()["appArmorProfile"].is_object() && bad(&pod.security()["appArmorProfile"]);
    let bad_containers = setting(pod, "appArmorProfile", &mut bad);
    let mut setters = setters(pod_set, &bad_containers);
    let mut annotations: Vec<String> = pod.metadata["annotations"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| k.starts_with(APPARMOR_ANNOTATION_PREFIX))
        .map(|(k, v)| (k, v.as_str().unwrap_or_default()))
        .filter(|(_, v)| !(v.is_empty() || *v == "runtime/default" || v.starts_with("localhost/")))
        .map(|(k, v)| annotation(k, v))
        .collect();
    let mut values: Vec<String> = values.into_iter().collect();
    if !annotations.is_empty() {
        annotations.sort();
        setters.push(pluralize("annotation", "annotations", annotations.len()).to_string());
        values.extend(annotations);
    }
    (!setters.is_empty()).then(|| Violation {
        reason: pluralize("forbidden AppArmor profile", "forbidden AppArmor profiles", values.len()),
        detail: format!("{} must not set AppArmor profile type to {}", setters.join(" and "), join_quote(&values)),
    })
}

/// SELinux options without a user or role, and of a type allowed at version `v1.<MINOR>`.
pub fn se_linux<const MINOR: u64>(pod: &Pod) -> Option<Violation> {
    let (mut types, mut user, mut role) = (Set::new(), false, false);
    let mut bad = |options: &Value| {
        let t = options["type"].as_str().unwrap_or_default();
        let type_ok = SE_LINUX_TYPES.iter().any(|(allowed, since)| *allowed == t && *since <= MINOR);
        if !type_ok {
            types.insert(t.to_string());
        }
        let set = |k: &str| options[k].as_str().is_some_and(|v| !v.is_empty());
        user |= set("user");
        role |= set("role");
        !type_ok || set("user") || set("role")
    };
    let pod_set = pod.security()["seLinuxOptions"].is_object() && bad(&pod.security()["seLinuxOptions"]);
    let bad_containers = setting(pod, "seLinuxOptions", &mut bad);
    let setters = setters(pod_set, &bad_containers);
    if setters.is_empty() {
        return None;
    }
    let mut data = Vec::new();
    if !types.is_empty() {
        data.push(format!("{} {}", pluralize("type", "types", types.len()), join_quote(&types)));
    }
    if user {
        data.push("user may not be set".to_string());
    }
    if role {
        data.push("role may not be set".to_string());
    }
    Some(Violation { reason: "seLinuxOptions", detail: format!("{} set forbidden securityContext.seLinuxOptions: {}", setters.join(" and "), data.join("; ")) })
}

/// Before 1.19: the seccomp annotations, when present, name `runtime/default`,
/// `docker/default` or a `localhost/` profile.
pub fn seccomp_annotations(pod: &Pod) -> Option<Violation> {
    let annotations = &pod.metadata["annotations"];
    let mut keys = vec![SECCOMP_POD_ANNOTATION.to_string()];
    keys.extend(pod.containers().map(|c| format!("{SECCOMP_CONTAINER_ANNOTATION_PREFIX}{}", super::name(c))));
    let forbidden: Set = keys
        .iter()
        .filter_map(|k| Some((k, annotations.get(k)?.as_str().unwrap_or_default())))
        .filter(|(_, v)| !(*v == "runtime/default" || *v == "docker/default" || v.starts_with("localhost/")))
        .map(|(k, v)| annotation(k, v))
        .collect();
    (!forbidden.is_empty()).then(|| Violation {
        reason: "seccompProfile",
        detail: format!("forbidden {} {}", pluralize("annotation", "annotations", forbidden.len()), forbidden.into_iter().collect::<Vec<_>>().join(", ")),
    })
}

fn valid_seccomp(profile: &Value) -> bool {
    matches!(profile_type(profile), "RuntimeDefault" | "Localhost")
}

/// The pod's and containers' explicit seccomp profiles that are not `RuntimeDefault` or
/// `Localhost`: whether the pod's is, which containers', the values; and whether the pod sets
/// a valid one.
fn seccomp_setters<'a>(pod: &Pod<'a>) -> (Vec<String>, Set, bool) {
    let mut values = Set::new();
    let mut bad = |profile: &Value| {
        let forbidden = !valid_seccomp(profile);
        if forbidden {
            values.insert(profile_type(profile).to_string());
        }
        forbidden
    };
    let profile = &pod.security()["seccompProfile"];
    let pod_bad = profile.is_object() && bad(profile);
    let bad_containers = setting(pod, "seccompProfile", &mut bad);
    (setters(pod_bad, &bad_containers), values, profile.is_object() && !pod_bad)
}

fn forbidden_seccomp(setters: &[String], values: &Set) -> Violation {
    Violation { reason: "seccompProfile", detail: format!("{} must not set securityContext.seccompProfile.type to {}", setters.join(" and "), join_quote(values)) }
}

/// From 1.19: a seccomp profile, when set, of type `RuntimeDefault` or `Localhost`.
pub fn seccomp_baseline(pod: &Pod) -> Option<Violation> {
    let (setters, values, _) = seccomp_setters(pod);
    (!setters.is_empty()).then(|| forbidden_seccomp(&setters, &values))
}

/// From 1.19: a seccomp profile of type `RuntimeDefault` or `Localhost` set on the pod or on
/// every container.
pub fn seccomp_restricted(pod: &Pod) -> Option<Violation> {
    let (setters, values, pod_set) = seccomp_setters(pod);
    if !setters.is_empty() {
        return Some(forbidden_seccomp(&setters, &values));
    }
    let implicit = pod.containers_where(|c| !c["securityContext"]["seccompProfile"].is_object() && !pod_set);
    (!implicit.is_empty()).then(|| Violation {
        reason: "seccompProfile",
        detail: format!("pod or {} must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\"", containers(&implicit)),
    })
}

/// The default `/proc` mount (`procMount` unset or `Default`).
pub fn proc_mount(pod: &Pod) -> Option<Violation> {
    let mut types = Set::new();
    let bad = pod.containers_where(|c| match c["securityContext"]["procMount"].as_str() {
        Some(t) if t != "Default" => {
            types.insert(t.to_string());
            true
        }
        _ => false,
    });
    (!bad.is_empty()).then(|| Violation { reason: "procMount", detail: format!("{} must not set securityContext.procMount to {}", containers(&bad), join_quote(&types)) })
}
