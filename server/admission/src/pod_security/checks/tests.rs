//! The checks' table and each check's words, as Kubernetes' checks give them.

use serde_json::{json, Value};

use super::*;

fn run(check: CheckFn, pod: Value) -> Option<String> {
    check(&Pod { metadata: &pod["metadata"], spec: &pod["spec"] }).map(|v| format!("{} ({})", v.reason, v.detail))
}

#[test]
fn table_is_in_kubernetes_order() {
    let ids = |level| CHECKS.iter().filter(|c| c.level == level).map(|c| c.id).collect::<Vec<_>>();
    for level in [Baseline, Restricted] {
        let mut sorted = ids(level);
        sorted.sort();
        assert_eq!(ids(level), sorted, "{level:?} checks by id");
    }
    let levels: Vec<Level> = CHECKS.iter().map(|c| c.level).collect();
    assert!(levels.is_sorted(), "baseline checks first");
    assert_eq!(CHECKS.iter().flat_map(|c| c.versions).map(|v| v.since).max(), Some(NEWEST));
    for c in CHECKS {
        assert!(c.versions.windows(2).all(|w| w[0].since < w[1].since), "{} by version", c.id);
        for overridden in c.versions.iter().flat_map(|v| v.overrides) {
            assert_eq!(c.level, Restricted, "{}", c.id);
            assert!(CHECKS.iter().any(|b| b.id == *overridden && b.level == Baseline), "{overridden}");
        }
    }
}

#[test]
fn host_checks() {
    let pod = json!({"spec": {"hostNetwork": true, "hostIPC": true, "securityContext": {"windowsOptions": {"hostProcess": true}}, "containers": [
        {"name": "a", "ports": [{"containerPort": 80, "hostPort": 8080}, {"containerPort": 81, "hostPort": 10}], "securityContext": {"windowsOptions": {"hostProcess": true}},
         "livenessProbe": {"httpGet": {"host": "10.0.0.1", "port": 80}}, "lifecycle": {"preStop": {"tcpSocket": {"host": "example.com", "port": 1}}}},
        {"name": "b", "ports": [{"containerPort": 82}]},
    ]}});
    assert_eq!(run(host::namespaces, pod.clone()).unwrap(), "host namespaces (hostNetwork=true, hostIPC=true)");
    assert_eq!(run(host::ports, pod.clone()).unwrap(), "hostPort (container \"a\" uses hostPorts 10, 8080)");
    assert_eq!(run(host::windows_host_process, pod.clone()).unwrap(), "hostProcess (pod and container \"a\" must not set securityContext.windowsOptions.hostProcess=true)");
    assert_eq!(
        run(host::probe_and_lifecycle_hosts, pod).unwrap(),
        "probe or lifecycle host (container \"a\" uses probe or lifecycle hosts \"10.0.0.1\", \"example.com\")"
    );
    assert_eq!(run(host::namespaces, json!({"spec": {"hostPID": false, "containers": [{"name": "a"}]}})), None);
}

#[test]
fn privilege_checks() {
    let pod = json!({"spec": {"initContainers": [{"name": "i", "securityContext": {"privileged": true, "capabilities": {"add": ["SYS_ADMIN", "CHOWN", "NET_RAW"]}}}], "containers": [
        {"name": "a", "securityContext": {"privileged": true, "allowPrivilegeEscalation": false, "runAsNonRoot": false, "runAsUser": 0, "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}}},
        {"name": "b", "securityContext": {"capabilities": {"drop": ["NET_RAW"], "add": ["NET_ADMIN"]}}},
    ]}});
    assert_eq!(run(privileges::privileged, pod.clone()).unwrap(), "privileged (containers \"i\", \"a\" must not set securityContext.privileged=true)");
    assert_eq!(
        run(privileges::capabilities_baseline, pod.clone()).unwrap(),
        "non-default capabilities (containers \"i\", \"b\" must not include \"NET_ADMIN\", \"NET_RAW\", \"SYS_ADMIN\" in securityContext.capabilities.add)"
    );
    assert_eq!(
        run(privileges::capabilities_restricted, pod.clone()).unwrap(),
        "unrestricted capabilities (containers \"i\", \"b\" must set securityContext.capabilities.drop=[\"ALL\"]; containers \"i\", \"b\" must not include \"CHOWN\", \"NET_ADMIN\", \"NET_RAW\", \"SYS_ADMIN\" in securityContext.capabilities.add)"
    );
    assert_eq!(
        run(privileges::privilege_escalation, pod.clone()).unwrap(),
        "allowPrivilegeEscalation != false (containers \"i\", \"b\" must set securityContext.allowPrivilegeEscalation=false)"
    );
    assert_eq!(run(privileges::run_as_non_root, pod.clone()).unwrap(), "runAsNonRoot != true (container \"a\" must not set securityContext.runAsNonRoot=false)");
    assert_eq!(run(privileges::run_as_user, pod).unwrap(), "runAsUser=0 (container \"a\" must not set runAsUser=0)");
    let pod_level = json!({"spec": {"securityContext": {"runAsNonRoot": true, "runAsUser": 0}, "containers": [{"name": "a"}, {"name": "b", "securityContext": {"runAsUser": 1000}}]}});
    assert_eq!(run(privileges::run_as_non_root, pod_level.clone()), None);
    assert_eq!(run(privileges::run_as_user, pod_level).unwrap(), "runAsUser=0 (pod must not set runAsUser=0)");
    let unset = json!({"spec": {"containers": [{"name": "a"}, {"name": "b", "securityContext": {"runAsNonRoot": true}}]}});
    assert_eq!(run(privileges::run_as_non_root, unset).unwrap(), "runAsNonRoot != true (pod or container \"a\" must set securityContext.runAsNonRoot=true)");
}

#[test]
fn profile_checks() {
    let pod = json!({
        "metadata": {"annotations": {
            "container.apparmor.security.beta.kubernetes.io/a": "unconfined",
            "container.apparmor.security.beta.kubernetes.io/b": "localhost/mine",
            "seccomp.security.alpha.kubernetes.io/pod": "unconfined",
            "container.seccomp.security.alpha.kubernetes.io/a": "docker/default",
            "container.seccomp.security.alpha.kubernetes.io/b": "",
        }},
        "spec": {
            "securityContext": {"appArmorProfile": {"type": "Unconfined"}, "seLinuxOptions": {"type": "spc_t", "user": "root"}, "seccompProfile": {"type": "Unconfined"}},
            "containers": [
                {"name": "a", "securityContext": {"procMount": "Unmasked", "seLinuxOptions": {"type": "container_engine_t"}, "seccompProfile": {"type": "RuntimeDefault"}}},
                {"name": "b", "securityContext": {"appArmorProfile": {"type": "Localhost", "localhostProfile": "x"}, "seLinuxOptions": {"role": "sysadm_r"}}},
            ],
        },
    });
    assert_eq!(
        run(profiles::app_armor, pod.clone()).unwrap(),
        "forbidden AppArmor profiles (pod and annotation must not set AppArmor profile type to \"Unconfined\", \"container.apparmor.security.beta.kubernetes.io/a=\"unconfined\"\")"
    );
    assert_eq!(run(profiles::proc_mount, pod.clone()).unwrap(), "procMount (container \"a\" must not set securityContext.procMount to \"Unmasked\")");
    assert_eq!(
        run(profiles::se_linux::<30>, pod.clone()).unwrap(),
        "seLinuxOptions (pod and containers \"a\", \"b\" set forbidden securityContext.seLinuxOptions: types \"container_engine_t\", \"spc_t\"; user may not be set; role may not be set)"
    );
    assert_eq!(
        run(profiles::se_linux::<31>, pod.clone()).unwrap(),
        "seLinuxOptions (pod and container \"b\" set forbidden securityContext.seLinuxOptions: type \"spc_t\"; user may not be set; role may not be set)"
    );
    assert_eq!(
        run(profiles::seccomp_annotations, pod.clone()).unwrap(),
        "seccompProfile (forbidden annotations container.seccomp.security.alpha.kubernetes.io/b=\"\", seccomp.security.alpha.kubernetes.io/pod=\"unconfined\")"
    );
    assert_eq!(run(profiles::seccomp_baseline, pod.clone()).unwrap(), "seccompProfile (pod must not set securityContext.seccompProfile.type to \"Unconfined\")");
    assert_eq!(run(profiles::seccomp_restricted, pod).unwrap(), "seccompProfile (pod must not set securityContext.seccompProfile.type to \"Unconfined\")");
    let unset = json!({"spec": {"containers": [{"name": "a"}, {"name": "b", "securityContext": {"seccompProfile": {"type": "Localhost", "localhostProfile": "p"}}}]}});
    assert_eq!(run(profiles::seccomp_baseline, unset.clone()), None);
    assert_eq!(
        run(profiles::seccomp_restricted, unset).unwrap(),
        "seccompProfile (pod or container \"a\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"
    );
}

#[test]
fn volume_and_sysctl_checks() {
    let pod = json!({"spec": {
        "securityContext": {"sysctls": [{"name": "net.ipv4.tcp_rmem", "value": "1"}, {"name": "kernel.msgmax", "value": "1"}, {"name": "net.ipv4.tcp_syncookies", "value": "1"}]},
        "volumes": [{"name": "h", "hostPath": {"path": "/"}}, {"name": "n", "nfs": {"server": "s", "path": "/"}}, {"name": "c", "configMap": {"name": "c"}}, {"name": "g", "gitRepo": {"repository": "r"}}],
        "containers": [{"name": "a"}],
    }});
    assert_eq!(run(volumes::host_path, pod.clone()).unwrap(), "hostPath volumes (volume \"h\")");
    assert_eq!(
        run(volumes::restricted, pod.clone()).unwrap(),
        "restricted volume types (volumes \"h\", \"n\", \"g\" use restricted volume types \"gitRepo\", \"hostPath\", \"nfs\")"
    );
    assert_eq!(run(sysctls::sysctls::<31>, pod.clone()).unwrap(), "forbidden sysctls (net.ipv4.tcp_rmem, kernel.msgmax)");
    assert_eq!(run(sysctls::sysctls::<32>, pod).unwrap(), "forbidden sysctls (kernel.msgmax)");
}

#[test]
fn exemptions_of_windows_pods_and_user_namespaces() {
    let windows = json!({"spec": {"os": {"name": "windows"}, "containers": [{"name": "a"}]}});
    let user_namespace = json!({"spec": {"hostUsers": false, "securityContext": {"runAsUser": 0}, "containers": [{"name": "a", "securityContext": {"procMount": "Unmasked"}}]}});
    let versions = |id: &str| CHECKS.iter().find(|c| c.id == id).unwrap();
    let at = |id: &str, minor: u64, pod: &Value| versions(id).at(minor).unwrap().check(&Pod { metadata: &pod["metadata"], spec: &pod["spec"] }).is_some();
    assert!(at("allowPrivilegeEscalation", 24, &windows) && !at("allowPrivilegeEscalation", 25, &windows));
    assert!(at("runAsUser", 34, &user_namespace) && !at("runAsUser", 35, &user_namespace));
    assert!(at("procMount", 34, &user_namespace) && !at("procMount", 35, &user_namespace));
    assert!(at("procMount_restricted", 35, &user_namespace));
    assert!(versions("runAsUser").at(22).is_none() && versions("hostProbesAndHostLifecycle").at(33).is_none());
}
