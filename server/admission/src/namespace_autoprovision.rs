//! NamespaceAutoProvision: a create in a namespace that does not exist creates the namespace
//! first (not for a dry run), as the server's own client (`system:apiserver`) would.

use std::sync::{Arc, OnceLock};

use serde_json::Value;

use crate::namespaces::Namespaces;
use crate::{Mutating, Operation, Request};
use machinery::error::{ApiError, ApiResult};

/// How a namespace is created: through the server's loopback client, which exists only once the
/// server's router does, so it is given to the plugin after the chain is built.
#[async_trait::async_trait]
pub trait CreateNamespace: Send + Sync {
    async fn create_namespace(&self, name: &str) -> ApiResult<()>;
}

/// The loopback client, once the server has one.
pub type Creator = Arc<OnceLock<Arc<dyn CreateNamespace>>>;

pub struct NamespaceAutoProvision {
    pub namespaces: Arc<Namespaces>,
    pub creator: Creator,
}

#[async_trait::async_trait]
impl Mutating for NamespaceAutoProvision {
    fn name(&self) -> &'static str {
        "NamespaceAutoProvision"
    }

    async fn admit(&self, r: &Request<'_>, _: &mut Value) -> ApiResult<()> {
        let Some(ns) = r.namespace() else { return Ok(()) };
        if r.dry_run || r.operation != Operation::Create || self.namespaces.get(ns).is_some() {
            return Ok(());
        }
        let Some(creator) = self.creator.get() else { return Err(r.forbidden("not yet ready to handle request")) };
        match creator.create_namespace(ns).await {
            Ok(()) | Err(ApiError::AlreadyExists { .. }) => Ok(()),
            Err(e) => Err(r.forbidden(e)),
        }
    }
}
