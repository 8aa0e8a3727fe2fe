//! The pod spec every pod and pod template shares: its defaults and its validation.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::meta::is_dns_subdomain;
use crate::registry::kinds::fields::{one_of, set};

fn containers_mut(spec: &mut Value) -> impl Iterator<Item = &mut Value> {
    let mut all = Vec::new();
    if let Some(o) = spec.as_object_mut() {
        for (k, v) in o.iter_mut() {
            if matches!(k.as_str(), "containers" | "initContainers") {
                if let Some(a) = v.as_array_mut() {
                    all.extend(a.iter_mut());
                }
            }
        }
    }
    all.into_iter()
}

/// Defaults of a pod spec (pods and every pod template).
pub fn defaults(spec: &mut Value) {
    if !spec.is_object() {
        return;
    }
    set(spec, "restartPolicy", json!("Always"));
    set(spec, "dnsPolicy", json!("ClusterFirst"));
    set(spec, "terminationGracePeriodSeconds", json!(30));
    set(spec, "schedulerName", json!("default-scheduler"));
    set(spec, "securityContext", json!({}));
    for c in containers_mut(spec) {
        set(c, "terminationMessagePath", json!("/dev/termination-log"));
        set(c, "terminationMessagePolicy", json!("File"));
        let image = c["image"].as_str().unwrap_or_default().to_string();
        let tag = image.rsplit('/').next().unwrap_or_default();
        let latest = !tag.contains(':') || tag.ends_with(":latest");
        let policy = if latest && !image.contains('@') { "Always" } else { "IfNotPresent" };
        set(c, "imagePullPolicy", json!(policy));
        set(c, "resources", json!({}));
        if let Some(ports) = c.get_mut("ports").and_then(Value::as_array_mut) {
            for p in ports {
                set(p, "protocol", json!("TCP"));
            }
        }
    }
}

/// The defaults of `spec.template.spec`.
pub fn template_defaults(obj: &mut Value) {
    if let Some(spec) = obj.pointer_mut("/spec/template/spec") {
        defaults(spec);
    }
}

/// The causes of a pod spec found at `path`.
pub fn validate(spec: &Value, path: &str, out: &mut Vec<Cause>) {
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
