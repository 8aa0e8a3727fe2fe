//! The namespaces this replica has applied, kept by the apply path ([`Kept`]): the lifecycle
//! check of a create and the namespace selectors of admission policies and Pod Security look a
//! namespace up instead of reading and decoding it again.

use std::ops::Deref;
use std::sync::Arc;

use raft_store::{ApplyObserver, Object};
use serde_json::Value;

use crate::kept::Kept;
use machinery::error::ApiResult;

const PREFIX: &str = "/registry/namespaces/";

/// Namespaces by name.
pub struct Namespaces(Kept);

impl Default for Namespaces {
    fn default() -> Namespaces {
        Namespaces(Kept::new(PREFIX))
    }
}

impl Deref for Namespaces {
    type Target = Kept;

    fn deref(&self) -> &Kept {
        &self.0
    }
}

impl Namespaces {
    /// The namespace `name`; when this replica has not seen it, it may have been made a moment
    /// ago through another replica, so it looks again once caught up with the leader.
    pub async fn lookup(&self, store: &raft_store::Store, name: &str) -> ApiResult<Option<Arc<Value>>> {
        if let Some(found) = self.get(name) {
            return Ok(Some(found));
        }
        store.linearizable_rev().await?;
        Ok(self.get(name))
    }

    /// Whether the namespace is being deleted.
    pub fn terminating(namespace: &Value) -> bool {
        namespace["metadata"].get("deletionTimestamp").is_some()
    }
}

impl ApplyObserver for Namespaces {
    fn prefixes(&self) -> &[&'static str] {
        self.0.prefixes()
    }

    fn applied(&self, key: &str, object: Option<&Object>) {
        self.0.applied(key, object)
    }

    fn reset(&self, objects: &mut dyn Iterator<Item = (&str, &Object)>) {
        self.0.reset(objects)
    }
}
