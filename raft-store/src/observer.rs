//! Observers of the apply path: derived state (authorization indexes, graphs) that the server
//! keeps beside the watch cache, updated under the same lock as the objects, so that it is current
//! by the time a write is acknowledged or a read index is reached on this replica.

use std::fmt;
use std::sync::Arc;

use crate::types::Object;

/// Told of every change to a key under one of its prefixes, in log order, on every replica.
pub trait ApplyObserver: Send + Sync {
    /// Key prefixes this observer follows (e.g. `/registry/clusterroles/`).
    fn prefixes(&self) -> &[&'static str];
    /// `key` now holds `object` (`None`: deleted).
    fn applied(&self, key: &str, object: Option<&Object>);
    /// The whole state was replaced (start, snapshot install): forget everything and take in
    /// every object under the prefixes.
    fn reset(&self, objects: &mut dyn Iterator<Item = (&str, &Object)>);
}

/// The observers a store feeds.
#[derive(Clone, Default)]
pub struct Observers(pub Vec<Arc<dyn ApplyObserver>>);

impl Observers {
    pub(crate) fn applied(&self, key: &str, object: Option<&Object>) {
        for o in &self.0 {
            if o.prefixes().iter().any(|p| key.starts_with(p)) {
                o.applied(key, object);
            }
        }
    }

    pub(crate) fn reset(&self, objects: &std::collections::BTreeMap<String, Object>) {
        for o in &self.0 {
            let prefixes = o.prefixes();
            let mut matching = objects
                .iter()
                .filter(|(k, _)| prefixes.iter().any(|p| k.starts_with(p)))
                .map(|(k, v)| (k.as_str(), v));
            o.reset(&mut matching);
        }
    }
}

impl fmt::Debug for Observers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Observers({})", self.0.len())
    }
}
