//! A short-lived cache of successful token authentications, so that a token is not verified
//! again on every request: keyed by the token's SHA-256 (the token itself is never kept),
//! entries live [`TTL`], and at most [`CAPACITY`] are kept (the oldest go first). A revoked token
//! therefore stops working within [`TTL`].

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use crate::auth::UserInfo;

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
    entries: HashMap<Key, (UserInfo, Instant)>,
    /// Keys in insertion order, for eviction.
    order: VecDeque<Key>,
}

fn key(token: &str) -> Key {
    Sha256::digest(token.as_bytes()).into()
}

impl TokenCache {
    pub fn get(&self, token: &str) -> Option<UserInfo> {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let (user, expires) = inner.entries.get(&key(token))?;
        (Instant::now() < *expires).then(|| user.clone())
    }

    pub fn put(&self, token: &str, user: &UserInfo) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let k = key(token);
        if inner.entries.insert(k, (user.clone(), Instant::now() + TTL)).is_none() {
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
        let user = UserInfo::authenticated("alice", vec![]);
        cache.put("t-0", &user);
        assert_eq!(cache.get("t-0"), Some(user.clone()));
        assert_eq!(cache.get("t-1"), None);
        for i in 0..CAPACITY + 10 {
            cache.put(&format!("t-{i}"), &user);
        }
        let inner = cache.inner.lock().unwrap();
        assert_eq!(inner.entries.len(), CAPACITY);
        drop(inner);
        assert_eq!(cache.get("t-0"), None, "the oldest went first");
        assert!(cache.get(&format!("t-{}", CAPACITY + 9)).is_some());
    }
}
