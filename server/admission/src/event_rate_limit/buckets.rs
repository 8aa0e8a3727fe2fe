//! EventRateLimit's token buckets, as client-go's token bucket rate limiter keeps them (full at
//! first, refilled continuously at `qps` up to `burst`, a request taking one token or being
//! refused), and the least-recently-used cache of a keyed limit's buckets (an evicted key starts
//! again with a full bucket).

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

/// One token bucket.
#[derive(Debug, Clone)]
pub struct Bucket {
    tokens: f64,
    qps: f64,
    burst: f64,
    refilled: Instant,
}

impl Bucket {
    pub fn new(qps: f64, burst: f64, now: Instant) -> Bucket {
        Bucket { tokens: burst, qps, burst, refilled: now }
    }

    /// Takes a token if there is one at `now`.
    pub fn try_accept(&mut self, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.refilled).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.qps).min(self.burst);
        self.refilled = self.refilled.max(now);
        if self.tokens < 1.0 {
            return false;
        }
        self.tokens -= 1.0;
        true
    }
}

/// The buckets of the `capacity` most recently used keys.
#[derive(Debug)]
pub struct Lru {
    capacity: usize,
    /// Bumped on every use: the key's last use orders the eviction.
    clock: u64,
    buckets: HashMap<String, (u64, Bucket)>,
    by_use: BTreeMap<u64, String>,
}

impl Lru {
    pub fn new(capacity: usize) -> Lru {
        Lru { capacity, clock: 0, buckets: HashMap::new(), by_use: BTreeMap::new() }
    }

    /// The bucket of `key`, made by `fresh` when the key is not (or no longer) kept.
    pub fn get(&mut self, key: &str, fresh: impl FnOnce() -> Bucket) -> &mut Bucket {
        self.clock += 1;
        match self.buckets.get_mut(key) {
            Some((used, _)) => {
                self.by_use.remove(used);
                *used = self.clock;
            }
            None => {
                if self.buckets.len() >= self.capacity {
                    if let Some((_, oldest)) = self.by_use.pop_first() {
                        self.buckets.remove(&oldest);
                    }
                }
                self.buckets.insert(key.to_string(), (self.clock, fresh()));
            }
        }
        self.by_use.insert(self.clock, key.to_string());
        &mut self.buckets.get_mut(key).expect("kept just now").1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_bucket_allows_its_burst_then_its_rate() {
        let start = Instant::now();
        let mut bucket = Bucket::new(2.0, 3.0, start);
        assert_eq!((0..4).map(|_| bucket.try_accept(start)).collect::<Vec<_>>(), [true, true, true, false]);
        assert!(!bucket.try_accept(start + Duration::from_millis(400)));
        assert!(bucket.try_accept(start + Duration::from_millis(500)));
        assert!(!bucket.try_accept(start + Duration::from_millis(500)));
        // Never more than the burst, however long it rests.
        let later = start + Duration::from_secs(60);
        assert_eq!((0..4).filter(|_| bucket.try_accept(later)).count(), 3);
    }

    #[test]
    fn the_least_recently_used_key_is_forgotten() {
        let now = Instant::now();
        let mut lru = Lru::new(2);
        let fresh = || Bucket::new(1.0, 1.0, now);
        assert!(lru.get("a", fresh).try_accept(now));
        assert!(lru.get("b", fresh).try_accept(now));
        assert!(!lru.get("a", fresh).try_accept(now));
        // `c` evicts `b`, the least recently used; `a` keeps its empty bucket.
        assert!(lru.get("c", fresh).try_accept(now));
        assert!(!lru.get("a", fresh).try_accept(now));
        assert!(lru.get("b", fresh).try_accept(now));
    }
}
