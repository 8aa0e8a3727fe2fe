//! Server-side defaults: the values Kubernetes fills in when a client leaves them out.

use base64::Engine;
use serde_json::{json, Value};

/// Sets `obj[key]` when absent or null.
fn set(obj: &mut Value, key: &str, value: Value) {
    if obj.get(key).is_none_or(Value::is_null) {
        obj[key] = value;
    }
}

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
pub fn pod_spec(spec: &mut Value) {
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

fn template(obj: &mut Value) {
    if let Some(spec) = obj.pointer_mut("/spec/template/spec") {
        pod_spec(spec);
    }
}

/// Pods get the pod spec defaults and, unlike templates, service links and a priority.
pub fn pod(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) {
        pod_spec(spec);
        set(spec, "enableServiceLinks", json!(true));
        set(spec, "preemptionPolicy", json!("PreemptLowerPriority"));
        set(spec, "priority", json!(0));
    }
    if obj["status"]["phase"].is_null() {
        obj["status"]["phase"] = json!("Pending");
    }
}

pub fn deployment(obj: &mut Value) {
    template(obj);
    if let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) {
        set(spec, "replicas", json!(1));
        set(spec, "revisionHistoryLimit", json!(10));
        set(spec, "progressDeadlineSeconds", json!(600));
        update_strategy(spec, "strategy", json!({"maxUnavailable": "25%", "maxSurge": "25%"}));
    }
}

/// An update strategy (`spec.strategy` or `spec.updateStrategy`): type `RollingUpdate` unless
/// given, and for that type every rolling update parameter the client left out.
fn update_strategy(spec: &mut Value, key: &str, rolling_defaults: Value) {
    set(spec, key, json!({}));
    let strategy = &mut spec[key];
    if !strategy.is_object() {
        return;
    }
    if strategy["type"].as_str().is_none_or(str::is_empty) {
        strategy["type"] = json!("RollingUpdate");
    }
    if strategy["type"] == "RollingUpdate" {
        set(strategy, "rollingUpdate", json!({}));
        if let Some(defaults) = rolling_defaults.as_object() {
            for (k, v) in defaults {
                set(&mut strategy["rollingUpdate"], k, v.clone());
            }
        }
    }
}

pub fn replicated(obj: &mut Value) {
    template(obj);
    if let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) {
        set(spec, "replicas", json!(1));
    }
}

pub fn statefulset(obj: &mut Value) {
    replicated(obj);
    if let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) {
        set(spec, "podManagementPolicy", json!("OrderedReady"));
        set(spec, "revisionHistoryLimit", json!(10));
        update_strategy(spec, "updateStrategy", json!({"partition": 0}));
        set(spec, "persistentVolumeClaimRetentionPolicy", json!({"whenDeleted": "Retain", "whenScaled": "Retain"}));
    }
}

pub fn daemonset(obj: &mut Value) {
    template(obj);
    if let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) {
        set(spec, "revisionHistoryLimit", json!(10));
        update_strategy(spec, "updateStrategy", json!({"maxUnavailable": 1, "maxSurge": 0}));
    }
}

pub fn job(obj: &mut Value) {
    template(obj);
    if let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) {
        set(spec, "backoffLimit", json!(6));
        set(spec, "completions", json!(1));
        set(spec, "parallelism", json!(1));
        set(spec, "completionMode", json!("NonIndexed"));
        set(spec, "suspend", json!(false));
    }
}

pub fn cronjob(obj: &mut Value) {
    if let Some(spec) = obj.pointer_mut("/spec/jobTemplate/spec/template/spec") {
        pod_spec(spec);
    }
    if let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) {
        set(spec, "concurrencyPolicy", json!("Allow"));
        set(spec, "suspend", json!(false));
        set(spec, "successfulJobsHistoryLimit", json!(3));
        set(spec, "failedJobsHistoryLimit", json!(1));
    }
}

pub fn service(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) else { return };
    set(spec, "type", json!("ClusterIP"));
    set(spec, "sessionAffinity", json!("None"));
    if spec["clusterIP"] == "None" {
        set(spec, "clusterIPs", json!(["None"]));
    }
    if spec["type"] != "ExternalName" {
        set(spec, "ipFamilyPolicy", json!("SingleStack"));
        set(spec, "ipFamilies", json!(["IPv4"]));
        set(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
        for p in ports {
            set(p, "protocol", json!("TCP"));
            // A zero node port is an unset one.
            if p["nodePort"] == 0 {
                p.as_object_mut().map(|o| o.remove("nodePort"));
            }
            // An unset, zero or empty target port (Protobuf clients send a zero) is the port.
            if matches!(&p["targetPort"], Value::Null) || p["targetPort"] == 0 || p["targetPort"] == "" {
                p["targetPort"] = p["port"].clone();
            }
        }
    }
}

/// `stringData` is write-only: its entries are merged into `data`, base64-encoded, and win.
pub fn secret(obj: &mut Value) {
    set(obj, "type", json!("Opaque"));
    let Some(Value::Object(strings)) = obj.as_object_mut().and_then(|o| o.remove("stringData")) else { return };
    set(obj, "data", json!({}));
    for (k, v) in strings {
        let encoded = base64::engine::general_purpose::STANDARD.encode(v.as_str().unwrap_or_default());
        obj["data"][k] = json!(encoded);
    }
}

pub fn priority_class(obj: &mut Value) {
    set(obj, "preemptionPolicy", json!("PreemptLowerPriority"));
}

/// Namespaces carry their own name as the `kubernetes.io/metadata.name` label.
pub fn namespace(obj: &mut Value) {
    let name = obj["metadata"]["name"].clone();
    if name.is_string() {
        set(&mut obj["metadata"], "labels", json!({}));
        obj["metadata"]["labels"]["kubernetes.io/metadata.name"] = name;
    }
    if obj["spec"]["finalizers"].is_null() {
        obj["spec"]["finalizers"] = json!(["kubernetes"]);
    }
    if obj["status"]["phase"].is_null() {
        obj["status"]["phase"] = json!("Active");
    }
}

pub fn pvc(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) {
        set(spec, "volumeMode", json!("Filesystem"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_string_data_moves_into_data() {
        let mut s = json!({"data": {"a": "eA==", "b": "eA=="}, "stringData": {"b": "yy", "c": "z"}});
        secret(&mut s);
        assert_eq!(s, json!({"type": "Opaque", "data": {"a": "eA==", "b": "eXk=", "c": "eg=="}}));
    }

    #[test]
    fn namespaces_are_labelled_with_their_name() {
        let mut n = json!({"metadata": {"name": "team-a", "labels": {"x": "y"}}});
        namespace(&mut n);
        assert_eq!(n["metadata"]["labels"], json!({"x": "y", "kubernetes.io/metadata.name": "team-a"}));
    }

    #[test]
    fn pod_and_deployment_defaults() {
        let mut p = json!({"spec": {"containers": [{"name": "a", "image": "nginx"}]}});
        pod(&mut p);
        assert_eq!(p["spec"]["restartPolicy"], "Always");
        assert_eq!(p["spec"]["dnsPolicy"], "ClusterFirst");
        assert_eq!(p["spec"]["terminationGracePeriodSeconds"], 30);
        assert_eq!(p["spec"]["containers"][0]["imagePullPolicy"], "Always");
        let mut d = json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "nginx:1.2"}]}}}});
        deployment(&mut d);
        assert_eq!(d["spec"]["replicas"], 1);
        assert_eq!(d["spec"]["strategy"]["type"], "RollingUpdate");
        assert_eq!(d["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");
        assert_eq!(d["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"], "IfNotPresent");
        assert!(d["spec"]["template"]["spec"].get("priority").is_none(), "only pods get a priority");
        assert_eq!(p["spec"]["priority"], 0);
        // An empty strategy, or one with only some parameters, is completed the same way.
        let mut d = json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": 2}}}});
        deployment(&mut d);
        assert_eq!(d["spec"]["strategy"], json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 2, "maxUnavailable": "25%"}}));
        let mut d = json!({"spec": {"strategy": {"type": "Recreate"}}});
        deployment(&mut d);
        assert_eq!(d["spec"]["strategy"], json!({"type": "Recreate"}));
        let mut s = json!({"spec": {"ports": [{"port": 80}]}});
        service(&mut s);
        assert_eq!(s["spec"]["type"], "ClusterIP");
        assert_eq!(s["spec"]["sessionAffinity"], "None");
        assert_eq!(s["spec"]["ports"][0]["targetPort"], 80);
        let mut s = json!({"spec": {"ports": [{"port": 80, "targetPort": 0}, {"port": 81, "targetPort": "web"}]}});
        service(&mut s);
        assert_eq!(s["spec"]["ports"][0]["targetPort"], 80);
        assert_eq!(s["spec"]["ports"][1]["targetPort"], "web");
    }
}
