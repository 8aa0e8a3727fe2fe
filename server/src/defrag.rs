//! `apiserver defrag`: a stopped node's database file compacted offline
//! (`raft_store::offline::defrag`), with its size before and after.

use std::path::Path;

pub fn run(data_dir: &Path) -> anyhow::Result<()> {
    let done = raft_store::offline::defrag(data_dir).map_err(|e| anyhow::anyhow!("{}: {e}", data_dir.display()))?;
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    println!("raft.redb compacted: {:.1} MiB before, {:.1} MiB after", mib(done.before), mib(done.after));
    Ok(())
}
