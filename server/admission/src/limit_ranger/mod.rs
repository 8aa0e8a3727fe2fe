//! LimitRanger, both phases, as kube-apiserver has it: a new pod (or a pod's `resize`) gets
//! its namespace's LimitRanges' container defaults ([`defaults`]), then pods and
//! PersistentVolumeClaims, created or updated, are refused (403, `pods "p" is forbidden: …`)
//! when they break a range's bounds ([`constraints`]). A plain pod update is not looked at, nor
//! any other subresource, nor an object already being deleted. The ranges are read from the
//! index the apply path keeps ([`crate::by_namespace`]), not from the store.

pub mod constraints;
pub mod defaults;

use std::sync::Arc;

use serde_json::Value;

use crate::by_namespace::ByNamespace;
use crate::{Mutating, Request, Validating};
use access::authz::rbac::aggregate;
use machinery::error::{ApiError, ApiResult};

/// Where LimitRanges are stored.
pub const PREFIX: &str = "/registry/limitranges/";

pub struct LimitRanger {
    pub ranges: Arc<ByNamespace>,
}

/// Whether the plugin looks at the write: pods and claims (a pod's spec only through `resize`
/// once it exists), not objects being deleted.
fn concerns(r: &Request<'_>) -> bool {
    let info = r.req.info;
    if !info.group.is_empty() || r.operation == crate::Operation::Delete {
        return false;
    }
    if r.old.is_some_and(|old| old["metadata"].get("deletionTimestamp").is_some_and(|t| !t.is_null())) {
        return false;
    }
    let update = r.operation == crate::Operation::Update;
    match (info.resource, r.req.subresource.as_deref()) {
        ("pods", Some("resize")) => update,
        (_, Some(_)) => false,
        ("pods", None) => !update,
        ("persistentvolumeclaims", None) => true,
        _ => false,
    }
}

impl LimitRanger {
    fn ranges(&self, r: &Request<'_>) -> Vec<Arc<Value>> {
        self.ranges.list(r.req.namespace.as_deref().unwrap_or_default()).into_iter().map(|s| s.value).collect()
    }
}

#[async_trait::async_trait]
impl Mutating for LimitRanger {
    fn name(&self) -> &'static str {
        "LimitRanger"
    }

    async fn admit(&self, r: &Request<'_>, object: &mut Value) -> ApiResult<()> {
        if !concerns(r) || r.req.info.resource != "pods" {
            return Ok(());
        }
        // The pod's QoS class is derived after the mutating phase, from what this sets.
        for range in self.ranges(r) {
            defaults::apply(&range, object);
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl Validating for LimitRanger {
    fn name(&self) -> &'static str {
        "LimitRanger"
    }

    async fn validate(&self, r: &Request<'_>) -> ApiResult<()> {
        let Some(object) = r.object.filter(|_| concerns(r)) else { return Ok(()) };
        for range in self.ranges(r) {
            let broken = match r.req.info.resource {
                "pods" => constraints::pod(&range, object),
                _ => constraints::claim(&range, object),
            };
            if !broken.is_empty() {
                return Err(ApiError::forbidden("", r.req.info.resource, r.req.name(), aggregate(&broken)));
            }
        }
        Ok(())
    }
}
