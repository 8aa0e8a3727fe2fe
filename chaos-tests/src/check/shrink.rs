//! Shrinks a key's non-linearizable history to a small counter-example: the shortest prefix that
//! fails, then the latest start from which it still fails whatever the key held then, then
//! without the reads and failed writes that are not needed.

use std::collections::{BTreeSet, HashMap};

use super::describe_op;
use super::register::{self, Part, Start};
use crate::history::{Call, Op};

/// Trials spent at most on leaving reads and failed writes out.
const REDUCE_BUDGET: usize = 40;

/// Operations that cannot be linearized from any of the starts: proof that the history cannot.
struct Evidence<'a> {
    parts: Vec<Part<'a>>,
    /// Where the evidence begins, when not at the beginning of the history.
    since: Option<u64>,
    starts: Vec<Start<'a>>,
}

impl Evidence<'_> {
    fn holds(&self) -> bool {
        !register::linearizable(&self.parts, &self.starts)
    }
}

/// Why a key's history (by invoke time, every answer possible, not linearizable from any of
/// `starts`) is not, as a counter-example, with the number of operations it shows.
pub(super) fn explain<'a>(key: &str, history: &[&'a Op], starts: &[Start<'a>]) -> (usize, String) {
    // Longer prefixes than a failing one fail too.
    let (mut lo, mut hi) = (0, history.len());
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        match register::linearizable(&register::prefix(history, mid), starts) {
            true => lo = mid,
            false => hi = mid,
        }
    }
    let evidence = prune(reduce(latest_window(register::prefix(history, hi), starts)));
    (evidence.parts.len(), render(key, hi, &evidence))
}

/// The failing window of `parts` that starts last. A window that fails implies that every
/// earlier one fails, down to the whole of `parts` (from `starts`).
fn latest_window<'a>(parts: Vec<Part<'a>>, starts: &[Start<'a>]) -> Evidence<'a> {
    let times: BTreeSet<u64> = parts.iter().filter(|p| !p.optional).map(|p| p.op.invoke).collect();
    let times: Vec<u64> = times.into_iter().collect();
    let (mut lo, mut hi) = (0, times.len() + 1);
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        match window(&parts, times[mid - 1]).holds() {
            true => lo = mid,
            false => hi = mid,
        }
    }
    match lo {
        0 => Evidence { parts, since: None, starts: starts.to_vec() },
        _ => window(&parts, times[lo - 1]),
    }
}

/// The operations from invoke time `since` on. Of the earlier ones, acknowledged writes still
/// running then become optional (they may have taken effect before or after) and optional ones
/// stay; the others are left out, their effect being in the state at `since`: absent, or a value
/// an earlier write wrote.
fn window<'a>(parts: &[Part<'a>], since: u64) -> Evidence<'a> {
    let kept: Vec<Part> = parts
        .iter()
        .filter_map(|&p| match (p.op.invoke >= since, p.optional) {
            (true, _) | (false, true) => Some(p),
            (false, false) => (p.op.complete >= since && register::acknowledged(p.op)).then_some(Part { op: p.op, optional: true }),
        })
        .collect();
    let written_before: BTreeSet<&str> = parts.iter().filter(|p| p.op.invoke < since).filter_map(written).collect();
    let looked_for: BTreeSet<&str> = kept.iter().filter_map(|p| register::looked_for(p.op)).collect();
    let values = looked_for.intersection(&written_before).map(|v| Start::Value(v));
    prune(Evidence { parts: kept, since: Some(since), starts: [Start::Absent, Start::Other].into_iter().chain(values).collect() })
}

/// Leaves out the optional writes that cannot matter: CASes that never apply or change nothing
/// anyone looks at, and, of the earlier ones with the same effect (interchangeable, and none
/// needed more than once between two required operations), all but the latest few.
fn prune(mut evidence: Evidence) -> Evidence {
    // Leaving one out only makes others less useful, so each round leaves out all it finds.
    loop {
        let before = evidence.parts.len();
        let useless = useless_cases(&evidence);
        evidence.parts.retain(|p| !useless(p));
        if evidence.parts.len() == before {
            break;
        }
    }
    let since = evidence.since.unwrap_or(0);
    let needed = evidence.parts.iter().filter(|p| !p.optional).count();
    let looked_for: BTreeSet<&str> = evidence.parts.iter().filter_map(|p| register::looked_for(p.op)).collect();
    let mut kinds: HashMap<(Option<&str>, Option<&str>, bool), usize> = HashMap::new();
    let mut keep: Vec<bool> = evidence
        .parts
        .iter()
        .rev()
        .map(|p| {
            if !p.optional || p.op.invoke >= since {
                return true;
            }
            let (expect, value) = match &p.op.call {
                Call::Cas { expect, value, .. } => (Some(expect.as_str()), Some(value.as_str())),
                Call::Create { value, .. } => (None, Some(value.as_str())),
                _ => (None, None),
            };
            let kind = (expect, value.filter(|v| looked_for.contains(v)), matches!(p.op.call, Call::Delete { .. }));
            let seen = kinds.entry(kind).or_default();
            *seen += 1;
            *seen <= needed
        })
        .collect();
    keep.reverse();
    let mut keep = keep.into_iter();
    evidence.parts.retain(|_| keep.next().unwrap_or(true));
    evidence
}

/// Which optional CASes cannot matter: the key never holds their expected value, or nothing but
/// optional CASes from that value looks for it and nothing looks for the value they write (they
/// turn one value nobody tells apart from the rest into another).
fn useless_cases<'a>(evidence: &Evidence<'a>) -> impl Fn(&Part) -> bool + 'a {
    let mut looked_for: HashMap<&str, usize> = HashMap::new();
    let mut by_cases: HashMap<&str, usize> = HashMap::new();
    for p in &evidence.parts {
        if let Some(v) = register::looked_for(p.op) {
            *looked_for.entry(v).or_default() += 1;
        }
        if let (Call::Cas { expect, .. }, true) = (&p.op.call, p.optional) {
            *by_cases.entry(expect).or_default() += 1;
        }
    }
    let written: BTreeSet<&str> = evidence.parts.iter().filter_map(written).collect();
    let held: BTreeSet<&str> = evidence.starts.iter().filter_map(|s| if let Start::Value(v) = s { Some(*v) } else { None }).collect();
    move |p: &Part| {
        let Call::Cas { expect, value, .. } = &p.op.call else { return false };
        let count = |v: &str| looked_for.get(v).copied().unwrap_or(0);
        let expect_seen = count(expect) > by_cases.get(expect.as_str()).copied().unwrap_or(0);
        let value_seen = count(value) > usize::from(value == expect);
        p.optional && (!(held.contains(expect.as_str()) || written.contains(expect.as_str())) || !(expect_seen || value_seen))
    }
}

/// The value a write may have written.
fn written<'a>(p: &Part<'a>) -> Option<&'a str> {
    match &p.op.call {
        Call::Create { value, .. } | Call::Cas { value, .. } if p.optional || register::acknowledged(p.op) => Some(value),
        _ => None,
    }
}

/// Leaves out the reads and failed writes that the evidence does not need (without them a
/// linearizable history stays linearizable, so what is left still proves the violation), trying
/// large groups first.
fn reduce(mut evidence: Evidence) -> Evidence {
    let removable: Vec<usize> =
        (0..evidence.parts.len()).filter(|&i| !evidence.parts[i].optional && !register::acknowledged(evidence.parts[i].op)).collect();
    let mut keep = vec![true; evidence.parts.len()];
    let mut budget = REDUCE_BUDGET;
    let mut chunk = removable.len();
    let all = std::mem::take(&mut evidence.parts);
    let select = |keep: &[bool]| all.iter().zip(keep).filter(|(_, &k)| k).map(|(&p, _)| p).collect::<Vec<_>>();
    while chunk > 0 && budget > 0 {
        for group in removable.chunks(chunk) {
            if budget == 0 || group.iter().all(|&i| !keep[i]) {
                continue;
            }
            budget -= 1;
            let mut trial = keep.clone();
            group.iter().for_each(|&i| trial[i] = false);
            evidence.parts = select(&trial);
            if evidence.holds() {
                keep = trial;
            }
        }
        chunk /= 2;
    }
    evidence.parts = select(&keep);
    evidence
}

fn render(key: &str, len: usize, evidence: &Evidence) -> String {
    let n = evidence.parts.len();
    let mut text = format!("key {key}: the first {len} operations (by invoke time) cannot be linearized; ");
    match evidence.since {
        None => text.push_str(&format!("these {n} of them already cannot")),
        Some(since) => text.push_str(&format!("from invoke time {since} on, whatever the key held then, these {n} cannot")),
    }
    text.push_str(" (optional: unknown, or still running at the cut or the start; may take effect after its invoke, or never):");
    let since = evidence.since.unwrap_or(0);
    let (recent, earlier): (Vec<&Part>, Vec<&Part>) = evidence.parts.iter().partition(|p| p.op.invoke >= since || p.op.complete >= since);
    for p in recent {
        text.push_str(&format!("\n  {}{}", describe_op(p.op), if p.optional { " optional" } else { "" }));
    }
    if !earlier.is_empty() {
        text.push_str("\n  and earlier unknown writes, which may still take effect:");
    }
    for p in earlier {
        text.push_str(&format!("\n  {}", describe_op(p.op)));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::testutil::*;
    use crate::history::Ret;

    fn shrink(ops: &[Op]) -> (usize, String) {
        let history: Vec<&Op> = ops.iter().collect();
        explain("k", &history, &[Start::Absent])
    }

    #[test]
    fn a_stale_read_shrinks_to_the_write_it_missed() {
        let mut ops = vec![op(1, create("k", "a"), Ret::Done, 0, 10)];
        ops.extend((0..20).map(|i| op(2 + i, read("k"), got(Some("a")), 20 + 10 * i, 25 + 10 * i)));
        ops.push(op(30, cas("k", "a", "b"), Ret::Done, 300, 310));
        ops.push(op(31, read("k"), got(Some("a")), 320, 330));
        ops.push(op(32, read("k"), got(Some("b")), 340, 350));
        let (n, text) = shrink(&ops);
        assert_eq!(n, 2, "{text}");
        assert!(
            text.starts_with("key k: the first 23 operations (by invoke time) cannot be linearized; from invoke time 300 on"),
            "{text}"
        );
        assert!(text.contains("\n  #30 ") && text.contains("\n  #31 "), "{text}");
    }

    #[test]
    fn a_running_write_becomes_optional_and_old_unknowns_stay() {
        let ops = [
            op(1, create("k", "a"), unknown(), 0, 10),
            op(2, delete("k"), Ret::Done, 20, 30),
            op(3, create("k", "b"), Ret::Done, 40, 100),
            op(4, read("k"), got(Some("b")), 50, 60),
            op(5, read("k"), got(Some("a")), 70, 80),
            op(6, read("k"), got(Some("c")), 90, 95),
        ];
        let (_, text) = shrink(&ops);
        assert!(text.contains("the first 5 operations") && text.contains("from invoke time 50 on"), "{text}");
        assert!(
            text.contains("\n  #3 ")
                && text.contains(" optional")
                && text.contains("earlier unknown writes, which may still take effect:\n  #1 "),
            "{text}"
        );
        assert!(!text.contains("#2 ") && !text.contains("#6 "), "{text}");
    }

    #[test]
    fn a_read_of_a_value_never_written_needs_nothing_else() {
        let ops =
            [op(1, create("k", "a"), Ret::Done, 0, 10), op(2, read("k"), got(Some("z")), 20, 30), op(3, delete("k"), Ret::Done, 40, 50)];
        let (n, text) = shrink(&ops);
        assert_eq!(n, 1, "{text}");
        assert!(text.contains("the first 2 operations") && text.contains("from invoke time 20 on") && text.contains("\n  #2 "), "{text}");
    }

    #[test]
    fn a_violation_that_needs_the_empty_start_keeps_it() {
        let ops = [op(1, create("k", "a"), Ret::Conflict, 0, 10), op(2, create("k", "b"), Ret::Done, 20, 30)];
        let (n, text) = shrink(&ops);
        assert_eq!(n, 1, "{text}");
        assert!(text.contains("the first 1 operations (by invoke time) cannot be linearized; these 1 of them already cannot"), "{text}");
    }
}
