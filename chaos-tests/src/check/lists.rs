//! The list checker: every list shows exactly the state that the watch events give at its
//! revision.

use std::collections::{BTreeMap, BTreeSet};

use super::truth::Truth;
use super::Verdict;
use crate::history::{EventType, ListRecord, WatchKind, WatchRecord};

/// One state: key to value (`None`: an object without a value).
type State<'a> = BTreeMap<&'a str, Option<&'a str>>;

/// "list-consistent": each list whose revision the watchers covered (from the earliest first
/// start, when the keys did not exist yet, up to the last event, without gaps) has exactly the
/// items that replaying the watch events up to its revision gives, apart from objects untouched
/// since before that start. `checked` counts those lists.
pub fn check(lists: &[ListRecord], records: &[WatchRecord]) -> Verdict {
    let truth = Truth::build(records);
    let first_starts = truth.watchers.iter().filter_map(|(_, kinds)| {
        kinds.iter().take_while(|kind| !matches!(kind, WatchKind::Relist { .. })).find_map(|kind| match kind {
            WatchKind::Started { from } => Some(*from),
            _ => None,
        })
    });
    let (Some(start), Some((_, last))) = (first_starts.min(), truth.span()) else {
        return Verdict::from_problems("list-consistent", 0, Vec::new());
    };
    let (mut checked, mut problems) = (0, Vec::new());
    for list in lists.iter().filter(|l| start <= l.rv && l.rv <= last && truth.covered(start, l.rv)) {
        checked += 1;
        let replayed = replay(&truth, list.rv);
        let mut listed = State::new();
        let mut twice = BTreeSet::new();
        // Objects last written before the watchers started, and untouched since, are not ours.
        for item in list.items.iter().filter(|item| item.rv > start || replayed.contains_key(item.key.as_str())) {
            if listed.insert(&item.key, item.value.as_deref()).is_some() {
                twice.insert(item.key.as_str());
            }
        }
        if listed != replayed || !twice.is_empty() {
            problems.push(differences(list, &listed, &replayed, &twice));
        }
    }
    Verdict::from_problems("list-consistent", checked, problems)
}

/// The state after every event of the truth up to `rv`, from nothing.
fn replay<'a>(truth: &Truth<'a>, rv: u64) -> State<'a> {
    let mut state = State::new();
    for s in truth.events.range(..=rv).map(|(_, s)| s) {
        match s.event {
            EventType::Deleted => state.remove(s.item.key.as_str()),
            EventType::Added | EventType::Modified => state.insert(&s.item.key, s.item.value.as_deref()),
        };
    }
    state
}

fn differences(list: &ListRecord, listed: &State, replayed: &State, twice: &BTreeSet<&str>) -> String {
    let exact = if list.exact { " (exact)" } else { "" };
    let mut text = format!(
        "the list via {} at rv {}{exact} ({} items) differs from the watch events up to rv {}:",
        list.target,
        list.rv,
        list.items.len(),
        list.rv
    );
    let show = |v: Option<&Option<&str>>| match v {
        None => "nothing".to_string(),
        Some(None) => "no value".to_string(),
        Some(Some(v)) => v.to_string(),
    };
    for key in listed.keys().chain(replayed.keys()).collect::<BTreeSet<_>>() {
        let (l, r) = (listed.get(key), replayed.get(key));
        if l != r {
            text.push_str(&format!("\n  {key}: the list has {}, the events give {}", show(l), show(r)));
        }
    }
    for key in twice {
        text.push_str(&format!("\n  {key}: listed more than once"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::testutil::*;

    fn records() -> Vec<WatchRecord> {
        vec![
            started("a", 10),
            added("a", "k", "x", 11),
            added("a", "j", "y", 12),
            modified("a", "k", "z", 14),
            deleted("a", "j", "y", 15),
            error("a", Some(410)),
            relist("a", 20, &[("k", "z")]),
            started("a", 20),
            modified("a", "k", "w", 22),
        ]
    }

    #[test]
    fn lists_that_match_the_events_pass() {
        let lists = [list(10, &[]), list(11, &[("k", "x")]), list(13, &[("j", "y"), ("k", "x")]), list(15, &[("k", "z")])];
        let v = check(&lists, &records());
        assert!(v.ok && v.checked == 4, "{v:?}");
    }

    #[test]
    fn objects_from_before_the_watchers_started_are_not_compared() {
        let mut with_root_ca = list(13, &[("j", "y"), ("k", "x")]);
        with_root_ca.items.push(item("root-ca", Some("pem"), 3));
        assert!(check(&[with_root_ca], &records()).ok);
        // But a key the watchers saw is, however old its item.
        let mut stale = list(13, &[("j", "y")]);
        stale.items.push(item("k", Some("old"), 3));
        let v = check(&[stale], &records());
        assert!(v.counterexample.expect("a counter-example").contains("k: the list has old, the events give x"));
    }

    #[test]
    fn lists_outside_the_covered_revisions_are_skipped() {
        // Before the watchers started, in the relist's gap, and after the last event.
        let lists = [list(9, &[("q", "q")]), list(18, &[("q", "q")]), list(21, &[("q", "q")]), list(30, &[("q", "q")])];
        let v = check(&lists, &records());
        assert!(v.ok && v.checked == 0, "{v:?}");
        assert_eq!(check(&lists, &[]).checked, 0);
    }

    #[test]
    fn a_list_that_disagrees_fails() {
        let v = check(&[list(14, &[("k", "x"), ("q", "v")])], &records());
        assert!(!v.ok && v.checked == 1);
        let text = v.counterexample.expect("a counter-example");
        assert!(text.starts_with("the list via node-0 at rv 14 (exact) (2 items) differs from the watch events up to rv 14:"), "{text}");
        assert!(text.contains("\n  j: the list has nothing, the events give y"), "{text}");
        assert!(text.contains("\n  k: the list has x, the events give z"), "{text}");
        assert!(text.contains("\n  q: the list has v, the events give nothing"), "{text}");
        let v = check(&[list(15, &[("k", "z"), ("k", "z")])], &records());
        assert!(v.counterexample.expect("a counter-example").contains("k: listed more than once"));
    }
}
