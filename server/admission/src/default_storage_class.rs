//! DefaultStorageClass: a new PersistentVolumeClaim that names no class (neither
//! `spec.storageClassName` nor the old `volume.beta.kubernetes.io/storage-class` annotation)
//! gets the default StorageClass, annotated `storageclass.kubernetes.io/is-default-class:
//! "true"` (or the beta annotation), the newest if several.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::classes::{annotated, newest_default};
use crate::kept::Kept;
use crate::{Mutating, Operation, Request};
use machinery::error::ApiResult;

/// The annotation that named a claim's class before `spec.storageClassName`.
pub const BETA_CLASS: &str = "volume.beta.kubernetes.io/storage-class";

pub struct DefaultStorageClass {
    pub classes: Arc<Kept>,
}

#[async_trait::async_trait]
impl Mutating for DefaultStorageClass {
    fn name(&self) -> &'static str {
        "DefaultStorageClass"
    }

    async fn admit(&self, r: &Request<'_>, claim: &mut Value) -> ApiResult<()> {
        if r.operation != Operation::Create || !r.concerns("", "persistentvolumeclaims") {
            return Ok(());
        }
        if !claim["spec"]["storageClassName"].is_null() || !claim["metadata"]["annotations"][BETA_CLASS].is_null() {
            return Ok(());
        }
        let is_default = |c: &Value| annotated(c, "storageclass.kubernetes.io/is-default-class") || annotated(c, "storageclass.beta.kubernetes.io/is-default-class");
        if let Some(class) = newest_default(&self.classes, is_default) {
            claim["spec"]["storageClassName"] = json!(class["metadata"]["name"]);
        }
        Ok(())
    }
}

/// A claim's class: the beta annotation's, else `spec.storageClassName`.
pub fn class_of(claim: &Value) -> &str {
    claim["metadata"]["annotations"][BETA_CLASS].as_str().or_else(|| claim["spec"]["storageClassName"].as_str()).unwrap_or_default()
}
