//! The cluster's classes as this replica has applied them ([`Kept`] each): PriorityClasses,
//! StorageClasses, IngressClasses and RuntimeClasses, which the Priority, DefaultStorageClass,
//! PersistentVolumeClaimResize, DefaultIngressClass and RuntimeClass plugins read on writes.

use std::sync::Arc;

use raft_store::ApplyObserver;
use serde_json::Value;

use crate::kept::Kept;

pub struct Classes {
    pub priority: Arc<Kept>,
    pub storage: Arc<Kept>,
    pub ingress: Arc<Kept>,
    pub runtime: Arc<Kept>,
}

impl Default for Classes {
    fn default() -> Classes {
        Classes {
            priority: Arc::new(Kept::new("/registry/scheduling.k8s.io/priorityclasses/")),
            storage: Arc::new(Kept::new("/registry/storage.k8s.io/storageclasses/")),
            ingress: Arc::new(Kept::new("/registry/networking.k8s.io/ingressclasses/")),
            runtime: Arc::new(Kept::new("/registry/node.k8s.io/runtimeclasses/")),
        }
    }
}

impl Classes {
    /// What the apply path feeds.
    pub fn observers(&self) -> Vec<Arc<dyn ApplyObserver>> {
        vec![self.priority.clone(), self.storage.clone(), self.ingress.clone(), self.runtime.clone()]
    }
}

/// The default class among `classes`, as Kubernetes picks it when several are marked so: the
/// newest, and of those created in the same second the first by name.
pub fn newest_default(classes: &Kept, is_default: impl Fn(&Value) -> bool) -> Option<Arc<Value>> {
    let mut defaults: Vec<Arc<Value>> = classes.all().into_iter().filter(|c| is_default(c)).collect();
    // `all` is in name order and the sort is stable: equal times keep the first name first.
    defaults.sort_by(|a, b| created(b).cmp(created(a)));
    defaults.into_iter().next()
}

fn created(class: &Value) -> &str {
    class["metadata"]["creationTimestamp"].as_str().unwrap_or_default()
}

/// Whether an annotation of the object is `"true"`.
pub fn annotated(object: &Value, annotation: &str) -> bool {
    object["metadata"]["annotations"][annotation] == "true"
}
