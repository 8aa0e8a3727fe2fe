//! StorageObjectInUseProtection: new PersistentVolumes, PersistentVolumeClaims and
//! VolumeAttributesClasses get their protection finalizer (`kubernetes.io/pv-protection`,
//! `pvc-protection`, `vac-protection`), which kube-controller-manager's protection
//! controllers remove once nothing uses them, so that a volume in use is not deleted under a pod.

use serde_json::{json, Value};

use crate::{Mutating, Operation, Request};
use machinery::error::ApiResult;

/// Each protected resource: its group, resource and finalizer.
const PROTECTED: &[(&str, &str, &str)] = &[
    ("", "persistentvolumes", "kubernetes.io/pv-protection"),
    ("", "persistentvolumeclaims", "kubernetes.io/pvc-protection"),
    ("storage.k8s.io", "volumeattributesclasses", "kubernetes.io/vac-protection"),
];

pub struct StorageObjectInUseProtection;

#[async_trait::async_trait]
impl Mutating for StorageObjectInUseProtection {
    fn name(&self) -> &'static str {
        "StorageObjectInUseProtection"
    }

    async fn admit(&self, r: &Request<'_>, object: &mut Value) -> ApiResult<()> {
        let Some((_, _, finalizer)) = PROTECTED.iter().find(|(g, res, _)| r.concerns(g, res)).filter(|_| r.operation == Operation::Create) else { return Ok(()) };
        let finalizers = &mut object["metadata"]["finalizers"];
        if !finalizers.as_array().is_some_and(|list| list.iter().any(|f| f == finalizer)) {
            crate::push(finalizers, json!(finalizer));
        }
        Ok(())
    }
}
