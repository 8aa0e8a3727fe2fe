//! The truth the watch and list checkers compare against: the union of every watcher's events
//! keyed by revision, each watcher's records in order, and the revisions some watcher was caught
//! up on (so that the truth is known to be complete there).

use std::collections::BTreeMap;

use crate::history::{EventType, Item, WatchKind, WatchRecord};

/// One event as a watcher reported it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Seen<'a> {
    pub watcher: &'a str,
    pub event: EventType,
    pub item: &'a Item,
}

impl Seen<'_> {
    /// Whether two reports say the same thing.
    pub fn agrees(&self, other: &Seen) -> bool {
        self.event == other.event && self.item.key == other.item.key && self.item.value == other.item.value
    }

    /// The event without its watcher, e.g. "MODIFIED k1 = v3 at rv 12".
    pub fn describe(&self) -> String {
        let event = match self.event {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        };
        let value = self.item.value.as_deref().unwrap_or("(no value)");
        format!("{event} {} = {value} at rv {}", self.item.key, self.item.rv)
    }

    /// The event and the watcher that saw it.
    pub fn attributed(&self) -> String {
        format!("{} (seen by {})", self.describe(), self.watcher)
    }
}

/// What the watchers saw, together.
pub(super) struct Truth<'a> {
    /// Each revision's event, as the first watcher to report it saw it.
    pub events: BTreeMap<u64, Seen<'a>>,
    /// Each watcher's records in order, watchers by first appearance.
    pub watchers: Vec<(&'a str, Vec<&'a WatchKind>)>,
    /// Disjoint revision ranges `(lo, hi]` in which some watcher was sent every event.
    covered: Vec<(u64, u64)>,
}

impl<'a> Truth<'a> {
    pub fn build(records: &'a [WatchRecord]) -> Truth<'a> {
        let mut watchers: Vec<(&str, Vec<&WatchKind>)> = Vec::new();
        let mut events = BTreeMap::new();
        for r in records {
            match watchers.iter_mut().find(|(w, _)| *w == r.watcher) {
                Some((_, kinds)) => kinds.push(&r.kind),
                None => watchers.push((&r.watcher, vec![&r.kind])),
            }
            if let WatchKind::Event { event, item } = &r.kind {
                events.entry(item.rv).or_insert(Seen { watcher: &r.watcher, event: *event, item });
            }
        }
        let mut ranges: Vec<(u64, u64)> = watchers.iter().flat_map(|(_, kinds)| coverage(kinds)).filter(|(lo, hi)| lo < hi).collect();
        ranges.sort_unstable();
        let mut covered: Vec<(u64, u64)> = Vec::new();
        for (lo, hi) in ranges {
            match covered.last_mut() {
                Some(last) if lo <= last.1 => last.1 = last.1.max(hi),
                _ => covered.push((lo, hi)),
            }
        }
        Truth { events, watchers, covered }
    }

    /// Whether every event with a revision in `(lo, hi]` is in the truth: some watcher was
    /// sent them all.
    pub fn covered(&self, lo: u64, hi: u64) -> bool {
        hi <= lo || self.covered.iter().any(|&(a, b)| a <= lo && hi <= b)
    }

    /// The first and last revisions of the truth.
    pub fn span(&self) -> Option<(u64, u64)> {
        Some((*self.events.keys().next()?, *self.events.keys().next_back()?))
    }

    /// The watchers' records as events, in each watcher's order.
    pub fn seen(&self) -> impl Iterator<Item = Seen<'a>> + '_ {
        self.watchers.iter().flat_map(|(watcher, kinds)| {
            kinds.iter().filter_map(move |kind| match kind {
                WatchKind::Event { event, item } => Some(Seen { watcher, event: *event, item }),
                _ => None,
            })
        })
    }
}

/// The ranges `(lo, hi]` of revisions whose every event one watcher was sent: from where a
/// session starts (its `from`, or a relist) up to its last event or bookmark, across resumes
/// that pick up where it was.
fn coverage(kinds: &[&WatchKind]) -> Vec<(u64, u64)> {
    let mut ranges = Vec::new();
    let mut current: Option<(u64, u64)> = None;
    for kind in kinds {
        let progress = match kind {
            WatchKind::Started { from } => {
                if current.is_none_or(|(_, hi)| *from > hi) {
                    ranges.extend(current.replace((*from, *from)));
                }
                continue;
            }
            WatchKind::Relist { rv, .. } => {
                ranges.extend(current.replace((*rv, *rv)));
                continue;
            }
            WatchKind::Error { .. } => continue,
            WatchKind::Event { item, .. } => item.rv,
            WatchKind::Bookmark { rv } => *rv,
        };
        current = Some(match current {
            Some((lo, hi)) => (lo, hi.max(progress)),
            None => (progress.saturating_sub(1), progress),
        });
    }
    ranges.extend(current);
    ranges
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::testutil::*;

    #[test]
    fn the_first_report_of_a_revision_is_the_truth() {
        let records = [started("a", 1), added("a", "k", "x", 2), added("b", "k", "y", 2), modified("b", "k", "z", 3)];
        let truth = Truth::build(&records);
        assert_eq!(truth.events[&2].item.value.as_deref(), Some("x"));
        assert_eq!(truth.events[&3].watcher, "b");
        assert_eq!(truth.span(), Some((2, 3)));
        assert_eq!(truth.watchers.iter().map(|(w, k)| (*w, k.len())).collect::<Vec<_>>(), [("a", 2), ("b", 2)]);
        assert_eq!(truth.seen().count(), 3);
    }

    #[test]
    fn coverage_follows_resumes_and_skips_relist_gaps() {
        let records = [
            started("a", 1),
            added("a", "k", "x", 3),
            error("a", Some(500)),
            started("a", 3),
            bookmark("a", 5),
            error("a", Some(410)),
            relist("a", 9, &[]),
            started("a", 9),
            modified("a", "k", "y", 12),
        ];
        let truth = Truth::build(&records);
        assert!(truth.covered(1, 5));
        assert!(!truth.covered(4, 6));
        assert!(!truth.covered(5, 9));
        assert!(truth.covered(9, 12));
        assert!(!truth.covered(11, 13));
        assert!(truth.covered(7, 7));
    }

    #[test]
    fn coverage_joins_watchers() {
        let records = [started("a", 0), added("a", "k", "x", 4), started("b", 3), modified("b", "k", "y", 8)];
        let truth = Truth::build(&records);
        assert!(truth.covered(0, 8));
        assert!(!truth.covered(0, 9));
    }
}
