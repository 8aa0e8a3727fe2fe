//! A short-lived cache of successful token authentications, so that a token is not verified
//! again on every request: keyed by the token's SHA-256 (the token itself is never kept),
//! entries live [`TTL`], and at most [`CAPACITY`] are kept (the oldest go first). A revoked token
//! therefore stops working within [`TTL`].

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::Authenticated;

/// How long a successful authentication is remembered (kube-apiserver's token cache: 10 s).
pub const TTL: Duration = Duration::from_secs(10);
/// Most tokens remembered at once.
pub const CAPACITY: usize = 4096;

type Key = [u8; 32];

#[derive(Default)]
pub struct TokenCache {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    entries: HashMap<Key, (Authenticated, Instant)>,
    /// Keys in insertion order, for eviction.
    order: VecDeque<Key>,
}

/// The hash of a token and the audiences it was checked for.
fn key(token: &str, audiences: &[String]) -> Key {
    let mut hash = Sha256::new();
    hash.update(token.as_bytes());
    for a in audiences {
        hash.update([0]);
        hash.update(a.as_bytes());
    }
    hash.finalize().into()
}

impl TokenCache {
    pub fn get(&self, token: &str, audiences: &[String]) -> Option<Authenticated> {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let (found, expires) = inner.entries.get(&key(token, audiences))?;
        (Instant::now() < *expires).then(|| found.clone())
    }

    pub fn put(&self, token: &str, audiences: &[String], found: &Authenticated) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let k = key(token, audiences);
        if inner.entries.insert(k, (found.clone(), Instant::now() + TTL)).is_none() {
            inner.order.push_back(k);
        }
        while inner.order.len() > CAPACITY {
            if let Some(old) = inner.order.pop_front() {
                inner.entries.remove(&old);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_and_keyed_by_hash() {
        let cache = TokenCache::default();
        let user = Authenticated { user: crate::UserInfo::authenticated("alice", vec![]), audiences: vec!["api".into()] };
        let api = ["api".to_string()];
        cache.put("t-0", &api, &user);
        assert_eq!(cache.get("t-0", &api), Some(user.clone()));
        assert_eq!(cache.get("t-0", &["other".to_string()]), None, "audiences are part of the key");
        assert_eq!(cache.get("t-1", &api), None);
        for i in 0..CAPACITY + 10 {
            cache.put(&format!("t-{i}"), &api, &user);
        }
        let inner = cache.inner.lock().unwrap();
        assert_eq!(inner.entries.len(), CAPACITY);
        drop(inner);
        assert_eq!(cache.get("t-0", &api), None, "the oldest went first");
        assert!(cache.get(&format!("t-{}", CAPACITY + 9), &api).is_some());
    }
}
