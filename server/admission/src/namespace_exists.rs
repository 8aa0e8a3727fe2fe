//! NamespaceExists: a write to a namespaced object is refused (404 for the namespace) when its
//! namespace does not exist. NamespaceLifecycle does this and more; this is the plugin an
//! operator turns on alone.

use std::sync::Arc;

use crate::namespaces::Namespaces;
use crate::{Request, Validating};
use machinery::error::{ApiError, ApiResult};

pub struct NamespaceExists {
    pub namespaces: Arc<Namespaces>,
    pub store: raft_store::Store,
}

#[async_trait::async_trait]
impl Validating for NamespaceExists {
    fn name(&self) -> &'static str {
        "NamespaceExists"
    }

    async fn validate(&self, r: &Request<'_>) -> ApiResult<()> {
        let Some(ns) = r.namespace() else { return Ok(()) };
        if self.namespaces.lookup(&self.store, ns).await?.is_some() {
            return Ok(());
        }
        Err(ApiError::NotFound { group: String::new(), resource: "namespaces".into(), name: ns.into() })
    }
}
