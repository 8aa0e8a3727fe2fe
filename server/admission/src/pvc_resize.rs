//! PersistentVolumeClaimResize: a claim's storage request may grow only when the claim is bound
//! and its StorageClass (unchanged) allows volume expansion.

use std::sync::Arc;

use crate::default_storage_class::class_of;
use crate::kept::Kept;
use crate::{Operation, Request, Validating};
use machinery::error::ApiResult;
use machinery::expr::quantity;

pub struct PersistentVolumeClaimResize {
    pub classes: Arc<Kept>,
}

#[async_trait::async_trait]
impl Validating for PersistentVolumeClaimResize {
    fn name(&self) -> &'static str {
        "PersistentVolumeClaimResize"
    }

    async fn validate(&self, r: &Request<'_>) -> ApiResult<()> {
        let (Some(claim), Some(old)) = (r.object, r.old) else { return Ok(()) };
        if r.operation != Operation::Update || !r.concerns("", "persistentvolumeclaims") {
            return Ok(());
        }
        let size = |c: &serde_json::Value| c["spec"]["resources"]["requests"]["storage"].as_str().and_then(|s| quantity::parse(s).ok());
        let grows = match (size(claim), size(old)) {
            (Some(new), Some(before)) => new.compare(&before).is_gt(),
            (Some(_), None) => true,
            _ => false,
        };
        if !grows {
            return Ok(());
        }
        if old["status"]["phase"] != "Bound" {
            return Err(r.forbidden("Only bound persistent volume claims can be expanded"));
        }
        let class = class_of(claim);
        let allowed = !class.is_empty() && class == class_of(old) && self.classes.get(class).is_some_and(|c| c["allowVolumeExpansion"] == true);
        if !allowed {
            return Err(r.forbidden("only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize"));
        }
        Ok(())
    }
}
