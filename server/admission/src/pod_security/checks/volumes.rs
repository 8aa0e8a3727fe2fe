//! Checks of a pod's volumes: no hostPath volumes (baseline), and for restricted only the volume
//! types that reach nothing of the node's.

use serde_json::Value;

use super::{join_quote, pluralize, Pod, Set, Violation};

/// The volume sources restricted allows.
const ALLOWED: &[&str] = &["configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "image", "persistentVolumeClaim", "projected", "secret"];

/// The sources restricted refuses, in the order Kubernetes names a volume's type by.
const RESTRICTED: &[&str] = &[
    "hostPath", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "nfs", "iscsi", "glusterfs", "rbd", "flexVolume", "cinder", "cephfs", "flocker", "fc",
    "azureFile", "vsphereVolume", "quobyte", "azureDisk", "photonPersistentDisk", "portworxVolume", "scaleIO", "storageos",
];

fn volumes<'a>(pod: &Pod<'a>) -> impl Iterator<Item = &'a Value> {
    pod.spec["volumes"].as_array().into_iter().flatten()
}

fn set(volume: &Value, source: &str) -> bool {
    volume.get(source).is_some_and(|s| !s.is_null())
}

/// No hostPath volume.
pub fn host_path(pod: &Pod) -> Option<Violation> {
    let bad: Vec<&str> = volumes(pod).filter(|v| set(v, "hostPath")).map(super::name).collect();
    (!bad.is_empty()).then(|| Violation { reason: "hostPath volumes", detail: format!("{} {}", pluralize("volume", "volumes", bad.len()), join_quote(&bad)) })
}

/// Only the volume types of [`ALLOWED`].
pub fn restricted(pod: &Pod) -> Option<Violation> {
    let mut types = Set::new();
    let bad: Vec<&str> = volumes(pod)
        .filter(|v| !ALLOWED.iter().any(|s| set(v, s)))
        .inspect(|v| {
            types.insert(RESTRICTED.iter().find(|s| set(v, s)).copied().unwrap_or("unknown").to_string());
        })
        .map(super::name)
        .collect();
    (!bad.is_empty()).then(|| Violation {
        reason: "restricted volume types",
        detail: format!(
            "{} {} {} {} {}",
            pluralize("volume", "volumes", bad.len()),
            join_quote(&bad),
            pluralize("uses", "use", bad.len()),
            pluralize("restricted volume type", "restricted volume types", types.len()),
            join_quote(&types)
        ),
    })
}
