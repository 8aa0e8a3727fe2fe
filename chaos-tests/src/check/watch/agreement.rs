//! The watch checkers that compare streams with each other and with the acknowledged writes:
//! watch-atomic, watch-deleted-last-state and watch-acked-writes.

use std::collections::BTreeMap;

use crate::check::truth::{Seen, Truth};
use crate::check::{describe_op, Verdict};
use crate::history::{Call, EventType, Op, Ret};

/// "watch-atomic": every watcher that saw an event at a revision saw the same one (type, key and
/// value). `checked` counts revisions.
pub(super) fn atomic(truth: &Truth) -> Verdict {
    let mut by_rv: BTreeMap<u64, Vec<Seen>> = BTreeMap::new();
    for s in truth.seen() {
        by_rv.entry(s.item.rv).or_default().push(s);
    }
    let mut problems = Vec::new();
    for (rv, reports) in &by_rv {
        if reports.iter().any(|s| !s.agrees(&reports[0])) {
            let lines: Vec<String> = reports.iter().map(|s| format!("\n  {}", s.attributed())).collect();
            problems.push(format!("watchers disagree on rv {rv}:{}", lines.concat()));
        }
    }
    Verdict::from_problems("watch-atomic", by_rv.len(), problems)
}

/// "watch-deleted-last-state": a DELETED event carries the key's last state, the value of the
/// key's previous event, when the truth is known to be complete between them.
pub(super) fn deleted_last_state(truth: &Truth) -> Verdict {
    let (mut checked, mut problems) = (0, Vec::new());
    for (&rv, gone) in truth.events.iter().filter(|(_, s)| s.event == EventType::Deleted) {
        let previous = truth.events.range(..rv).rev().find(|(_, s)| s.item.key == gone.item.key);
        let Some((&before, last)) = previous.filter(|(&before, _)| truth.covered(before, rv - 1)) else { continue };
        checked += 1;
        if last.event == EventType::Deleted {
            problems.push(format!("{}, but the key was already gone: {}", gone.attributed(), last.attributed()));
        } else if last.item.value != gone.item.value {
            problems.push(format!("{}, but the last state before it was {} (rv {before})", gone.attributed(), last.attributed()));
        }
    }
    Verdict::from_problems("watch-deleted-last-state", checked, problems)
}

/// "watch-acked-writes": every acknowledged write with a revision inside the span the watchers
/// covered is the truth's event at that revision: same key, the matching type and, for creates
/// and CASes, the value written.
pub(super) fn acked_writes(truth: &Truth, ops: &[Op]) -> Verdict {
    let (mut checked, mut problems) = (0, Vec::new());
    let Some((first, last)) = truth.span() else { return Verdict::from_problems("watch-acked-writes", 0, problems) };
    for op in ops.iter().filter(|op| op.ret == Ret::Done) {
        let Some(rv) = op.rv.filter(|&rv| first <= rv && rv <= last && truth.covered(rv.saturating_sub(1), rv)) else { continue };
        let (event, value) = match &op.call {
            Call::Read { .. } => continue,
            Call::Create { value, .. } => (EventType::Added, Some(value)),
            Call::Cas { value, .. } => (EventType::Modified, Some(value)),
            Call::Delete { .. } => (EventType::Deleted, None),
        };
        checked += 1;
        match truth.events.get(&rv) {
            None => problems.push(format!("no watcher saw rv {rv} of the acknowledged write\n  {}", describe_op(op))),
            Some(s) if s.event != event || s.item.key != op.call.key() || value.is_some_and(|v| s.item.value.as_ref() != Some(v)) => {
                problems.push(format!("the acknowledged write\n  {}\nis not the event at its rv: {}", describe_op(op), s.attributed()));
            }
            Some(_) => {}
        }
    }
    Verdict::from_problems("watch-acked-writes", checked, problems)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::testutil::*;
    use crate::history::{WatchKind, WatchRecord};

    fn run(records: &[WatchRecord], ops: &[Op]) -> [Verdict; 3] {
        let truth = Truth::build(records);
        [atomic(&truth), deleted_last_state(&truth), acked_writes(&truth, ops)]
    }

    fn text(v: &Verdict) -> &str {
        assert!(!v.ok, "{v:?}");
        v.counterexample.as_deref().expect("a counter-example")
    }

    fn acked(id: u64, call: Call, rv: u64) -> Op {
        Op { rv: Some(rv), ..op(id, call, Ret::Done, 0, 1) }
    }

    fn history() -> (Vec<WatchRecord>, Vec<Op>) {
        let records = vec![
            started("a", 1),
            started("b", 1),
            added("a", "k", "x", 2),
            added("b", "k", "x", 2),
            modified("a", "k", "y", 3),
            deleted("a", "k", "y", 4),
            deleted("b", "k", "y", 4),
        ];
        let ops =
            vec![acked(1, create("k", "x"), 2), acked(2, cas("k", "x", "y"), 3), acked(3, delete("k"), 4), acked(4, create("k", "z"), 9)];
        (records, ops)
    }

    #[test]
    fn agreeing_streams_pass() {
        let (records, ops) = history();
        let [atomic, last_state, writes] = run(&records, &ops);
        assert!(atomic.ok && atomic.checked == 3, "{atomic:?}");
        assert!(last_state.ok && last_state.checked == 1, "{last_state:?}");
        // rv 9 is beyond what the watchers covered.
        assert!(writes.ok && writes.checked == 3, "{writes:?}");
    }

    #[test]
    fn disagreeing_watchers_fail_atomic() {
        let (mut records, ops) = history();
        records.push(modified("b", "k", "q", 3));
        let [atomic, ..] = run(&records, &ops);
        assert!(text(&atomic)
            .contains("watchers disagree on rv 3:\n  MODIFIED k = y at rv 3 (seen by a)\n  MODIFIED k = q at rv 3 (seen by b)"));
    }

    #[test]
    fn a_deleted_event_with_the_wrong_state_fails() {
        let (mut records, ops) = history();
        records.retain(|r| r.watcher != "b");
        records[3] = deleted("a", "k", "x", 4);
        let [_, last_state, _] = run(&records, &ops);
        assert!(text(&last_state).contains("DELETED k = x at rv 4 (seen by a), but the last state before it was MODIFIED k = y at rv 3"));
        records.push(deleted("a", "k", "x", 5));
        let [_, last_state, _] = run(&records, &ops);
        assert!(text(&last_state).contains("but the key was already gone"));
    }

    #[test]
    fn an_unknown_previous_state_is_not_checked() {
        // Nobody was watching between rv 2 and 4.
        let records = [started("a", 1), added("a", "k", "x", 2), error("a", Some(410)), relist("a", 3, &[]), deleted("a", "k", "q", 4)];
        let [_, last_state, _] = run(&records, &[]);
        assert!(last_state.ok && last_state.checked == 0, "{last_state:?}");
    }

    #[test]
    fn acknowledged_writes_must_be_the_events() {
        let (records, mut ops) = history();
        ops.push(acked(5, cas("k", "x", "w"), 3));
        let [.., writes] = run(&records, &ops);
        assert!(text(&writes).contains("the acknowledged write\n  #5 "), "{writes:?}");
        let (mut records, ops) = history();
        records.retain(|r| !matches!(&r.kind, WatchKind::Event { item, .. } if item.rv == 3));
        let [.., writes] = run(&records, &ops);
        assert!(text(&writes).contains("no watcher saw rv 3 of the acknowledged write\n  #2 "), "{writes:?}");
    }
}
