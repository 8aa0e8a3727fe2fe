//! Durations counted into fixed buckets, for the histograms the metrics render from this
//! store: the log's flushes and the round trips to peers.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Buckets of every histogram kept here.
pub const BUCKETS: usize = 16;

/// Durations counted into the buckets whose upper bounds (in seconds) are `bounds`.
#[derive(Debug)]
pub struct Timings {
    bounds: [f64; BUCKETS],
    count: AtomicU64,
    micros: AtomicU64,
    /// Durations by the first bucket that holds them; longer ones in none.
    buckets: [AtomicU64; BUCKETS],
}

/// A reading of [`Timings`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TimingStats {
    pub count: u64,
    /// The durations added up.
    pub seconds: f64,
    /// Durations of at most each bound (cumulative, as Prometheus histograms count).
    pub at_most: [u64; BUCKETS],
}

impl Timings {
    pub fn new(bounds: [f64; BUCKETS]) -> Timings {
        Timings { bounds, count: AtomicU64::new(0), micros: AtomicU64::new(0), buckets: Default::default() }
    }

    pub fn record(&self, took: Duration) {
        self.count.fetch_add(1, Ordering::Release);
        self.micros.fetch_add(took.as_micros() as u64, Ordering::Relaxed);
        let secs = took.as_secs_f64();
        if let Some(i) = self.bounds.iter().position(|bound| secs <= *bound) {
            self.buckets[i].fetch_add(1, Ordering::Release);
        }
    }

    pub fn read(&self) -> TimingStats {
        // Buckets before the count, which `record` raises first: a duration recorded meanwhile
        // never leaves a bucket above the total.
        let mut at_most = [0; BUCKETS];
        let mut sum = 0;
        for (out, bucket) in at_most.iter_mut().zip(&self.buckets) {
            sum += bucket.load(Ordering::Acquire);
            *out = sum;
        }
        TimingStats { count: self.count.load(Ordering::Acquire), seconds: self.micros.load(Ordering::Relaxed) as f64 / 1e6, at_most }
    }
}
