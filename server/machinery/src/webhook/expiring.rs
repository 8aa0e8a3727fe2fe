//! Answers kept for a while: a webhook client remembers a review's answer until its time to
//! live passes, the number kept bounded (when full, the expired go, and everything if that is
//! not enough), as Kubernetes' webhook clients cache theirs.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub struct Expiring<K, V> {
    entries: Mutex<HashMap<K, (Instant, V)>>,
    capacity: usize,
}

impl<K: Hash + Eq, V: Clone> Expiring<K, V> {
    pub fn new(capacity: usize) -> Self {
        Expiring { entries: Mutex::new(HashMap::new()), capacity }
    }

    /// The answer kept for `key`, unless it has expired.
    pub fn get(&self, key: &K) -> Option<V> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.get(key).filter(|(until, _)| *until > Instant::now()).map(|(_, v)| v.clone())
    }

    /// Keeps `value` for `ttl` (not at all when it is zero).
    pub fn insert(&self, key: K, value: V, ttl: Duration) {
        if ttl.is_zero() {
            return;
        }
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= self.capacity {
            let now = Instant::now();
            entries.retain(|_, (until, _)| *until > now);
            if entries.len() >= self.capacity {
                entries.clear();
            }
        }
        entries.insert(key, (Instant::now() + ttl, value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expires_and_stays_bounded() {
        let cache = Expiring::new(2);
        cache.insert("a", 1, Duration::from_secs(60));
        cache.insert("gone", 2, Duration::from_nanos(1));
        cache.insert("never", 3, Duration::ZERO);
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!((cache.get(&"a"), cache.get(&"gone"), cache.get(&"never")), (Some(1), None, None));
        // Full: the expired entry makes room.
        cache.insert("b", 4, Duration::from_secs(60));
        assert_eq!((cache.get(&"a"), cache.get(&"b")), (Some(1), Some(4)));
        // Full of live entries: all go.
        cache.insert("c", 5, Duration::from_secs(60));
        assert_eq!((cache.get(&"a"), cache.get(&"c")), (None, Some(5)));
    }
}
