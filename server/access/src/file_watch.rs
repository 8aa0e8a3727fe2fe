//! Watching a configuration file for changes: its metadata (modification time and size) is
//! looked at every second, and the file is offered for reading when that changes, and at least
//! once a minute whatever the metadata says (a file replaced in place with the same stamp).

use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

/// How often the file's metadata is looked at.
const POLL: Duration = Duration::from_secs(1);
/// How often the file is offered whatever its metadata says.
const INTERVAL: Duration = Duration::from_secs(60);

/// Calls `changed` (on a task of its own, until the process ends) each time the file at `path`
/// may have changed; `changed` reads it and decides.
pub fn spawn(path: PathBuf, mut changed: impl FnMut() + Send + 'static) {
    tokio::spawn(async move {
        let stamp = |path: &PathBuf| std::fs::metadata(path).and_then(|m| Ok((m.modified()?, m.len()))).ok();
        let mut seen: Option<(SystemTime, u64)> = stamp(&path);
        let mut last = Instant::now();
        loop {
            tokio::time::sleep(POLL).await;
            let now = stamp(&path);
            if now == seen && last.elapsed() < INTERVAL {
                continue;
            }
            seen = now;
            last = Instant::now();
            changed();
        }
    });
}
