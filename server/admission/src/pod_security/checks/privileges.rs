//! Checks of the privileges containers run with: privileged mode and added capabilities
//! (baseline), and for restricted: no privilege escalation, all capabilities dropped, running as
//! a non-root user.

use super::{containers, join_quote, setters, strings, Pod, Set, Violation};

/// Capabilities baseline lets a container add: the container runtime's default set.
const DEFAULT_CAPABILITIES: &[&str] =
    &["AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"];

/// No `securityContext.privileged: true`.
pub fn privileged(pod: &Pod) -> Option<Violation> {
    let bad = pod.containers_where(|c| c["securityContext"]["privileged"] == true);
    (!bad.is_empty()).then(|| Violation { reason: "privileged", detail: format!("{} must not set securityContext.privileged=true", containers(&bad)) })
}

/// The containers adding capabilities outside `allowed`, and those capabilities.
fn adding<'a>(pod: &Pod<'a>, allowed: impl Fn(&str) -> bool) -> (Vec<&'a str>, Set) {
    let mut added = Set::new();
    let bad = pod.containers_where(|c| {
        let forbidden: Vec<&str> = strings(&c["securityContext"]["capabilities"]["add"]).filter(|cap| !allowed(cap)).collect();
        added.extend(forbidden.iter().map(|s| s.to_string()));
        !forbidden.is_empty()
    });
    (bad, added)
}

/// Only the default capabilities added.
pub fn capabilities_baseline(pod: &Pod) -> Option<Violation> {
    let (bad, added) = adding(pod, |cap| DEFAULT_CAPABILITIES.contains(&cap));
    (!bad.is_empty()).then(|| Violation { reason: "non-default capabilities", detail: format!("{} must not include {} in securityContext.capabilities.add", containers(&bad), join_quote(&added)) })
}

/// `ALL` dropped, and nothing but `NET_BIND_SERVICE` added (from 1.22).
pub fn capabilities_restricted(pod: &Pod) -> Option<Violation> {
    let keeping = pod.containers_where(|c| !strings(&c["securityContext"]["capabilities"]["drop"]).any(|cap| cap == "ALL"));
    let (adding, added) = adding(pod, |cap| cap == "NET_BIND_SERVICE");
    let mut details = Vec::new();
    if !keeping.is_empty() {
        details.push(format!("{} must set securityContext.capabilities.drop=[\"ALL\"]", containers(&keeping)));
    }
    if !adding.is_empty() {
        details.push(format!("{} must not include {} in securityContext.capabilities.add", containers(&adding), join_quote(&added)));
    }
    (!details.is_empty()).then(|| Violation { reason: "unrestricted capabilities", detail: details.join("; ") })
}

/// `securityContext.allowPrivilegeEscalation: false` on every container (from 1.8).
pub fn privilege_escalation(pod: &Pod) -> Option<Violation> {
    let bad = pod.containers_where(|c| c["securityContext"]["allowPrivilegeEscalation"] != false);
    (!bad.is_empty()).then(|| Violation {
        reason: "allowPrivilegeEscalation != false",
        detail: format!("{} must set securityContext.allowPrivilegeEscalation=false", containers(&bad)),
    })
}

/// `runAsNonRoot: true` on the pod or on every container, and `false` on none.
pub fn run_as_non_root(pod: &Pod) -> Option<Violation> {
    let pod_level = pod.security()["runAsNonRoot"].as_bool();
    let explicit = pod.containers_where(|c| c["securityContext"]["runAsNonRoot"] == false);
    let setters = setters(pod_level == Some(false), &explicit);
    if !setters.is_empty() {
        return Some(Violation { reason: "runAsNonRoot != true", detail: format!("{} must not set securityContext.runAsNonRoot=false", setters.join(" and ")) });
    }
    let implicit = pod.containers_where(|c| c["securityContext"]["runAsNonRoot"].as_bool().is_none() && pod_level != Some(true));
    (!implicit.is_empty()).then(|| Violation { reason: "runAsNonRoot != true", detail: format!("pod or {} must set securityContext.runAsNonRoot=true", containers(&implicit)) })
}

/// No `runAsUser: 0`, on the pod or a container (from 1.23).
pub fn run_as_user(pod: &Pod) -> Option<Violation> {
    let bad = pod.containers_where(|c| c["securityContext"]["runAsUser"] == 0);
    let setters = setters(pod.security()["runAsUser"] == 0, &bad);
    (!setters.is_empty()).then(|| Violation { reason: "runAsUser=0", detail: format!("{} must not set runAsUser=0", setters.join(" and ")) })
}
