//! The one-screen text summary: operation counts, watches, lists, faults with recovery and
//! availability, and every checker's verdict with its counter-example.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::{secs, window_counts, Report};
use crate::history::{Call, Op, Outcome, WatchKind, WatchRecord};

/// Counter-example lines shown in all, shared among the failing verdicts (each gets at least
/// `MIN_EXAMPLE_LINES`); the rest is in verdicts.json.
const MAX_EXAMPLE_LINES: usize = 40;
const MIN_EXAMPLE_LINES: usize = 8;

const KINDS: [&str; 4] = ["read", "create", "cas", "delete"];

pub(super) fn render(r: &Report) -> String {
    let mut s = String::new();
    render_into(&mut s, r).expect("writing into a String cannot fail");
    s
}

fn render_into(s: &mut String, r: &Report) -> std::fmt::Result {
    writeln!(s, "{}", r.title)?;
    writeln!(
        s,
        "run {:.1}s, {} final reads ({} ok)",
        secs(r.duration_us),
        r.finals.len(),
        count_ok(r.finals)
    )?;
    operations(s, r.ops)?;
    watches(s, r.watches)?;
    let exact = r.lists.iter().filter(|l| l.exact).count();
    writeln!(
        s,
        "lists checked: {} ({exact} at an exact revision)",
        r.lists.len()
    )?;
    faults(s, r)?;
    verdicts(s, r)
}

fn count_ok(ops: &[Op]) -> usize {
    ops.iter().filter(|op| op.outcome() == Outcome::Ok).count()
}

fn kind(call: &Call) -> usize {
    match call {
        Call::Read { .. } => 0,
        Call::Create { .. } => 1,
        Call::Cas { .. } => 2,
        Call::Delete { .. } => 3,
    }
}

fn operations(s: &mut String, ops: &[Op]) -> std::fmt::Result {
    // Per kind: [ok, failed, unknown].
    let mut counts = [[0usize; 3]; KINDS.len()];
    for op in ops {
        let column = match op.outcome() {
            Outcome::Ok => 0,
            Outcome::Failed => 1,
            Outcome::Unknown => 2,
        };
        counts[kind(&op.call)][column] += 1;
    }
    let total = counts
        .iter()
        .fold([0; 3], |t, c| [t[0] + c[0], t[1] + c[1], t[2] + c[2]]);
    writeln!(
        s,
        "operations: {} (ok {}, failed {}, unknown {})",
        ops.len(),
        total[0],
        total[1],
        total[2]
    )?;
    for (name, [ok, failed, unknown]) in KINDS.iter().zip(counts) {
        writeln!(
            s,
            "  {name:<7} ok {ok:>7}  failed {failed:>7}  unknown {unknown:>7}"
        )?;
    }
    Ok(())
}

fn watches(s: &mut String, records: &[WatchRecord]) -> std::fmt::Result {
    // Per watcher: [events, relists, errors].
    let mut seen: BTreeMap<&str, [usize; 3]> = BTreeMap::new();
    for w in records {
        let c = seen.entry(&w.watcher).or_default();
        match w.kind {
            WatchKind::Event { .. } => c[0] += 1,
            WatchKind::Relist { .. } => c[1] += 1,
            WatchKind::Error { .. } => c[2] += 1,
            WatchKind::Started { .. } | WatchKind::Bookmark { .. } => {}
        }
    }
    writeln!(s, "watchers: {}", seen.len())?;
    for (watcher, [events, relists, errors]) in seen {
        writeln!(
            s,
            "  {watcher:<8} {events:>7} events, {relists} relists, {errors} stream errors"
        )?;
    }
    Ok(())
}

/// One line per kind of fault (every injection is in `faults.jsonl`): how often, the range of
/// recovery times, and the range of availability during it.
fn faults(s: &mut String, r: &Report) -> std::fmt::Result {
    writeln!(s, "faults: {} injected", r.faults.len())?;
    let mut kinds: Vec<&str> = Vec::new();
    for f in r.faults {
        if !kinds.contains(&f.name.as_str()) {
            kinds.push(&f.name);
        }
    }
    for kind in kinds {
        let of_kind: Vec<_> = r.faults.iter().filter(|f| f.name == kind).collect();
        let mut recoveries: Vec<u64> = of_kind.iter().filter_map(|f| f.recovered.map(|at| at.saturating_sub(f.heal) / 1000)).collect();
        recoveries.sort_unstable();
        let unrecovered = of_kind.len() - recoveries.len();
        let recovery = match (recoveries.first(), recoveries.last()) {
            (Some(lo), Some(hi)) => format!("recovery {lo}-{hi} ms"),
            _ => "recovery none".to_string(),
        };
        let never = if unrecovered > 0 { format!(" ({unrecovered} never)") } else { String::new() };
        let mut avail: Vec<f64> = of_kind.iter().filter_map(|f| {
            let (ok, all) = window_counts(r.ops, f);
            (all > 0).then(|| 100.0 * ok as f64 / all as f64)
        }).collect();
        avail.sort_by(f64::total_cmp);
        let availability = match (avail.first(), avail.last()) {
            (Some(lo), Some(hi)) => format!("availability {lo:.0}-{hi:.0}% ok"),
            _ => "no ops".to_string(),
        };
        writeln!(s, "  {kind:<18} x{:<3} {recovery}{never}  {availability}", of_kind.len())?;
    }
    Ok(())
}

fn verdicts(s: &mut String, r: &Report) -> std::fmt::Result {
    let failing = r.verdicts.iter().filter(|v| !v.ok).count();
    let shown = (MAX_EXAMPLE_LINES / failing.max(1)).max(MIN_EXAMPLE_LINES);
    for v in r.verdicts {
        let word = if v.ok { "PASS" } else { "FAIL" };
        writeln!(s, "{word} {} (checked {})", v.checker, v.checked)?;
        let Some(example) = v.counterexample.as_deref().filter(|_| !v.ok) else {
            continue;
        };
        let lines: Vec<&str> = example.lines().collect();
        for line in lines.iter().take(shown) {
            writeln!(s, "    {line}")?;
        }
        if lines.len() > shown {
            writeln!(
                s,
                "    ... {} more lines, see verdicts.json",
                lines.len() - shown
            )?;
        }
    }
    match failing {
        0 => writeln!(s, "VERDICT: PASS"),
        1 => writeln!(s, "VERDICT: FAIL (1 violation)"),
        k => writeln!(s, "VERDICT: FAIL ({k} violations)"),
    }
}
