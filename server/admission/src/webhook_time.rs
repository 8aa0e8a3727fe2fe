//! The time a request spends calling admission webhooks, which kube-apiserver leaves out of the
//! latency its SLOs are measured on (`apiserver_request_sli_duration_seconds`).

use std::cell::Cell;
use std::future::Future;
use std::time::{Duration, Instant};

tokio::task_local! {
    static SPENT: Cell<Duration>;
}

/// Runs `f`, and tells how long the webhook phases under it took.
pub async fn measure<F: Future>(f: F) -> (F::Output, Duration) {
    SPENT
        .scope(Cell::new(Duration::ZERO), async {
            let out = f.await;
            (out, SPENT.with(Cell::get))
        })
        .await
}

/// A webhook phase, counted from now until dropped (whichever way it ends).
pub struct Phase(Instant);

impl Phase {
    pub fn start() -> Phase {
        Phase(Instant::now())
    }
}

impl Drop for Phase {
    fn drop(&mut self) {
        let took = self.0.elapsed();
        let _ = SPENT.try_with(|s| s.set(s.get() + took));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn phases_add_up_inside_a_measure_and_count_nowhere_outside_one() {
        drop(Phase::start());
        let ((), spent) = measure(async {
            for _ in 0..2 {
                let _phase = Phase::start();
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        assert!(spent >= Duration::from_millis(40), "{spent:?}");
    }
}
