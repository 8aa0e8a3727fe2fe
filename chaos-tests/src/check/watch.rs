//! The watch checkers: each watcher's stream on its own (ordered, unique, reliable, resumable,
//! bookmarkable), and the streams against each other and the acknowledged writes (see
//! `agreement`).

mod agreement;

use std::collections::{HashMap, HashSet};

use super::truth::{Seen, Truth};
use super::Verdict;
use crate::history::{Op, WatchKind, WatchRecord};

/// Missed events listed per watcher.
const MAX_MISSED: usize = 5;

/// Every watch checker's verdict: watch-ordered, watch-unique, watch-reliable, watch-resumable,
/// watch-bookmarkable, watch-atomic, watch-deleted-last-state and watch-acked-writes.
pub fn check(records: &[WatchRecord], ops: &[Op]) -> Vec<Verdict> {
    let truth = Truth::build(records);
    vec![
        ordered(&truth),
        unique(&truth),
        reliable(&truth),
        resumable(&truth),
        bookmarkable(&truth),
        agreement::atomic(&truth),
        agreement::deleted_last_state(&truth),
        agreement::acked_writes(&truth, ops),
    ]
}

/// "watch-ordered": each watcher's event revisions strictly increase over its whole life, and
/// after a relist at R they are above R.
fn ordered(truth: &Truth) -> Verdict {
    let (mut checked, mut problems) = (0, Vec::new());
    for (watcher, kinds) in &truth.watchers {
        let mut last: Option<(u64, String)> = None;
        for kind in kinds {
            let (rv, what) = match kind {
                WatchKind::Event { event, item } => {
                    checked += 1;
                    let what = Seen { watcher, event: *event, item }.describe();
                    if let Some((_, previous)) = last.as_ref().filter(|(before, _)| item.rv <= *before) {
                        problems.push(format!("{watcher}: {what} came after {previous}"));
                    }
                    (item.rv, what)
                }
                WatchKind::Relist { rv, .. } => (*rv, format!("a relist at rv {rv}")),
                _ => continue,
            };
            if last.as_ref().is_none_or(|(before, _)| rv > *before) {
                last = Some((rv, what));
            }
        }
    }
    Verdict::from_problems("watch-ordered", checked, problems)
}

/// "watch-unique": no watcher sees the same revision twice.
fn unique(truth: &Truth) -> Verdict {
    let (mut checked, mut problems) = (0, Vec::new());
    for (watcher, kinds) in &truth.watchers {
        let mut seen: HashMap<u64, Seen> = HashMap::new();
        for kind in kinds {
            if let WatchKind::Event { event, item } = kind {
                checked += 1;
                let now = Seen { watcher, event: *event, item };
                if let Some(before) = seen.insert(item.rv, now) {
                    problems.push(format!("{watcher} saw rv {} twice: {} and again {}", item.rv, before.describe(), now.describe()));
                }
            }
        }
    }
    Verdict::from_problems("watch-unique", checked, problems)
}

/// "watch-reliable": between its first and last event, each watcher saw every event of the
/// truth, except those a relist skipped (after its last event or bookmark before the relist,
/// up to the relist's revision).
fn reliable(truth: &Truth) -> Verdict {
    let (mut checked, mut problems) = (0, Vec::new());
    for (watcher, kinds) in &truth.watchers {
        let mut seen = HashSet::new();
        let mut skipped: Vec<(u64, u64)> = Vec::new();
        let mut progress = 0;
        for kind in kinds {
            match kind {
                WatchKind::Event { item, .. } => {
                    seen.insert(item.rv);
                    progress = item.rv;
                }
                WatchKind::Bookmark { rv } => progress = *rv,
                WatchKind::Relist { rv, .. } => {
                    skipped.push((progress, *rv));
                    progress = *rv;
                }
                WatchKind::Started { .. } | WatchKind::Error { .. } => {}
            }
        }
        let (Some(&first), Some(&last)) = (seen.iter().min(), seen.iter().max()) else { continue };
        let expected = truth.events.range(first..=last).filter(|(rv, _)| !skipped.iter().any(|&(a, b)| a < **rv && **rv <= b));
        let missed: Vec<&Seen> = expected.inspect(|_| checked += 1).filter(|(rv, _)| !seen.contains(rv)).map(|(_, s)| s).collect();
        if !missed.is_empty() {
            problems.push(missing(&format!("{watcher} saw rv {first} to {last} but missed {} events between:", missed.len()), &missed));
        }
    }
    Verdict::from_problems("watch-reliable", checked, problems)
}

/// "watch-resumable": after a resume from `from` (a start that is neither the first nor right
/// after a relist), the first event is above `from` and no event of the truth between is missing.
fn resumable(truth: &Truth) -> Verdict {
    let (mut checked, mut problems) = (0, Vec::new());
    for (watcher, kinds) in &truth.watchers {
        let (mut started, mut after_relist) = (false, false);
        let mut resumed: Option<u64> = None;
        for kind in kinds {
            match kind {
                WatchKind::Started { from } => {
                    resumed = (started && !after_relist).then_some(*from);
                    (started, after_relist) = (true, false);
                }
                WatchKind::Relist { .. } => (resumed, after_relist) = (None, true),
                WatchKind::Error { .. } => resumed = None,
                WatchKind::Bookmark { .. } => {}
                WatchKind::Event { event, item } => {
                    after_relist = false;
                    let Some(from) = resumed.take() else { continue };
                    checked += 1;
                    let first = Seen { watcher, event: *event, item }.describe();
                    if item.rv <= from {
                        problems.push(format!("{watcher} resumed from rv {from}, then its first event was {first}"));
                        continue;
                    }
                    let missed: Vec<&Seen> = truth.events.range(from + 1..item.rv).map(|(_, s)| s).collect();
                    if !missed.is_empty() {
                        problems.push(missing(&format!("{watcher} resumed from rv {from} and first saw {first}, missing:"), &missed));
                    }
                }
            }
        }
    }
    Verdict::from_problems("watch-resumable", checked, problems)
}

/// "watch-bookmarkable": each watcher's bookmark revisions never go back, and every event after
/// a bookmark is above it.
fn bookmarkable(truth: &Truth) -> Verdict {
    let (mut checked, mut problems) = (0, Vec::new());
    for (watcher, kinds) in &truth.watchers {
        let mut mark: Option<u64> = None;
        for kind in kinds {
            match (kind, mark) {
                (WatchKind::Bookmark { rv }, _) => {
                    checked += 1;
                    if let Some(before) = mark.filter(|before| rv < before) {
                        problems.push(format!("{watcher}: a bookmark at rv {rv} came after one at rv {before}"));
                    }
                    mark = mark.max(Some(*rv));
                }
                (WatchKind::Event { event, item }, Some(before)) if item.rv <= before => {
                    let what = Seen { watcher, event: *event, item }.describe();
                    problems.push(format!("{watcher}: {what} came after a bookmark at rv {before}"));
                }
                _ => {}
            }
        }
    }
    Verdict::from_problems("watch-bookmarkable", checked, problems)
}

/// A problem with the events missed, the first few listed with who saw them.
fn missing(headline: &str, missed: &[&Seen]) -> String {
    let mut text = headline.to_string();
    for s in missed.iter().take(MAX_MISSED) {
        text.push_str(&format!("\n  {}", s.attributed()));
    }
    if missed.len() > MAX_MISSED {
        text.push_str(&format!("\n  ... and {} more", missed.len() - MAX_MISSED));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::testutil::*;

    fn verdict(records: &[WatchRecord], checker: &str) -> Verdict {
        check(records, &[]).into_iter().find(|v| v.checker == checker).expect("a verdict")
    }

    fn fails(records: &[WatchRecord], checker: &str, needle: &str) {
        let v = verdict(records, checker);
        assert!(!v.ok, "{checker} should fail: {v:?}");
        let text = v.counterexample.expect("a counter-example");
        assert!(text.contains(needle), "{checker}: {text:?} lacks {needle:?}");
    }

    /// Two watchers, one resuming after an error and one relisting after 410, with bookmarks.
    fn good() -> Vec<WatchRecord> {
        vec![
            started("a", 1),
            started("b", 1),
            added("a", "k", "x", 2),
            added("b", "k", "x", 2),
            modified("a", "k", "y", 3),
            error("a", None),
            started("a", 3),
            bookmark("a", 3),
            modified("b", "k", "y", 3),
            error("b", Some(410)),
            relist("b", 5, &[("k", "z")]),
            started("b", 5),
            modified("a", "k", "z", 4),
            bookmark("a", 4),
            deleted("a", "k", "z", 6),
            deleted("b", "k", "z", 6),
            added("a", "j", "w", 7),
        ]
    }

    #[test]
    fn a_good_history_passes_every_checker() {
        let verdicts = check(&good(), &[]);
        assert_eq!(verdicts.len(), 8);
        for v in verdicts {
            assert!(v.ok, "{v:?}");
        }
        assert_eq!(verdict(&good(), "watch-ordered").checked, 8);
        assert_eq!(verdict(&good(), "watch-resumable").checked, 1);
    }

    #[test]
    fn a_reordered_event_fails_ordered() {
        let records = [started("a", 1), added("a", "k", "x", 2), modified("a", "k", "z", 4), modified("a", "k", "y", 3)];
        fails(&records, "watch-ordered", "a: MODIFIED k = y at rv 3 came after MODIFIED k = z at rv 4");
        let records = [started("a", 1), added("a", "k", "x", 2), relist("a", 9, &[]), started("a", 9), modified("a", "k", "y", 8)];
        fails(&records, "watch-ordered", "came after a relist at rv 9");
    }

    #[test]
    fn a_duplicate_event_fails_unique() {
        let records = [started("a", 1), added("a", "k", "x", 2), error("a", None), started("a", 1), added("a", "k", "x", 2)];
        fails(&records, "watch-unique", "a saw rv 2 twice");
        assert!(verdict(&good(), "watch-unique").ok);
    }

    #[test]
    fn a_missing_event_fails_reliable_but_a_relist_gap_does_not() {
        let mut records = good();
        records.retain(|r| r != &modified("a", "k", "z", 4));
        records.push(modified("b", "k", "z", 4));
        fails(&records, "watch-reliable", "a saw rv 2 to 7 but missed 1 events between:\n  MODIFIED k = z at rv 4 (seen by b)");
        // b never saw rv 4: its relist at 5 covers it.
        let v = verdict(&good(), "watch-reliable");
        assert!(v.ok && v.checked == 5 + 3, "{v:?}");
    }

    #[test]
    fn a_resume_that_skips_or_repeats_fails_resumable() {
        let mut records = vec![started("a", 1), added("a", "k", "x", 2), error("a", None), started("a", 2), modified("a", "k", "z", 4)];
        records.push(modified("b", "k", "y", 3));
        fails(
            &records,
            "watch-resumable",
            "a resumed from rv 2 and first saw MODIFIED k = z at rv 4, missing:\n  MODIFIED k = y at rv 3 (seen by b)",
        );
        let records = [started("a", 1), added("a", "k", "x", 2), error("a", None), started("a", 2), added("a", "k", "x", 2)];
        fails(&records, "watch-resumable", "a resumed from rv 2, then its first event was ADDED k = x at rv 2");
        // Right after a relist is not a resume.
        let records = [
            started("a", 1),
            error("a", Some(410)),
            relist("a", 5, &[]),
            started("a", 5),
            added("b", "k", "x", 6),
            added("a", "j", "y", 7),
        ];
        assert_eq!(verdict(&records, "watch-resumable").checked, 0);
    }

    #[test]
    fn a_bookmark_going_back_fails_bookmarkable() {
        let records = [started("a", 1), bookmark("a", 5), bookmark("a", 4)];
        fails(&records, "watch-bookmarkable", "a: a bookmark at rv 4 came after one at rv 5");
        let records = [started("a", 1), bookmark("a", 5), added("a", "k", "x", 5)];
        fails(&records, "watch-bookmarkable", "a: ADDED k = x at rv 5 came after a bookmark at rv 5");
        assert_eq!(verdict(&good(), "watch-bookmarkable").checked, 2);
    }
}
