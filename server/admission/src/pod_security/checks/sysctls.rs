//! The baseline check of a pod's sysctls: only the safe ones (namespaced, isolated from other
//! pods), a set that grew with Kubernetes versions.

use super::{Pod, Violation};

/// The safe sysctls, each from the policy version that allowed it.
const SAFE: &[(&str, u64)] = &[
    ("kernel.shm_rmid_forced", 0),
    ("net.ipv4.ip_local_port_range", 0),
    ("net.ipv4.tcp_syncookies", 0),
    ("net.ipv4.ping_group_range", 0),
    ("net.ipv4.ip_unprivileged_port_start", 0),
    ("net.ipv4.ip_local_reserved_ports", 27),
    ("net.ipv4.tcp_keepalive_time", 29),
    ("net.ipv4.tcp_fin_timeout", 29),
    ("net.ipv4.tcp_keepalive_intvl", 29),
    ("net.ipv4.tcp_keepalive_probes", 29),
    ("net.ipv4.tcp_rmem", 32),
    ("net.ipv4.tcp_wmem", 32),
];

/// Only sysctls safe at version `v1.<MINOR>`, named in the order the pod sets them.
pub fn sysctls<const MINOR: u64>(pod: &Pod) -> Option<Violation> {
    let forbidden: Vec<&str> = pod.security()["sysctls"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| s["name"].as_str().unwrap_or_default())
        .filter(|name| !SAFE.iter().any(|(safe, since)| safe == name && *since <= MINOR))
        .collect();
    (!forbidden.is_empty()).then(|| Violation { reason: "forbidden sysctls", detail: forbidden.join(", ") })
}
