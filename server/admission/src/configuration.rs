//! The admission configuration this replica has applied (webhook configurations and admission
//! policy bindings), kept by the apply path: each object decoded once when it is written, so that
//! a write finds the configurations that may concern it without listing and decoding them from
//! the store, and one look-up that finds none tells it that there is nothing to do.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use raft_store::{ApplyObserver, Object};
use serde_json::Value;

pub const MUTATING_WEBHOOKS: &str = "/registry/admissionregistration.k8s.io/mutatingwebhookconfigurations/";
pub const VALIDATING_WEBHOOKS: &str = "/registry/admissionregistration.k8s.io/validatingwebhookconfigurations/";
pub const VALIDATING_POLICY_BINDINGS: &str = "/registry/admissionregistration.k8s.io/validatingadmissionpolicybindings/";
pub const MUTATING_POLICY_BINDINGS: &str = "/registry/admissionregistration.k8s.io/mutatingadmissionpolicybindings/";

const PREFIXES: &[&str] = &[MUTATING_WEBHOOKS, VALIDATING_WEBHOOKS, VALIDATING_POLICY_BINDINGS, MUTATING_POLICY_BINDINGS];

/// The decoded objects under [`PREFIXES`], by storage key.
#[derive(Default)]
pub struct Configuration {
    by_key: RwLock<BTreeMap<String, Arc<Value>>>,
}

impl Configuration {
    /// The objects under `prefix` (one of the constants above), in key order, that is in name
    /// order.
    pub fn under(&self, prefix: &str) -> Vec<Arc<Value>> {
        let by_key = self.by_key.read().unwrap_or_else(|e| e.into_inner());
        by_key.range(prefix.to_string()..).take_while(|(k, _)| k.starts_with(prefix)).map(|(_, v)| v.clone()).collect()
    }
}

/// The decoded object a stored one holds (one that cannot be decoded counts as absent).
fn decode(object: &Object) -> Option<Arc<Value>> {
    serde_json::from_slice(&object.data).ok().map(Arc::new)
}

impl ApplyObserver for Configuration {
    fn prefixes(&self) -> &[&'static str] {
        PREFIXES
    }

    fn applied(&self, key: &str, object: Option<&Object>) {
        let mut by_key = self.by_key.write().unwrap_or_else(|e| e.into_inner());
        match object.and_then(decode) {
            Some(v) => by_key.insert(key.to_string(), v),
            None => by_key.remove(key),
        };
    }

    fn reset(&self, objects: &mut dyn Iterator<Item = (&str, &Object)>) {
        let fresh = objects.filter(|(key, _)| PREFIXES.iter().any(|p| key.starts_with(p))).filter_map(|(key, o)| Some((key.to_string(), decode(o)?))).collect();
        *self.by_key.write().unwrap_or_else(|e| e.into_inner()) = fresh;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(name: &str) -> Object {
        Object { rev: 1, data: bytes::Bytes::from(format!(r#"{{"metadata":{{"name":"{name}"}}}}"#)) }
    }

    fn names(index: &Configuration, prefix: &str) -> Vec<String> {
        index.under(prefix).iter().map(|v| v["metadata"]["name"].as_str().unwrap().to_string()).collect()
    }

    #[test]
    fn follows_writes_deletes_and_resets_by_prefix() {
        let index = Configuration::default();
        assert!(index.under(VALIDATING_WEBHOOKS).is_empty());
        index.applied(&format!("{VALIDATING_WEBHOOKS}b"), Some(&stored("b")));
        index.applied(&format!("{VALIDATING_WEBHOOKS}a"), Some(&stored("a")));
        index.applied(&format!("{MUTATING_WEBHOOKS}m"), Some(&stored("m")));
        assert_eq!(names(&index, VALIDATING_WEBHOOKS), ["a", "b"]);
        assert_eq!(names(&index, MUTATING_WEBHOOKS), ["m"]);
        index.applied(&format!("{VALIDATING_WEBHOOKS}a"), None);
        assert_eq!(names(&index, VALIDATING_WEBHOOKS), ["b"]);
        let binding = stored("p");
        let key = format!("{VALIDATING_POLICY_BINDINGS}p");
        index.reset(&mut [(key.as_str(), &binding)].into_iter());
        assert!(index.under(VALIDATING_WEBHOOKS).is_empty());
        assert_eq!(names(&index, VALIDATING_POLICY_BINDINGS), ["p"]);
    }
}
