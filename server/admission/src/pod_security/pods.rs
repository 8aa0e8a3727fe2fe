//! What of a write PodSecurity looks at: the pod subresources it ignores, the pod updates that
//! change nothing it checks, and where each pod-template kind keeps its template.

use serde_json::Value;

/// Pod subresources that cannot change what the checks read.
pub const IGNORED_SUBRESOURCES: &[&str] = &["exec", "attach", "binding", "eviction", "log", "portforward", "proxy", "status"];

/// The path of the pod template in an object of the kinds that embed one.
pub fn template_path(group: &str, resource: &str) -> Option<&'static [&'static str]> {
    Some(match (group, resource) {
        ("", "replicationcontrollers") | ("apps", "replicasets" | "deployments" | "statefulsets" | "daemonsets") | ("batch", "jobs") => &["spec", "template"],
        ("", "podtemplates") => &["template"],
        ("batch", "cronjobs") => &["spec", "jobTemplate", "spec", "template"],
        _ => return None,
    })
}

/// Whether a pod update may change what the checks see: of the fields a pod may change, only
/// its containers' images and its ephemeral containers count.
pub fn significant_update(pod: &Value, old: &Value) -> bool {
    for key in ["containers", "initContainers"] {
        let (new, old) = (list(pod, key), list(old, key));
        if new.len() != old.len() || new.iter().zip(old).any(|(n, o)| n["image"] != o["image"]) {
            return true;
        }
    }
    let old_ephemeral = list(old, "ephemeralContainers");
    list(pod, "ephemeralContainers").iter().any(|c| old_ephemeral.iter().find(|o| o["name"] == c["name"]).is_none_or(|o| o["image"] != c["image"]))
}

fn list<'a>(pod: &'a Value, key: &str) -> &'a [Value] {
    pod["spec"][key].as_array().map_or(&[], Vec::as_slice)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_images_and_ephemeral_containers_are_significant() {
        let pod = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
        let mut relabelled = pod.clone();
        relabelled["metadata"]["labels"]["a"] = json!("2");
        assert!(!significant_update(&relabelled, &pod));
        let mut reimaged = pod.clone();
        reimaged["spec"]["containers"][0]["image"] = json!("busybox");
        assert!(significant_update(&reimaged, &pod));
        let mut debugged = pod.clone();
        debugged["spec"]["ephemeralContainers"] = json!([{"name": "debug", "image": "busybox"}]);
        assert!(significant_update(&debugged, &pod));
        assert!(!significant_update(&debugged, &debugged.clone()));
    }
}
