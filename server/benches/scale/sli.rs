//! The service level indicators of a run, as SIG Scalability defines them: the latency of each
//! API call by verb, resource and scope (an object, a namespace, the cluster), and the delay from
//! a write's response to its event at each watcher that waits for it; with errors and 429s.
//! Every simulated node and control-plane client records here; each phase prints its own.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Where a call reaches: one object, a namespace, or the whole cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    Object,
    Namespace,
    Cluster,
}

/// A call's kind: what SIG Scalability's SLOs tell apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Call {
    pub verb: &'static str,
    pub resource: &'static str,
    pub scope: Scope,
}

impl Call {
    pub fn mutating(&self) -> bool {
        !matches!(self.verb, "GET" | "LIST")
    }
}

#[derive(Default)]
struct Samples {
    calls: HashMap<Call, Vec<Duration>>,
    errors: BTreeMap<String, u64>,
    watch: Vec<Duration>,
}

/// What one phase recorded.
#[derive(Default)]
pub struct Sli {
    samples: Mutex<Samples>,
    /// When each write a watcher waits for was answered (none while it is on its way), by the
    /// name of its object.
    written: Mutex<HashMap<String, Option<Instant>>>,
}

impl Sli {
    /// Runs `call` and records its latency, or its error by status code.
    pub async fn time<T>(&self, what: Call, call: impl Future<Output = Result<T, kube::Error>>) -> Result<T, kube::Error> {
        let started = Instant::now();
        let result = call.await;
        let took = started.elapsed();
        let mut s = self.samples.lock().unwrap();
        match &result {
            Ok(_) => s.calls.entry(what).or_default().push(took),
            Err(kube::Error::Api(status)) => *s.errors.entry(format!("{} {} {}", what.verb, what.resource, status.code)).or_default() += 1,
            Err(e) => *s.errors.entry(format!("{} {} {}", what.verb, what.resource, e.to_string().chars().take(60).collect::<String>())).or_default() += 1,
        }
        result
    }

    /// Notes that the write of `name` a watcher waits for is on its way.
    pub fn expect(&self, name: &str) {
        self.written.lock().unwrap().insert(name.to_string(), None);
    }

    /// The write of `name` was answered now (unless its event came first).
    pub fn written(&self, name: &str) {
        if let Some(at) = self.written.lock().unwrap().get_mut(name) {
            *at = Some(Instant::now());
        }
    }

    /// A watcher received the event of `name`'s write: the delay since its answer, or none when
    /// the event came before the answer.
    pub fn delivered(&self, name: &str) {
        if let Some(at) = self.written.lock().unwrap().remove(name) {
            self.samples.lock().unwrap().watch.push(at.map_or(Duration::ZERO, |at| at.elapsed()));
        }
    }

    /// Everything recorded so far, and a fresh start for the next phase.
    pub fn take(&self) -> Phase {
        let s = std::mem::take(&mut *self.samples.lock().unwrap());
        let mut calls: Vec<(Call, Vec<Duration>)> = s.calls.into_iter().collect();
        calls.sort_by_key(|(c, _)| *c);
        for (_, lat) in &mut calls {
            lat.sort();
        }
        let mut watch = s.watch;
        watch.sort();
        Phase { calls, errors: s.errors, watch }
    }
}

/// One phase's figures.
pub struct Phase {
    pub calls: Vec<(Call, Vec<Duration>)>,
    pub errors: BTreeMap<String, u64>,
    pub watch: Vec<Duration>,
}

pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

impl Phase {
    /// The latencies of the calls `which` selects, merged and sorted.
    pub fn merged(&self, which: impl Fn(&Call) -> bool) -> Vec<Duration> {
        let mut all: Vec<Duration> = self.calls.iter().filter(|(c, _)| which(c)).flat_map(|(_, l)| l.iter().copied()).collect();
        all.sort();
        all
    }

    pub fn print(&self, name: &str, took: Duration) {
        println!("== {name} ({:.1} s)", took.as_secs_f64());
        for (c, lat) in &self.calls {
            println!(
                "  {:<7} {:<14} {:<9} n={:<7} p50 {:>8.2} ms  p90 {:>8.2} ms  p99 {:>8.2} ms",
                c.verb,
                c.resource,
                format!("{:?}", c.scope).to_lowercase(),
                lat.len(),
                ms(percentile(lat, 0.5)),
                ms(percentile(lat, 0.9)),
                ms(percentile(lat, 0.99))
            );
        }
        if !self.watch.is_empty() {
            println!(
                "  watch delivery            n={:<7} p50 {:>8.2} ms  p90 {:>8.2} ms  p99 {:>8.2} ms",
                self.watch.len(),
                ms(percentile(&self.watch, 0.5)),
                ms(percentile(&self.watch, 0.9)),
                ms(percentile(&self.watch, 0.99))
            );
        }
        for (what, n) in &self.errors {
            println!("  error   {what}: {n}");
        }
    }
}
