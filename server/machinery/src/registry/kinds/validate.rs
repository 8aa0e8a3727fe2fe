//! Validation beyond types: required fields and the rules kubectl users meet first.

use serde_json::Value;

use crate::error::Cause;
use crate::meta::is_dns_subdomain;

fn pod_spec_at(spec: &Value, path: &str, out: &mut Vec<Cause>) {
    let containers = spec["containers"].as_array().filter(|c| !c.is_empty());
    let Some(containers) = containers else {
        out.push(Cause::required(format!("{path}.containers")));
        return;
    };
    let mut seen = std::collections::HashSet::new();
    for (i, c) in containers.iter().enumerate() {
        let name = c["name"].as_str().unwrap_or_default();
        if name.is_empty() {
            out.push(Cause::required(format!("{path}.containers[{i}].name")));
        } else if !seen.insert(name) {
            out.push(Cause::new("FieldValueDuplicate", format!("{path}.containers[{i}].name"), format!("Duplicate value: \"{name}\"")));
        } else if !(name.len() <= 63 && is_dns_subdomain(name) && !name.contains('.')) {
            out.push(Cause::invalid(format!("{path}.containers[{i}].name"), name, "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character"));
        }
        if c["image"].as_str().is_none_or(str::is_empty) {
            out.push(Cause::required(format!("{path}.containers[{i}].image")));
        }
        one_of(&c["imagePullPolicy"], &format!("{path}.containers[{i}].imagePullPolicy"), &["Always", "IfNotPresent", "Never"], out);
        for (j, p) in c["ports"].as_array().into_iter().flatten().enumerate() {
            let field = format!("{path}.containers[{i}].ports[{j}]");
            let port = p["containerPort"].as_i64().unwrap_or(0);
            if !(1..=65535).contains(&port) {
                out.push(Cause::invalid(format!("{field}.containerPort"), port, "must be between 1 and 65535, inclusive"));
            }
            if p["hostPort"].as_i64().is_some_and(|h| !(0..=65535).contains(&h)) {
                out.push(Cause::invalid(format!("{field}.hostPort"), &p["hostPort"], "must be between 1 and 65535, inclusive"));
            }
            one_of(&p["protocol"], &format!("{field}.protocol"), &["SCTP", "TCP", "UDP"], out);
        }
    }
    one_of(&spec["restartPolicy"], &format!("{path}.restartPolicy"), &["Always", "Never", "OnFailure"], out);
    one_of(&spec["dnsPolicy"], &format!("{path}.dnsPolicy"), &["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"], out);
}

/// A field that, when set, must hold one of `allowed` (listed in Kubernetes' order).
fn one_of(value: &Value, field: &str, allowed: &[&str], out: &mut Vec<Cause>) {
    if let Some(v) = value.as_str().filter(|v| !allowed.contains(v)) {
        let list: Vec<String> = allowed.iter().map(|a| format!("\"{a}\"")).collect();
        out.push(Cause::new("FieldValueNotSupported", field, format!("Unsupported value: \"{v}\": supported values: {}", list.join(", "))));
    }
}

pub fn pod(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    pod_spec_at(&obj["spec"], "spec", &mut out);
    out
}

/// Workloads: a selector matching the template's labels, a valid template, replicas ≥ 0.
pub fn workload(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = &obj["spec"];
    let labels = spec["template"]["metadata"]["labels"].as_object();
    match spec["selector"].as_object() {
        None => out.push(Cause::required("spec.selector")),
        Some(sel) => {
            let match_labels = sel.get("matchLabels").and_then(Value::as_object);
            if match_labels.is_none_or(|m| m.is_empty()) && sel.get("matchExpressions").and_then(Value::as_array).is_none_or(|e| e.is_empty()) {
                out.push(Cause::invalid("spec.selector", "{}", "empty selector is invalid for deployment"));
            }
            let matches = match_labels.is_none_or(|m| m.iter().all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v)));
            if !matches {
                let shown = labels.map(|l| serde_json::to_string(l).unwrap_or_default()).unwrap_or_default();
                out.push(Cause::invalid("spec.template.metadata.labels", shown, "`selector` does not match template `labels`"));
            }
        }
    }
    if spec["replicas"].as_i64().is_some_and(|r| r < 0) {
        out.push(Cause::invalid("spec.replicas", spec["replicas"].as_i64().unwrap_or_default(), "must be greater than or equal to 0"));
    }
    pod_spec_at(&spec["template"]["spec"], "spec.template.spec", &mut out);
    out
}

pub fn job(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = &obj["spec"]["template"]["spec"];
    pod_spec_at(spec, "spec.template.spec", &mut out);
    match spec["restartPolicy"].as_str() {
        Some("OnFailure") | Some("Never") => {}
        other => out.push(Cause::new(
            "FieldValueNotSupported",
            "spec.template.spec.restartPolicy",
            format!("Unsupported value: \"{}\": supported values: \"OnFailure\", \"Never\"", other.unwrap_or_default()),
        )),
    }
    out
}

pub fn cronjob(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    if obj["spec"]["schedule"].as_str().is_none_or(str::is_empty) {
        out.push(Cause::required("spec.schedule"));
    }
    pod_spec_at(&obj["spec"]["jobTemplate"]["spec"]["template"]["spec"], "spec.jobTemplate.spec.template.spec", &mut out);
    out
}

pub fn service(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = &obj["spec"];
    let ty = spec["type"].as_str().unwrap_or("ClusterIP");
    if !matches!(ty, "ClusterIP" | "NodePort" | "LoadBalancer" | "ExternalName") {
        out.push(Cause::new("FieldValueNotSupported", "spec.type", format!("Unsupported value: \"{ty}\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\"")));
    }
    let headless = spec["clusterIP"].as_str() == Some("None");
    let ports = spec["ports"].as_array();
    if ty != "ExternalName" && !headless && ports.is_none_or(|p| p.is_empty()) {
        out.push(Cause::required("spec.ports"));
    }
    for (i, p) in ports.into_iter().flatten().enumerate() {
        let port = p["port"].as_i64().unwrap_or(0);
        if !(1..=65535).contains(&port) {
            out.push(Cause::invalid(format!("spec.ports[{i}].port"), port, "must be between 1 and 65535, inclusive"));
        }
    }
    out
}

fn data_keys(obj: &Value, fields: &[&str]) -> Vec<Cause> {
    let mut out = Vec::new();
    for f in fields {
        for k in obj[*f].as_object().into_iter().flat_map(|m| m.keys()) {
            let ok = !k.is_empty() && k.len() <= 253 && k.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'));
            if !ok {
                out.push(Cause::invalid(format!("{f}[{k}]"), k, "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"));
            }
        }
    }
    out
}

pub fn configmap(obj: &Value) -> Vec<Cause> {
    data_keys(obj, &["data", "binaryData"])
}

pub fn secret(obj: &Value) -> Vec<Cause> {
    data_keys(obj, &["data", "stringData"])
}

/// Roles and ClusterRoles: every rule names verbs, and either resources in API groups or (for
/// ClusterRoles only) non-resource URLs, never both.
pub fn role(obj: &Value) -> Vec<Cause> {
    let namespaced = obj["kind"] == "Role";
    let mut out = Vec::new();
    let present = |v: &Value| v.as_array().is_some_and(|a| !a.is_empty());
    for (i, r) in obj["rules"].as_array().into_iter().flatten().enumerate() {
        let at = |f: &str| format!("rules[{i}].{f}");
        if !present(&r["verbs"]) {
            out.push(Cause::new("FieldValueRequired", at("verbs"), "Required value: verbs must contain at least one value"));
        }
        if present(&r["nonResourceURLs"]) {
            let urls = go_list(&r["nonResourceURLs"]);
            if namespaced {
                out.push(Cause::new("FieldValueInvalid", at("nonResourceURLs"), format!("Invalid value: {urls}: namespaced rules cannot apply to non-resource URLs")));
            }
            if present(&r["apiGroups"]) || present(&r["resources"]) {
                out.push(Cause::new("FieldValueInvalid", at("nonResourceURLs"), format!("Invalid value: {urls}: rules cannot apply to both regular resources and non-resource URLs")));
            }
            continue;
        }
        if !present(&r["apiGroups"]) {
            out.push(Cause::new("FieldValueRequired", at("apiGroups"), "Required value: resource rules must supply at least one api group"));
        }
        if !present(&r["resources"]) {
            out.push(Cause::new("FieldValueRequired", at("resources"), "Required value: resource rules must supply at least one resource"));
        }
    }
    out
}

/// A list as Go's `%v` prints a string slice: `[a b]`.
fn go_list(v: &Value) -> String {
    let items: Vec<&str> = v.as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    format!("[{}]", items.join(" "))
}

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

fn unsupported(field: String, value: &str, supported: &[&str]) -> Cause {
    let list: Vec<String> = supported.iter().map(|s| format!("\"{s}\"")).collect();
    Cause::new("FieldValueNotSupported", field, format!("Unsupported value: \"{value}\": supported values: {}", list.join(", ")))
}

/// RoleBindings and ClusterRoleBindings: a role reference of the RBAC group (a ClusterRoleBinding
/// only to a ClusterRole) and well-formed subjects.
pub fn binding(obj: &Value) -> Vec<Cause> {
    let cluster = obj["kind"] == "ClusterRoleBinding";
    let mut out = Vec::new();
    let str_at = |v: &Value, k: &str| v[k].as_str().unwrap_or_default().to_string();
    let role_ref = &obj["roleRef"];
    let group = str_at(role_ref, "apiGroup");
    if group != RBAC_GROUP {
        out.push(unsupported("roleRef.apiGroup".into(), &group, &[RBAC_GROUP]));
    }
    let kind = str_at(role_ref, "kind");
    let kinds: &[&str] = if cluster { &["ClusterRole"] } else { &["Role", "ClusterRole"] };
    if !kinds.contains(&kind.as_str()) {
        out.push(unsupported("roleRef.kind".into(), &kind, kinds));
    }
    let name = str_at(role_ref, "name");
    if name.is_empty() {
        out.push(Cause::required("roleRef.name"));
    } else if name.contains('/') || name.contains('%') || name == "." || name == ".." {
        out.push(Cause::invalid("roleRef.name", &name, "may not contain '/' or '%', and may not be '.' or '..'"));
    }
    for (i, s) in obj["subjects"].as_array().into_iter().flatten().enumerate() {
        let at = |f: &str| format!("subjects[{i}].{f}");
        if str_at(s, "name").is_empty() {
            out.push(Cause::required(at("name")));
        }
        let group = str_at(s, "apiGroup");
        match str_at(s, "kind").as_str() {
            "ServiceAccount" => {
                if !group.is_empty() {
                    out.push(unsupported(at("apiGroup"), &group, &[""]));
                }
                if cluster && str_at(s, "namespace").is_empty() {
                    out.push(Cause::required(at("namespace")));
                }
            }
            "User" | "Group" => {
                if group != RBAC_GROUP {
                    out.push(unsupported(at("apiGroup"), &group, &[RBAC_GROUP]));
                }
            }
            other => out.push(unsupported(at("kind"), other, &["ServiceAccount", "User", "Group"])),
        }
    }
    out
}

/// IPAddresses: named by an IP in canonical form, held by a parent (a Service).
pub fn ipaddress(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let name = obj["metadata"]["name"].as_str().unwrap_or_default();
    match name.parse::<std::net::IpAddr>() {
        Err(_) => out.push(Cause::invalid("metadata.name", name, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)")),
        Ok(ip) if ip.to_string() != name => out.push(Cause::invalid("metadata.name", name, &format!("must be in canonical form (\"{ip}\")"))),
        Ok(_) => {}
    }
    let parent = &obj["spec"]["parentRef"];
    if !parent.is_object() {
        out.push(Cause::new("FieldValueRequired", "spec.parentRef", "Required value"));
        return out;
    }
    for field in ["resource", "name"] {
        if parent[field].as_str().is_none_or(str::is_empty) {
            out.push(Cause::new("FieldValueRequired", format!("spec.parentRef.{field}"), "Required value"));
        }
    }
    if let Some(group) = parent["group"].as_str().filter(|g| !g.is_empty() && !is_dns_subdomain(g)) {
        out.push(Cause::invalid("spec.parentRef.group", group, "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"));
    }
    out
}

/// ServiceCIDRs: one or two CIDRs (one per IP family), each valid and canonical.
pub fn servicecidr(obj: &Value) -> Vec<Cause> {
    let cidrs: Vec<&Value> = obj["spec"]["cidrs"].as_array().map(|a| a.iter().collect()).unwrap_or_default();
    if cidrs.is_empty() {
        return vec![Cause::new("FieldValueRequired", "spec.cidrs", "Required value: at least one CIDR required")];
    }
    if cidrs.len() > 2 {
        return vec![Cause::new("FieldValueInvalid", "spec.cidrs", "Invalid value: may only hold up to 2 values")];
    }
    let parsed: Vec<Option<ipnet::IpNet>> = cidrs.iter().map(|c| c.as_str().and_then(|s| s.parse().ok())).collect();
    if let [Some(a), Some(b)] = parsed.as_slice() {
        if matches!(a, ipnet::IpNet::V4(_)) == matches!(b, ipnet::IpNet::V4(_)) {
            return vec![Cause::new(
                "FieldValueInvalid",
                "spec.cidrs",
                "Invalid value: may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64",
            )];
        }
    }
    let mut out = Vec::new();
    for (i, (raw, net)) in cidrs.iter().zip(&parsed).enumerate() {
        let shown = raw.as_str().unwrap_or_default();
        match net {
            None => out.push(Cause::invalid(format!("spec.cidrs[{i}]"), shown, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)")),
            Some(n) if n.trunc().to_string() != shown => {
                out.push(Cause::invalid(format!("spec.cidrs[{i}]"), shown, &format!("must be in canonical form (\"{}\")", n.trunc())))
            }
            Some(_) => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rbac_objects() {
        let role = json!({"kind": "Role", "rules": [{"verbs": ["get"], "nonResourceURLs": ["/x"]}, {"verbs": []}]});
        let fields: Vec<String> = super::role(&role).into_iter().map(|c| c.field).collect();
        assert_eq!(fields, ["rules[0].nonResourceURLs", "rules[1].verbs", "rules[1].apiGroups", "rules[1].resources"]);
        let cluster_role = json!({"kind": "ClusterRole", "rules": [{"verbs": ["get"], "nonResourceURLs": ["/x"]}]});
        assert!(super::role(&cluster_role).is_empty());
        let b = json!({"kind": "ClusterRoleBinding", "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
            "subjects": [{"kind": "ServiceAccount", "name": "sa"}, {"kind": "User", "name": "u"}, {"kind": "Robot", "name": "r"}]});
        let causes = binding(&b);
        let fields: Vec<&str> = causes.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(fields, ["roleRef.kind", "subjects[0].namespace", "subjects[1].apiGroup", "subjects[2].kind"]);
        assert_eq!(causes[0].message, "Unsupported value: \"Role\": supported values: \"ClusterRole\"");
    }

    #[test]
    fn pods_need_containers() {
        assert_eq!(pod(&json!({"spec": {}}))[0].field, "spec.containers");
        assert!(pod(&json!({"spec": {"containers": [{"name": "a", "image": "x"}]}})).is_empty());
    }

    #[test]
    fn enumerations_and_ports() {
        let p = json!({"spec": {"restartPolicy": "Sometimes", "containers": [{"name": "a", "image": "x", "imagePullPolicy": "Sometimes", "ports": [{"containerPort": 0}]}]}});
        let fields: Vec<String> = pod(&p).into_iter().map(|c| c.field).collect();
        assert_eq!(fields, ["spec.containers[0].imagePullPolicy", "spec.containers[0].ports[0].containerPort", "spec.restartPolicy"]);
    }

    #[test]
    fn selector_must_match_template() {
        let d = json!({"spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "c"}}, "spec": {"containers": [{"name": "x", "image": "y"}]}}}});
        assert_eq!(workload(&d)[0].field, "spec.template.metadata.labels");
    }
}
