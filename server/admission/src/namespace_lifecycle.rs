//! NamespaceLifecycle: nothing is created in a namespace that does not exist or is being
//! deleted, and the namespaces the server needs (`default`, `kube-system`, `kube-public`) are
//! never deleted. Runs first among the mutating plugins, as in kube-apiserver, so a create in a
//! missing namespace is answered 404 before any other plugin looks at it.

use std::sync::Arc;

use serde_json::Value;

use crate::namespaces::Namespaces;
use crate::{Mutating, Operation, Request, Validating};
use machinery::error::{ApiError, ApiResult};

/// Namespaces the server needs and never deletes.
const IMMORTAL: &[&str] = &["default", "kube-system", "kube-public"];

pub struct NamespaceLifecycle {
    pub namespaces: Arc<Namespaces>,
    pub store: raft_store::Store,
}

/// Whether `r` is an access review, which answers for a namespace whether it exists or not.
fn is_access_review(r: &Request<'_>) -> bool {
    r.req.info.group == "authorization.k8s.io" && r.req.info.resource == "localsubjectaccessreviews"
}

#[async_trait::async_trait]
impl Mutating for NamespaceLifecycle {
    fn name(&self) -> &'static str {
        "NamespaceLifecycle"
    }

    async fn admit(&self, r: &Request<'_>, _: &mut Value) -> ApiResult<()> {
        let Some(ns) = r.namespace() else { return Ok(()) };
        if is_access_review(r) {
            return Ok(());
        }
        let Some(namespace) = self.namespaces.lookup(&self.store, ns).await? else {
            return Err(ApiError::NotFound { group: String::new(), resource: "namespaces".into(), name: ns.into() });
        };
        if r.operation == Operation::Create && Namespaces::terminating(&namespace) {
            let info = r.req.info;
            return Err(ApiError::NamespaceTerminating { group: info.group.into(), resource: info.resource.into(), name: r.req.name().into(), namespace: ns.into() });
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl Validating for NamespaceLifecycle {
    fn name(&self) -> &'static str {
        "NamespaceLifecycle"
    }

    async fn validate(&self, r: &Request<'_>) -> ApiResult<()> {
        if r.operation == Operation::Delete && r.concerns("", "namespaces") && IMMORTAL.contains(&r.req.name()) {
            return Err(r.forbidden("this namespace may not be deleted"));
        }
        Ok(())
    }
}
