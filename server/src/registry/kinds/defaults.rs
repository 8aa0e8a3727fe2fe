//! Server-side defaults: the values Kubernetes fills in when a client leaves them out.

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
    set(spec, "enableServiceLinks", json!(true));
    set(spec, "preemptionPolicy", json!("PreemptLowerPriority"));
    set(spec, "priority", json!(0));
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

pub fn pod(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec") {
        pod_spec(spec);
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
        set(spec, "strategy", json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}));
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
        set(spec, "updateStrategy", json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}));
    }
}

pub fn daemonset(obj: &mut Value) {
    template(obj);
    if let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) {
        set(spec, "revisionHistoryLimit", json!(10));
        set(spec, "updateStrategy", json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}));
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
    if spec["type"] != "ExternalName" {
        set(spec, "ipFamilyPolicy", json!("SingleStack"));
        set(spec, "ipFamilies", json!(["IPv4"]));
        set(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
        for p in ports {
            set(p, "protocol", json!("TCP"));
            let port = p["port"].clone();
            set(p, "targetPort", port);
        }
    }
}

pub fn secret(obj: &mut Value) {
    set(obj, "type", json!("Opaque"));
}

pub fn namespace(obj: &mut Value) {
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
        assert_eq!(d["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"], "IfNotPresent");
        let mut s = json!({"spec": {"ports": [{"port": 80}]}});
        service(&mut s);
        assert_eq!(s["spec"]["type"], "ClusterIP");
        assert_eq!(s["spec"]["sessionAffinity"], "None");
        assert_eq!(s["spec"]["ports"][0]["targetPort"], 80);
    }
}
