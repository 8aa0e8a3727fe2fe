//! Exactly-once application of proposals that are retried. A follower that forwarded a write
//! and lost the answer (the leader crashed, the connection dropped) proposes it again with the
//! same id; the state machine remembers the outcome of every id applied within the last
//! `WINDOW` log entries and answers a repeat with that outcome instead of applying it twice (a
//! compare-and-set applied twice would report its own first application as a conflict). The
//! memory of outcomes is part of the replicated state: it travels in snapshots, and entries
//! leave it by log index, so every replica decides alike.

use std::collections::{HashMap, VecDeque};

use serde::{Deserialize, Serialize};

/// Log entries during which a proposal's outcome is remembered.
const WINDOW: u64 = 200_000;

/// What a proposal did when it was first applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    /// Applied at this revision.
    Applied(u64),
    /// The condition of this op failed.
    Failed(usize),
}

#[derive(Debug, Default, Clone)]
pub(crate) struct Outcomes {
    order: VecDeque<(u64, u64)>,
    by_id: HashMap<u64, Outcome>,
}

impl Outcomes {
    pub(crate) fn get(&self, id: u64) -> Option<Outcome> {
        self.by_id.get(&id).copied()
    }

    /// Remembers `id`'s outcome, applied at `rev`, and forgets what fell out of the window.
    /// Id 0 (entries written before proposals carried ids) is never remembered.
    pub(crate) fn record(&mut self, rev: u64, id: u64, outcome: Outcome) {
        if id == 0 {
            return;
        }
        while let Some(&(old_rev, old_id)) = self.order.front() {
            if old_rev + WINDOW > rev {
                break;
            }
            self.order.pop_front();
            self.by_id.remove(&old_id);
        }
        self.order.push_back((rev, id));
        self.by_id.insert(id, outcome);
    }

    /// The remembered outcomes, oldest first, for a snapshot.
    pub(crate) fn entries(&self) -> Vec<(u64, u64, Outcome)> {
        self.order.iter().filter_map(|&(rev, id)| self.by_id.get(&id).map(|o| (rev, id, *o))).collect()
    }

    pub(crate) fn from_entries(entries: Vec<(u64, u64, Outcome)>) -> Self {
        let mut out = Outcomes::default();
        for (rev, id, outcome) in entries {
            out.order.push_back((rev, id));
            out.by_id.insert(id, outcome);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_within_the_window_and_forgets_after() {
        let mut o = Outcomes::default();
        o.record(10, 7, Outcome::Applied(10));
        o.record(11, 8, Outcome::Failed(0));
        assert_eq!(o.get(7), Some(Outcome::Applied(10)));
        assert_eq!(o.get(8), Some(Outcome::Failed(0)));
        o.record(10 + WINDOW, 9, Outcome::Applied(10 + WINDOW));
        assert_eq!(o.get(7), None, "outside the window");
        assert_eq!(o.get(8), Some(Outcome::Failed(0)));
        o.record(10 + WINDOW, 0, Outcome::Applied(10 + WINDOW));
        assert_eq!(o.get(0), None, "id 0 is never remembered");
        let copy = Outcomes::from_entries(o.entries());
        assert_eq!(copy.entries(), o.entries());
    }
}
