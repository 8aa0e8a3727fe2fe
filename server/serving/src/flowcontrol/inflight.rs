//! The max-in-flight limits kube-apiserver applies when API Priority and Fairness is off:
//! at most `--max-requests-inflight` read-only and `--max-mutating-requests-inflight` mutating
//! requests at once (0: no limit); one more is refused at once. Watches and `system:masters`
//! are not limited.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use access::Attributes;

/// A pool of slots; none when unlimited.
type Pool = Option<Arc<Semaphore>>;

pub struct MaxInFlight {
    read_only: Pool,
    mutating: Pool,
}

pub(super) const MUTATING: &[&str] = &["create", "update", "patch", "delete", "deletecollection"];

impl MaxInFlight {
    pub fn new(read_only: usize, mutating: usize) -> MaxInFlight {
        let limit = |n: usize| (n > 0).then(|| Arc::new(Semaphore::new(n)));
        MaxInFlight { read_only: limit(read_only), mutating: limit(mutating) }
    }

    /// A slot for the request (`Some(None)`: not limited), or `None` when all are taken.
    pub fn admit(&self, attrs: &Attributes) -> Option<Option<OwnedSemaphorePermit>> {
        if attrs.verb == "watch" || attrs.user.in_group("system:masters") {
            return Some(None);
        }
        let pool = if MUTATING.contains(&attrs.verb.as_str()) { &self.mutating } else { &self.read_only };
        match pool {
            Some(pool) => pool.clone().try_acquire_owned().ok().map(Some),
            None => Some(None),
        }
    }
}
