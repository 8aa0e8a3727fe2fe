//! The pod spec every pod and pod template shares: its defaults and its validation.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::registry::kinds::fields::{dns_label, duplicate, forbidden, invalid, port, required_str, set, unsupported};

fn containers_mut(spec: &mut Value) -> impl Iterator<Item = &mut Value> {
    let mut all = Vec::new();
    if let Some(o) = spec.as_object_mut() {
        for (k, v) in o.iter_mut() {
            if matches!(k.as_str(), "containers" | "initContainers" | "ephemeralContainers") {
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
    for volume in spec.get_mut("volumes").and_then(Value::as_array_mut).into_iter().flatten() {
        volume_defaults(volume);
    }
    for c in containers_mut(spec) {
        set(c, "terminationMessagePath", json!("/dev/termination-log"));
        set(c, "terminationMessagePolicy", json!("File"));
        let image = c["image"].as_str().unwrap_or_default().to_string();
        let tag = image.rsplit('/').next().unwrap_or_default();
        let latest = !tag.contains(':') || tag.ends_with(":latest");
        let policy = if latest && !image.contains('@') { "Always" } else { "IfNotPresent" };
        set(c, "imagePullPolicy", json!(policy));
        set(c, "resources", json!({}));
        for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
            if let Some(p) = c.get_mut(probe).filter(|p| p.is_object()) {
                for (k, v) in [("timeoutSeconds", 1), ("periodSeconds", 10), ("successThreshold", 1), ("failureThreshold", 3)] {
                    set(p, k, json!(v));
                }
                http_get_defaults(p);
            }
        }
        for hook in ["postStart", "preStop"] {
            if let Some(h) = c.pointer_mut(&format!("/lifecycle/{hook}")) {
                http_get_defaults(h);
            }
        }
        if let Some(ports) = c.get_mut("ports").and_then(Value::as_array_mut) {
            for p in ports {
                set(p, "protocol", json!("TCP"));
            }
        }
    }
}

/// The volume sources whose file mode defaults to 0644.
const MODE_DEFAULTED: &[&str] = &["secret", "configMap", "downwardAPI", "projected"];

/// A volume's defaults: a volume naming no source is an empty directory; the file sources' mode
/// 0644; a host path's type empty (unchecked); iSCSI's and RBD's settings.
fn volume_defaults(volume: &mut Value) {
    let Some(fields) = volume.as_object_mut() else { return };
    if fields.keys().all(|k| k == "name") {
        fields.insert("emptyDir".into(), json!({}));
    }
    for source in MODE_DEFAULTED {
        if let Some(s) = fields.get_mut(*source).filter(|s| s.is_object()) {
            set(s, "defaultMode", json!(420));
        }
    }
    let settings: &[(&str, &[(&str, &str)])] = &[("hostPath", &[("type", "")]), ("iscsi", &[("iscsiInterface", "default")]), ("rbd", &[("pool", "rbd"), ("user", "admin"), ("keyring", "/etc/ceph/keyring")])];
    for (source, defaults) in settings {
        if let Some(s) = fields.get_mut(*source).filter(|s| s.is_object()) {
            for (field, value) in *defaults {
                set(s, field, json!(value));
            }
        }
    }
}

/// An HTTP check (of a probe or a lifecycle hook), when there is one: path `/`, scheme `HTTP`.
fn http_get_defaults(action: &mut Value) {
    if let Some(get) = action.get_mut("httpGet").filter(|g| g.is_object()) {
        set(get, "path", json!("/"));
        set(get, "scheme", json!("HTTP"));
    }
}

/// The defaults of `spec.template.spec`.
pub fn template_defaults(obj: &mut Value) {
    if let Some(spec) = obj.pointer_mut("/spec/template/spec") {
        defaults(spec);
    }
}

/// The causes of a pod template found at `path`: its labels, then its pod spec.
pub fn validate_template(template: &Value, path: &str, out: &mut Vec<Cause>) {
    crate::meta::validate_labels(&template["metadata"]["labels"], &format!("{path}.labels"), out);
    validate(&template["spec"], &format!("{path}.spec"), out);
}

/// The causes of a pod spec found at `path`, in the order Kubernetes finds them.
pub fn validate(spec: &Value, path: &str, out: &mut Vec<Cause>) {
    if spec["containers"].as_array().is_none_or(Vec::is_empty) {
        out.push(Cause::required(format!("{path}.containers")));
    }
    // Each container's own fields, a name no other container of any kind has, and what an
    // ephemeral container may not use; container by container, as Kubernetes finds them.
    let regular: Vec<&Value> = ["containers", "initContainers"].iter().flat_map(|l| spec[*l].as_array().into_iter().flatten()).map(|c| &c["name"]).collect();
    let mut names: Vec<&Value> = Vec::new();
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        for (i, c) in spec[list].as_array().into_iter().flatten().enumerate() {
            let at = format!("{path}.{list}[{i}]");
            container(c, &at, out);
            if names.contains(&&c["name"]) {
                out.push(duplicate(format!("{at}.name"), &c["name"]));
            } else {
                names.push(&c["name"]);
            }
            if list == "ephemeralContainers" {
                ephemeral(c, &at, &regular, out);
            }
        }
    }
    policy(&spec["restartPolicy"], format!("{path}.restartPolicy"), &["Always", "OnFailure", "Never"], out);
    policy(&spec["dnsPolicy"], format!("{path}.dnsPolicy"), &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"], out);
    crate::meta::validate_labels(&spec["nodeSelector"], &format!("{path}.nodeSelector"), out);
    if spec["activeDeadlineSeconds"].as_i64().is_some_and(|d| !(1..=i64::from(i32::MAX)).contains(&d)) {
        out.push(invalid(format!("{path}.activeDeadlineSeconds"), &spec["activeDeadlineSeconds"], "must be between 1 and 2147483647, inclusive"));
    }
    for name in ["hostname", "subdomain"] {
        dns_label(&spec[name], &format!("{path}.{name}"), out);
    }
}

/// What only an ephemeral container is checked for: a target among the pod's other containers,
/// and none of the fields it may not rely on (in the order of Kubernetes' type), no subPath.
fn ephemeral(c: &Value, at: &str, regular: &[&Value], out: &mut Vec<Cause>) {
    if let Some(target) = c["targetContainerName"].as_str().filter(|t| !t.is_empty() && !regular.iter().any(|n| n.as_str() == Some(t))) {
        out.push(Cause::new("FieldValueNotFound", format!("{at}.targetContainerName"), format!("Not found: {target:?}")));
    }
    const FORBIDDEN: &str = "cannot be set for an Ephemeral Container";
    for field in ["ports", "resources", "resizePolicy", "restartPolicy", "restartPolicyRules", "livenessProbe", "readinessProbe", "startupProbe", "lifecycle"] {
        if is_set(&c[field]) {
            out.push(forbidden(format!("{at}.{field}"), FORBIDDEN));
        }
    }
    for (j, m) in c["volumeMounts"].as_array().into_iter().flatten().enumerate() {
        for field in ["subPath", "subPathExpr"] {
            if is_set(&m[field]) {
                out.push(forbidden(format!("{at}.volumeMounts[{j}].{field}"), FORBIDDEN));
            }
        }
    }
}

/// Whether a field holds other than its type's zero value (absent, null, empty).
fn is_set(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
        _ => true,
    }
}

/// One container's own fields: its name, image, termination message policy, ports and pull
/// policy.
fn container(c: &Value, at: &str, out: &mut Vec<Cause>) {
    match c["name"].as_str() {
        None | Some("") => out.push(Cause::required(format!("{at}.name"))),
        Some(_) => dns_label(&c["name"], &format!("{at}.name"), out),
    }
    required_str(&c["image"], &format!("{at}.image"), out);
    policy(&c["terminationMessagePolicy"], format!("{at}.terminationMessagePolicy"), &["File", "FallbackToLogsOnError"], out);
    for (j, p) in c["ports"].as_array().into_iter().flatten().enumerate() {
        let at = format!("{at}.ports[{j}]");
        if p["containerPort"].as_i64().unwrap_or(0) == 0 {
            out.push(Cause::required(format!("{at}.containerPort")));
        } else {
            port(&p["containerPort"], &format!("{at}.containerPort"), out);
        }
        if p["hostPort"].as_i64().unwrap_or(0) != 0 {
            port(&p["hostPort"], &format!("{at}.hostPort"), out);
        }
        policy(&p["protocol"], format!("{at}.protocol"), &["SCTP", "TCP", "UDP"], out);
    }
    policy(&c["imagePullPolicy"], format!("{at}.imagePullPolicy"), &["Always", "IfNotPresent", "Never"], out);
}

/// An enumerated field the defaults fill: an empty value is missing, another unknown one
/// unsupported.
fn policy(v: &Value, field: String, allowed: &[&str], out: &mut Vec<Cause>) {
    match v.as_str() {
        Some("") => out.push(Cause::required(field)),
        Some(s) if !allowed.contains(&s) => out.push(unsupported(field, s, allowed)),
        _ => {}
    }
}
