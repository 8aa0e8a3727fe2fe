//! The warnings kube-apiserver gives about a pod spec and its metadata, a Pod's or a template's
//! in a workload: deprecated node labels, annotations and volume types, duplicates an apply
//! would drop, fractional byte quantities, ambiguous ports, selectors that match nothing,
//! overlapping volume paths, and IP addresses in forms Kubernetes discourages.

use serde_json::Value;

use crate::expr::quote;
use crate::registry::kinds::fields::entries;
use crate::registry::kinds::warnings::{claim_spec, deprecated_node_label, fractional_bytes, ip_warnings};

/// Pod annotations that no longer do anything.
const DEPRECATED_ANNOTATIONS: &[(&str, &str)] = &[
    ("scheduler.alpha.kubernetes.io/critical-pod", "non-functional in v1.16+; use the \"priorityClassName\" field instead"),
    ("security.alpha.kubernetes.io/sysctls", "non-functional in v1.11+; use the \"sysctls\" field instead"),
    ("security.alpha.kubernetes.io/unsafe-sysctls", "non-functional in v1.11+; use the \"sysctls\" field instead"),
];

/// Volume types past their time, with the versions Kubernetes names.
const DEPRECATED_VOLUMES: &[(&str, &str)] = &[
    ("photonPersistentDisk", "deprecated in v1.11, non-functional in v1.16+"),
    ("gitRepo", "deprecated in v1.11, and disabled by default in v1.33+"),
    ("scaleIO", "deprecated in v1.16, non-functional in v1.22+"),
    ("flocker", "deprecated in v1.22, non-functional in v1.25+"),
    ("storageOS", "deprecated in v1.22, non-functional in v1.25+"),
    ("quobyte", "deprecated in v1.22, non-functional in v1.25+"),
    ("glusterfs", "deprecated in v1.25, non-functional in v1.26+"),
];

const SECCOMP_POD: &str = "seccomp.security.alpha.kubernetes.io/pod";
const SECCOMP_CONTAINER: &str = "container.seccomp.security.alpha.kubernetes.io/";
const APPARMOR_CONTAINER: &str = "container.apparmor.security.beta.kubernetes.io/";

/// A Pod's warnings.
pub fn pod(pod: &Value) -> Vec<String> {
    spec_and_meta("", &pod["spec"], &pod["metadata"], false)
}

/// A pod template's warnings, its fields under `path` (`spec.template`).
pub fn template(template: &Value, path: &str) -> Vec<String> {
    spec_and_meta(&format!("{path}."), &template["spec"], &template["metadata"], true)
}

/// Each container with its path: init containers, containers, then ephemeral containers.
fn containers<'a>(spec: &'a Value, at: &str) -> Vec<(&'a Value, String)> {
    ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .flat_map(|list| entries(&spec[*list]).iter().enumerate().map(move |(i, c)| (c, format!("{at}spec.{list}[{i}]"))))
        .collect()
}

fn spec_and_meta(at: &str, spec: &Value, meta: &Value, is_template: bool) -> Vec<String> {
    let mut out = Vec::new();
    let annotations = &meta["annotations"];
    for key in spec["nodeSelector"].as_object().into_iter().flat_map(|m| m.keys()) {
        if let Some(m) = deprecated_node_label(key) {
            out.push(format!("{at}spec.nodeSelector[{key}]: {m}"));
        }
    }
    let node = &spec["affinity"]["nodeAffinity"];
    let required = format!("{at}spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms");
    for (i, term) in entries(&node["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]).iter().enumerate() {
        selector_term(term, false, &format!("{required}[{i}]"), &mut out);
    }
    let preferred = format!("{at}spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution");
    for (i, term) in entries(&node["preferredDuringSchedulingIgnoredDuringExecution"]).iter().enumerate() {
        selector_term(&term["preference"], true, &format!("{preferred}[{i}].preference"), &mut out);
    }
    for (i, t) in entries(&spec["topologySpreadConstraints"]).iter().enumerate() {
        let key = t["topologyKey"].as_str().unwrap_or_default();
        if let Some(m) = deprecated_node_label(key) {
            out.push(format!("{at}spec.topologySpreadConstraints[{i}].topologyKey: {key} is {m}"));
        }
        if t["labelSelector"].is_null() {
            out.push(format!("{at}spec.topologySpreadConstraints[{i}].labelSelector: a null labelSelector results in matching no pod"));
        }
    }
    for (key, message) in DEPRECATED_ANNOTATIONS {
        if annotations.get(*key).is_some() {
            out.push(format!("{at}metadata.annotations[{key}]: {message}"));
        }
    }
    for (i, v) in entries(&spec["volumes"]).iter().enumerate() {
        for (kind, message) in DEPRECATED_VOLUMES {
            if !v[*kind].is_null() {
                out.push(format!("{at}spec.volumes[{i}].{kind}: {message}"));
            }
        }
        let claim = &v["ephemeral"]["volumeClaimTemplate"];
        if claim.is_object() {
            out.extend(claim_spec(&claim["spec"], &format!("{at}spec.volumes[{i}].ephemeral.volumeClaimTemplate.spec")));
        }
        for kind in ["cephfs", "rbd"] {
            if !v[kind].is_null() {
                out.push(format!("{at}spec.volumes[{i}].{kind}: deprecated in v1.28, non-functional in v1.31+"));
            }
        }
    }
    out.extend(overlapping_paths(entries(&spec["volumes"])));
    duplicates(entries(&spec["hostAliases"]), "ip", &format!("{at}spec.hostAliases"), "duplicate ip", &mut out);
    duplicates(entries(&spec["imagePullSecrets"]), "name", &format!("{at}spec.imagePullSecrets"), "duplicate name", &mut out);
    for (i, s) in entries(&spec["imagePullSecrets"]).iter().enumerate() {
        if s["name"].as_str().unwrap_or_default().is_empty() {
            out.push(format!("{at}spec.imagePullSecrets[{i}].name: invalid empty name \"\""));
        }
    }
    for resource in ["memory", "ephemeral-storage"] {
        out.extend(fractional_bytes(&spec["overhead"][resource], &format!("{at}spec.overhead[{resource}]")));
    }
    if spec["securityContext"]["seccompProfile"].is_null() && annotations.get(SECCOMP_POD).is_some() {
        out.push(format!("{at}metadata.annotations[{SECCOMP_POD}]: non-functional in v1.27+; use the \"seccompProfile\" field instead"));
    }
    let all = containers(spec, at);
    for (c, path) in &all {
        let name = c["name"].as_str().unwrap_or_default();
        let seccomp = format!("{SECCOMP_CONTAINER}{name}");
        if c["securityContext"]["seccompProfile"].is_null() && annotations.get(&seccomp).is_some() {
            out.push(format!("{at}metadata.annotations[{seccomp}]: non-functional in v1.27+; use the \"seccompProfile\" field instead"));
        }
        let apparmor = format!("{APPARMOR_CONTAINER}{name}");
        if is_template && c["securityContext"]["appArmorProfile"].is_null() {
            if let Some(value) = annotations[&apparmor].as_str() {
                if spec["securityContext"]["appArmorProfile"] != apparmor_profile(value) {
                    out.push(format!("{at}metadata.annotations[{apparmor}]: deprecated since v1.30; use the \"appArmorProfile\" field instead"));
                }
            }
        }
        for (kind, resource) in [("limits", "memory"), ("requests", "memory"), ("limits", "ephemeral-storage"), ("requests", "ephemeral-storage")] {
            out.extend(fractional_bytes(&c["resources"][kind][resource], &format!("{path}.resources.{kind}[{resource}]")));
        }
        hidden_env(entries(&c["env"]), path, &mut out);
    }
    ports(&all, &mut out);
    if spec["terminationGracePeriodSeconds"].as_i64().is_some_and(|g| g < 0) {
        out.push(format!("{at}spec.terminationGracePeriodSeconds: must be >= 0; negative values are invalid and will be treated as 1"));
    }
    for kind in ["podAffinity", "podAntiAffinity"] {
        let affinity = &spec["affinity"][kind];
        for (i, term) in entries(&affinity["requiredDuringSchedulingIgnoredDuringExecution"]).iter().enumerate() {
            if term["labelSelector"].is_null() {
                out.push(format!("{at}spec.affinity.{kind}.requiredDuringSchedulingIgnoredDuringExecution[{i}].labelSelector: a null labelSelector results in matching no pod"));
            }
        }
        for (i, term) in entries(&affinity["preferredDuringSchedulingIgnoredDuringExecution"]).iter().enumerate() {
            if term["podAffinityTerm"]["labelSelector"].is_null() {
                out.push(format!(
                    "{at}spec.affinity.{kind}.preferredDuringSchedulingIgnoredDuringExecution[{i}].podAffinityTerm.labelSelector: a null labelSelector results in matching no pod"
                ));
            }
        }
    }
    for (i, ns) in entries(&spec["dnsConfig"]["nameservers"]).iter().enumerate() {
        out.extend(ip_warnings(&format!("{at}spec.dnsConfig.nameservers[{i}]"), ns.as_str().unwrap_or_default()));
    }
    for (i, alias) in entries(&spec["hostAliases"]).iter().enumerate() {
        out.extend(ip_warnings(&format!("{at}spec.hostAliases[{i}].ip"), alias["ip"].as_str().unwrap_or_default()));
    }
    out
}

/// The profile an AppArmor annotation's value stands for.
fn apparmor_profile(annotation: &str) -> Value {
    match annotation {
        "runtime/default" => serde_json::json!({"type": "RuntimeDefault"}),
        "unconfined" => serde_json::json!({"type": "Unconfined"}),
        other => match other.strip_prefix("localhost/") {
            Some(profile) => serde_json::json!({"type": "Localhost", "localhostProfile": profile}),
            None => Value::Null,
        },
    }
}

/// A node selector term's deprecated label keys and, for preferred terms, invalid values.
fn selector_term(term: &Value, check_values: bool, at: &str, out: &mut Vec<String>) {
    for (i, e) in entries(&term["matchExpressions"]).iter().enumerate() {
        let key = e["key"].as_str().unwrap_or_default();
        if let Some(m) = deprecated_node_label(key) {
            out.push(format!("{at}.matchExpressions[{i}].key: {key} is {m}"));
        }
        if check_values {
            for (j, v) in entries(&e["values"]).iter().enumerate() {
                let value = v.as_str().unwrap_or_default();
                for problem in label_value_problems(value) {
                    out.push(format!("{at}.matchExpressions[{i}].values[{j}]: {value} is invalid, {problem}"));
                }
            }
        }
    }
}

/// Why a label value is invalid, in Kubernetes' words.
fn label_value_problems(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    if value.len() > 63 {
        out.push("must be no more than 63 characters".to_string());
    }
    let valid_chars = value.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
    let ends = value.bytes().next().is_none_or(|b| b.is_ascii_alphanumeric()) && value.bytes().last().is_none_or(|b| b.is_ascii_alphanumeric());
    if !(valid_chars && ends) {
        out.push(crate::meta::LABEL_VALUE.to_string());
    }
    out
}

/// Items of a list that repeat an earlier item's `key`.
fn duplicates(items: &[Value], key: &str, at: &str, what: &str, out: &mut Vec<String>) {
    if items.len() < 2 {
        return;
    }
    let mut seen = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let value = item[key].as_str().unwrap_or_default();
        if seen.contains(&value) {
            out.push(format!("{at}[{i}].{key}: {what} {}", quote(value)));
        } else {
            seen.push(value);
        }
    }
}

/// An environment variable defined again, in a way an apply would lose the earlier one.
fn hidden_env(env: &[Value], path: &str, out: &mut Vec<String>) {
    let mut seen = Vec::new();
    for (i, item) in env.iter().enumerate() {
        let name = item["name"].as_str().unwrap_or_default();
        if !seen.contains(&name) {
            seen.push(name);
            continue;
        }
        let reference = format!("$({name})");
        let value = item["value"].as_str().unwrap_or_default();
        if !item["valueFrom"].is_null() || value == reference || !value.contains(&reference) {
            out.push(format!("{path}.env[{i}]: hides previous definition of {}, which may be dropped when using apply", quote(name)));
        }
    }
}

/// A container port as Go's `%+v` prints it.
fn port_shown(p: &Value) -> String {
    format!(
        "{{Name:{} HostPort:{} ContainerPort:{} Protocol:{} HostIP:{}}}",
        p["name"].as_str().unwrap_or_default(),
        p["hostPort"].as_i64().unwrap_or(0),
        p["containerPort"].as_i64().unwrap_or(0),
        p["protocol"].as_str().unwrap_or_default(),
        p["hostIP"].as_str().unwrap_or_default()
    )
}

/// Ports declared twice, overlapping or ambiguous across the containers, and names used twice.
fn ports(all: &[(&Value, String)], out: &mut Vec<String>) {
    let mut seen: Vec<(String, &Value)> = Vec::new();
    for (c, path) in all {
        for (i, p) in entries(&c["ports"]).iter().enumerate() {
            let here = format!("{path}.ports[{i}]");
            let host_ip = p["hostIP"].as_str().unwrap_or_default();
            let host_port = p["hostPort"].as_i64().unwrap_or(0);
            if !host_ip.is_empty() && host_port == 0 {
                out.push(format!("{here}: hostIP set without hostPort: {}", port_shown(p)));
            }
            for (other_at, other) in seen.iter().filter(|(_, o)| o["containerPort"] == p["containerPort"] && o["protocol"] == p["protocol"]) {
                let (other_ip, other_port) = (other["hostIP"].as_str().unwrap_or_default(), other["hostPort"].as_i64().unwrap_or(0));
                if host_ip == other_ip && host_port == other_port {
                    out.push(format!("{here}: duplicate port definition with {other_at}"));
                } else if host_port == 0 || other_port == 0 {
                    out.push(format!("{here}: overlapping port definition with {other_at}"));
                } else if host_port == other_port && (host_ip.is_empty() != other_ip.is_empty()) {
                    out.push(format!("{here}: dangerously ambiguous port definition with {other_at}"));
                }
            }
            seen.push((here, p));
        }
    }
    let mut names: Vec<(&str, String)> = Vec::new();
    for (c, path) in all {
        for (i, p) in entries(&c["ports"]).iter().enumerate() {
            let name = p["name"].as_str().unwrap_or_default();
            if name.is_empty() {
                continue;
            }
            match names.iter().find(|(n, _)| *n == name) {
                Some((_, other)) => out.push(format!(
                    "{path}.ports[{i}]: duplicate port name {} with {other}, services and probes that select ports by name will use {other}",
                    quote(name)
                )),
                None => names.push((name, format!("{path}.ports[{i}]"))),
            }
        }
    }
}

/// A path of a volume and where it comes from.
struct Sourced {
    path: String,
    source: String,
}

impl std::fmt::Display for Sourced {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.source.as_str() {
            "" => write!(f, "{}", quote(&self.path)),
            source => write!(f, "{} ({source})", quote(&self.path)),
        }
    }
}

fn paths(items: &Value, source: &str) -> Vec<Sourced> {
    entries(items).iter().map(|i| Sourced { path: i["path"].as_str().unwrap_or_default().to_string(), source: source.to_string() }).collect()
}

/// The earlier paths `needle` collides with: the same, or one inside the other.
fn collisions<'a>(earlier: &'a [Sourced], needle: &Sourced) -> Vec<&'a Sourced> {
    if needle.path.is_empty() {
        return Vec::new();
    }
    let inside = |a: &str, b: &str| format!("{a}/").starts_with(&format!("{b}/"));
    earlier
        .iter()
        .filter(|item| !item.path.is_empty() && ((item.path == needle.path && item.source == needle.source) || inside(&item.path, &needle.path) || inside(&needle.path, &item.path)))
        .collect()
}

/// Each new path against those before it, trailing slashes dropped.
fn overlaps(all: Vec<Sourced>, found: &mut dyn FnMut(String)) {
    let mut earlier: Vec<Sourced> = Vec::new();
    for mut p in all {
        p.path = p.path.trim_end_matches('/').to_string();
        for c in collisions(&earlier, &p) {
            found(format!("{p} with {c}"));
        }
        earlier.push(p);
    }
}

/// Keys of a ConfigMap, Secret, downward API or projected volume mapped to overlapping paths.
fn overlapping_paths(volumes: &[Value]) -> Vec<String> {
    let mut out = Vec::new();
    for v in volumes {
        let name = quote(v["name"].as_str().unwrap_or_default());
        let mut warn = |what: &str, body: String| out.push(format!("volume {name} ({what}): overlapping paths: {body}"));
        let singles = [
            ("configMap", format!("ConfigMap {}", quote(v["configMap"]["name"].as_str().unwrap_or_default()))),
            ("secret", format!("Secret {}", quote(v["secret"]["secretName"].as_str().unwrap_or_default()))),
            ("downwardAPI", "DownwardAPI".to_string()),
        ];
        for (kind, what) in singles {
            if v[kind]["items"].is_array() {
                overlaps(paths(&v[kind]["items"], ""), &mut |body| warn(&what, body));
            }
        }
        if v["projected"].is_object() {
            let mut all = Vec::new();
            for source in entries(&v["projected"]["sources"]) {
                if source.as_object().is_none_or(|s| s.values().all(Value::is_null)) {
                    out.push(format!("volume {name} (Projected) has no sources provided"));
                    continue;
                }
                all.extend(projected_paths(source));
            }
            overlaps(all, &mut |body| out.push(format!("volume {name} (Projected): overlapping paths: {body}")));
        }
    }
    out
}

/// The paths one projected source writes, named by where they come from.
fn projected_paths(source: &Value) -> Vec<Sourced> {
    let named = |kind: &str, key: &str| format!("{kind} {}", quote(source[key.split('.').next().unwrap_or_default()]["name"].as_str().unwrap_or_default()));
    let one = |path: &Value, source: String| vec![Sourced { path: path.as_str().unwrap_or_default().to_string(), source }];
    if source["configMap"]["items"].is_array() {
        paths(&source["configMap"]["items"], &named("ConfigMap", "configMap"))
    } else if source["secret"]["items"].is_array() {
        paths(&source["secret"]["items"], &named("Secret", "secret"))
    } else if source["downwardAPI"]["items"].is_array() {
        paths(&source["downwardAPI"]["items"], "DownwardAPI")
    } else if source["serviceAccountToken"].is_object() {
        one(&source["serviceAccountToken"]["path"], "ServiceAccountToken".into())
    } else if source["clusterTrustBundle"].is_object() {
        let bundle = &source["clusterTrustBundle"];
        let name = bundle["name"].as_str().or(bundle["signerName"].as_str()).unwrap_or_default();
        one(&bundle["path"], format!("ClusterTrustBundle {}", quote(name)))
    } else if source["podCertificate"].is_object() {
        let cert = &source["podCertificate"];
        [("certificateChainPath", "PodCertificate chain"), ("keyPath", "PodCertificate key"), ("credentialBundlePath", "PodCertificate credential bundle")]
            .iter()
            .filter(|(k, _)| cert[*k].as_str().is_some_and(|p| !p.is_empty()))
            .flat_map(|(k, what)| one(&cert[*k], what.to_string()))
            .collect()
    } else {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_template_is_warned_about_under_its_path() {
        let t = json!({
            "metadata": {"annotations": {"scheduler.alpha.kubernetes.io/critical-pod": ""}},
            "spec": {
                "nodeSelector": {"beta.kubernetes.io/os": "linux"},
                "containers": [
                    {"name": "a", "resources": {"limits": {"memory": "1.5"}}, "env": [{"name": "X", "value": "1"}, {"name": "X", "value": "2"}], "ports": [{"containerPort": 80, "protocol": "TCP", "name": "web"}]},
                    {"name": "b", "ports": [{"containerPort": 80, "protocol": "TCP", "name": "web"}]}
                ],
                "volumes": [{"name": "v", "configMap": {"name": "c", "items": [{"key": "a", "path": "p"}, {"key": "b", "path": "p/q"}]}}],
                "terminationGracePeriodSeconds": -1
            }
        });
        assert_eq!(
            template(&t, "spec.template"),
            [
                "spec.template.spec.nodeSelector[beta.kubernetes.io/os]: deprecated since v1.14; use \"kubernetes.io/os\" instead",
                "spec.template.metadata.annotations[scheduler.alpha.kubernetes.io/critical-pod]: non-functional in v1.16+; use the \"priorityClassName\" field instead",
                "volume \"v\" (ConfigMap \"c\"): overlapping paths: \"p/q\" with \"p\"",
                "spec.template.spec.containers[0].resources.limits[memory]: fractional byte value \"1500m\" is invalid, must be an integer",
                "spec.template.spec.containers[0].env[1]: hides previous definition of \"X\", which may be dropped when using apply",
                "spec.template.spec.containers[1].ports[0]: duplicate port definition with spec.template.spec.containers[0].ports[0]",
                "spec.template.spec.containers[1].ports[0]: duplicate port name \"web\" with spec.template.spec.containers[0].ports[0], services and probes that select ports by name will use spec.template.spec.containers[0].ports[0]",
                "spec.template.spec.terminationGracePeriodSeconds: must be >= 0; negative values are invalid and will be treated as 1",
            ]
        );
    }
}
