//! What a PersistentVolumeClaim uses of quota: `persistentvolumeclaims` and its object count,
//! `requests.storage` (rounded up to a whole byte; what was allocated, when larger), and the same
//! per storage class (`<class>.storageclass.storage.k8s.io/requests.storage`).

use serde_json::Value;

use crate::resource_list::ResourceList;
use machinery::expr::amount::Amount;

pub const RESOURCES: &[&str] = &["count/persistentvolumeclaims", "persistentvolumeclaims", "requests.storage"];

/// What names a storage class's share of a resource.
const BY_CLASS: &str = ".storageclass.storage.k8s.io/";

/// Whether a quota name is a storage class's share of a claim resource.
pub fn by_class(name: &str) -> bool {
    name.split_once(BY_CLASS).is_some_and(|(_, r)| r == "persistentvolumeclaims" || r == "requests.storage")
}

/// The claim's class: the beta annotation, else the field.
fn class(claim: &Value) -> Option<&str> {
    claim["metadata"]["annotations"]["volume.beta.kubernetes.io/storage-class"].as_str().or(claim["spec"]["storageClassName"].as_str()).filter(|c| !c.is_empty())
}

/// The storage the claim holds.
fn storage(claim: &Value) -> Option<Amount> {
    let requested = Amount::parse(claim["spec"]["resources"]["requests"]["storage"].as_str()?).ok()?.round_up();
    let allocated = claim["status"]["allocatedResources"]["storage"].as_str().and_then(|s| Amount::parse(s).ok());
    Some(match allocated {
        Some(a) if a.compare(&requested).is_gt() => a.round_up(),
        _ => requested,
    })
}

pub fn usage(claim: &Value) -> ResourceList {
    let mut out = ResourceList::from([
        ("count/persistentvolumeclaims".to_string(), Amount::count(1)),
        ("persistentvolumeclaims".to_string(), Amount::count(1)),
    ]);
    let class = class(claim);
    if let Some(c) = class {
        out.insert(format!("{c}{BY_CLASS}persistentvolumeclaims"), Amount::count(1));
    }
    if let Some(s) = storage(claim) {
        if let Some(c) = class {
            out.insert(format!("{c}{BY_CLASS}requests.storage"), s.clone());
        }
        out.insert("requests.storage".to_string(), s);
    }
    out
}

/// Whether a status change moves the claim's usage (its allocation, its attribute classes).
pub fn status_moves_usage(claim: &Value, old: &Value) -> bool {
    claim["status"]["allocatedResources"]["storage"] != old["status"]["allocatedResources"]["storage"]
        || super::scopes::attribute_classes(claim) != super::scopes::attribute_classes(old)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource_list::pretty;
    use serde_json::json;

    #[test]
    fn counts_storage_overall_and_by_class() {
        let claim = json!({"spec": {"storageClassName": "fast", "resources": {"requests": {"storage": "1.5"}}}});
        assert_eq!(
            pretty(&usage(&claim)),
            "count/persistentvolumeclaims=1,fast.storageclass.storage.k8s.io/persistentvolumeclaims=1,fast.storageclass.storage.k8s.io/requests.storage=2,persistentvolumeclaims=1,requests.storage=2"
        );
        assert!(by_class("fast.storageclass.storage.k8s.io/requests.storage") && !by_class("requests.storage"));
    }
}
