//! The admission configuration this replica has applied (webhook configurations and admission
//! policy bindings), kept by the apply path: each object decoded once when it is written, so that
//! a write finds the configurations that may concern it without listing and decoding them from
//! the store, and one look-up that finds none tells it that there is nothing to do. An object
//! that cannot be decoded is kept as such: a write it may concern fails (500) rather than skip
//! the webhook or policy it stands for.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use machinery::error::{ApiError, ApiResult};
use raft_store::{ApplyObserver, Object};
use serde_json::Value;

pub const MUTATING_WEBHOOKS: &str = "/registry/admissionregistration.k8s.io/mutatingwebhookconfigurations/";
pub const VALIDATING_WEBHOOKS: &str = "/registry/admissionregistration.k8s.io/validatingwebhookconfigurations/";
pub const VALIDATING_POLICY_BINDINGS: &str = "/registry/admissionregistration.k8s.io/validatingadmissionpolicybindings/";
pub const MUTATING_POLICY_BINDINGS: &str = "/registry/admissionregistration.k8s.io/mutatingadmissionpolicybindings/";

const PREFIXES: &[&str] = &[MUTATING_WEBHOOKS, VALIDATING_WEBHOOKS, VALIDATING_POLICY_BINDINGS, MUTATING_POLICY_BINDINGS];

/// The objects under [`PREFIXES`], by storage key: decoded, or `None` for one that cannot be.
#[derive(Default)]
pub struct Configuration {
    by_key: RwLock<BTreeMap<String, Option<Arc<Value>>>>,
}

impl Configuration {
    /// The objects under `prefix` (one of the constants above), in key order, that is in name
    /// order; an error naming the first that cannot be decoded.
    pub fn under(&self, prefix: &str) -> ApiResult<Vec<Arc<Value>>> {
        let by_key = self.by_key.read().unwrap_or_else(|e| e.into_inner());
        by_key
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, v)| v.clone().ok_or_else(|| ApiError::internal(format!("the stored object {k} cannot be decoded"))))
            .collect()
    }
}

fn decode(object: &Object) -> Option<Arc<Value>> {
    serde_json::from_slice(&object.data).ok().map(Arc::new)
}

impl ApplyObserver for Configuration {
    fn prefixes(&self) -> &[&'static str] {
        PREFIXES
    }

    fn applied(&self, key: &str, object: Option<&Object>) {
        let mut by_key = self.by_key.write().unwrap_or_else(|e| e.into_inner());
        match object {
            Some(o) => by_key.insert(key.to_string(), decode(o)),
            None => by_key.remove(key),
        };
    }

    fn reset(&self, objects: &mut dyn Iterator<Item = (&str, &Object)>) {
        let fresh = objects.filter(|(key, _)| PREFIXES.iter().any(|p| key.starts_with(p))).map(|(key, o)| (key.to_string(), decode(o))).collect();
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
        index.under(prefix).unwrap().iter().map(|v| v["metadata"]["name"].as_str().unwrap().to_string()).collect()
    }

    #[test]
    fn follows_writes_deletes_and_resets_by_prefix() {
        let index = Configuration::default();
        assert!(index.under(VALIDATING_WEBHOOKS).unwrap().is_empty());
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
        assert!(index.under(VALIDATING_WEBHOOKS).unwrap().is_empty());
        assert_eq!(names(&index, VALIDATING_POLICY_BINDINGS), ["p"]);
        // One that cannot be decoded fails the look-up instead of vanishing from it.
        let damaged = Object { rev: 2, data: bytes::Bytes::from_static(b"{not json") };
        index.applied(&format!("{VALIDATING_POLICY_BINDINGS}q"), Some(&damaged));
        assert!(index.under(VALIDATING_POLICY_BINDINGS).is_err());
        assert!(index.under(VALIDATING_WEBHOOKS).unwrap().is_empty());
    }
}
