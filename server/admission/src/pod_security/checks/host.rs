//! Baseline checks of what a pod shares with its host: Windows HostProcess containers, the
//! host's network, PID and IPC namespaces, host ports, and hosts named by probes and lifecycle
//! handlers.

use serde_json::Value;

use super::{containers, join_quote, pluralize, setters, Pod, Set, Violation};

/// No `securityContext.windowsOptions.hostProcess: true`, on the pod or a container.
pub fn windows_host_process(pod: &Pod) -> Option<Violation> {
    let host_process = |security: &Value| security["windowsOptions"]["hostProcess"] == true;
    let bad = pod.containers_where(|c| host_process(&c["securityContext"]));
    let setters = setters(host_process(pod.security()), &bad);
    (!setters.is_empty()).then(|| Violation { reason: "hostProcess", detail: format!("{} must not set securityContext.windowsOptions.hostProcess=true", setters.join(" and ")) })
}

/// No `hostNetwork`, `hostPID` or `hostIPC`.
pub fn namespaces(pod: &Pod) -> Option<Violation> {
    let shared: Vec<String> = ["hostNetwork", "hostPID", "hostIPC"].into_iter().filter(|k| pod.spec[*k] == true).map(|k| format!("{k}=true")).collect();
    (!shared.is_empty()).then(|| Violation { reason: "host namespaces", detail: shared.join(", ") })
}

/// No container port with a `hostPort`.
pub fn ports(pod: &Pod) -> Option<Violation> {
    let mut used = Set::new();
    let bad = pod.containers_where(|c| {
        let ports: Vec<i64> = c["ports"].as_array().into_iter().flatten().filter_map(|p| p["hostPort"].as_i64()).filter(|p| *p != 0).collect();
        used.extend(ports.iter().map(i64::to_string));
        !ports.is_empty()
    });
    (!bad.is_empty()).then(|| Violation {
        reason: "hostPort",
        detail: format!(
            "{} {} {} {}",
            containers(&bad),
            pluralize("uses", "use", bad.len()),
            pluralize("hostPort", "hostPorts", used.len()),
            used.into_iter().collect::<Vec<_>>().join(", ")
        ),
    })
}

/// No `host` in an HTTP or TCP probe or lifecycle handler (from 1.34).
pub fn probe_and_lifecycle_hosts(pod: &Pod) -> Option<Violation> {
    let mut bad = Set::new();
    let mut hosts = Set::new();
    for c in pod.containers() {
        let handlers = [&c["livenessProbe"], &c["readinessProbe"], &c["startupProbe"], &c["lifecycle"]["postStart"], &c["lifecycle"]["preStop"]];
        for handler in handlers {
            for host in [&handler["httpGet"]["host"], &handler["tcpSocket"]["host"]].into_iter().filter_map(Value::as_str).filter(|h| !h.is_empty()) {
                bad.insert(super::name(c).to_string());
                hosts.insert(host.to_string());
            }
        }
    }
    (!bad.is_empty()).then(|| Violation {
        reason: "probe or lifecycle host",
        detail: format!(
            "{} {} {} {} {}",
            pluralize("container", "containers", bad.len()),
            join_quote(&bad),
            pluralize("uses", "use", bad.len()),
            pluralize("probe or lifecycle host", "probe or lifecycle hosts", hosts.len()),
            join_quote(&hosts)
        ),
    })
}
