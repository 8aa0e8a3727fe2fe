//! The run report: the recorded history as JSON lines, the verdicts, three SVG plots and a
//! one-screen text summary, all written into one directory.

mod plots;
mod summary;
#[cfg(test)]
mod tests;

use std::fs;
use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::Context;
use serde::Serialize;

use crate::check::Verdict;
use crate::history::{FaultRecord, ListRecord, Op, Outcome, WatchRecord};

/// Everything one run recorded and concluded.
pub struct Report<'a> {
    /// One line saying what ran, e.g. "3 nodes, 90s, faults kill-leader,pause".
    pub title: String,
    pub ops: &'a [Op],
    /// The final consistent reads after the last heal.
    pub finals: &'a [Op],
    pub watches: &'a [WatchRecord],
    pub lists: &'a [ListRecord],
    pub faults: &'a [FaultRecord],
    pub verdicts: &'a [Verdict],
    /// Length of the run.
    pub duration_us: u64,
}

/// Writes the report directory and returns the one-screen text summary (also saved as
/// summary.txt).
pub fn write(dir: &Path, r: &Report) -> anyhow::Result<String> {
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    write_jsonl(&dir.join("history.jsonl"), r.ops)?;
    write_jsonl(&dir.join("finals.jsonl"), r.finals)?;
    write_jsonl(&dir.join("watch.jsonl"), r.watches)?;
    write_jsonl(&dir.join("lists.jsonl"), r.lists)?;
    write_jsonl(&dir.join("faults.jsonl"), r.faults)?;
    write_file(
        &dir.join("verdicts.json"),
        &serde_json::to_string_pretty(r.verdicts)?,
    )?;
    write_file(&dir.join("latency.svg"), &plots::latency(r)?)?;
    write_file(&dir.join("throughput.svg"), &plots::throughput(r)?)?;
    write_file(&dir.join("availability.svg"), &plots::availability(r)?)?;
    let text = summary::render(r);
    write_file(&dir.join("summary.txt"), &text)?;
    Ok(text)
}

fn write_jsonl<T: Serialize>(path: &Path, items: &[T]) -> anyhow::Result<()> {
    let file = fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut out = BufWriter::new(file);
    for item in items {
        serde_json::to_writer(&mut out, item)?;
        out.write_all(b"\n")?;
    }
    out.flush()
        .with_context(|| format!("writing {}", path.display()))
}

fn write_file(path: &Path, text: &str) -> anyhow::Result<()> {
    fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// Operations invoked during a fault's window [start, heal]: (ok, all).
fn window_counts(ops: &[Op], fault: &FaultRecord) -> (usize, usize) {
    let inside = ops
        .iter()
        .filter(|op| (fault.start..=fault.heal).contains(&op.invoke));
    inside.fold((0, 0), |(ok, all), op| {
        (ok + usize::from(op.outcome() == Outcome::Ok), all + 1)
    })
}

/// The fraction of operations invoked during a fault's window that were ok, if any were.
fn availability(ops: &[Op], fault: &FaultRecord) -> Option<f64> {
    let (ok, all) = window_counts(ops, fault);
    (all > 0).then(|| ok as f64 / all as f64)
}

/// Microseconds to seconds.
fn secs(us: u64) -> f64 {
    us as f64 / 1e6
}
