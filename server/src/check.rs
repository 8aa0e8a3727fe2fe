//! `apiserver check`: a stopped node's data verified offline (`raft_store::offline::check`),
//! with what it holds.

use std::path::Path;

pub fn run(data_dir: &Path) -> anyhow::Result<()> {
    let report = raft_store::offline::check(data_dir).map_err(|e| anyhow::anyhow!("{}: {e}", data_dir.display()))?;
    let opt = |v: Option<u64>| v.map_or("none".to_string(), |v| v.to_string());
    println!("snapshot at index {}", opt(report.snapshot_index));
    println!("log: {} entries from index {}", report.entries, opt(report.first_entry));
    println!("state at index {}: {} objects", opt(report.last_index), report.objects);
    for problem in &report.problems {
        println!("problem: {problem}");
    }
    anyhow::ensure!(report.problems.is_empty(), "{} problems found", report.problems.len());
    println!("checked: no problem found");
    Ok(())
}
