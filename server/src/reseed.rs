//! `apiserver reseed`: moves a node's Raft state (its log and state database and its snapshot)
//! aside into `DATA_DIR/damaged-<seconds>/`, keeping its certificates, so that the node, started
//! with `--initial-cluster-state existing`, catches up from the leader as a member that lost its
//! data. The moved files stay for inspection.

use std::path::Path;

use anyhow::Context;

/// The files of a node's Raft state.
const STATE: &[&str] = &["raft.redb", "snapshot"];

pub fn run(data_dir: &Path) -> anyhow::Result<()> {
    let seconds = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or_default();
    let aside = data_dir.join(format!("damaged-{seconds}"));
    let mut moved = Vec::new();
    for name in STATE {
        let from = data_dir.join(name);
        if !from.exists() {
            continue;
        }
        std::fs::create_dir_all(&aside).with_context(|| format!("creating {}", aside.display()))?;
        std::fs::rename(&from, aside.join(name)).with_context(|| format!("moving {} to {}", from.display(), aside.display()))?;
        moved.push(*name);
    }
    anyhow::ensure!(!moved.is_empty(), "{} holds no Raft state (raft.redb, snapshot)", data_dir.display());
    println!("moved {} to {}", moved.join(" and "), aside.display());
    println!("start the node with --initial-cluster-state existing: it catches up from the leader");
    Ok(())
}
