//! Free space under the data directory. A log batch or a snapshot is written only while the
//! file system keeps a reserve free beyond it: redb leaves a database that met an I/O error
//! unusable until it is reopened, so the log must never run into `ENOSPC` itself. While space is
//! short the writer holds its batch (nothing is lost, nothing is acknowledged) and tries again;
//! the node refuses new writes at once with the cause, keeps serving reads and watches, and
//! goes on by itself once space is freed.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// Space always left free on the data directory's file system.
pub const RESERVE: u64 = 64 << 20;

/// How often a writer that is short of space looks again.
pub const RETRY: Duration = Duration::from_millis(500);

/// The data directory's free space, and why it last fell short (while it does).
#[derive(Debug)]
pub struct Space {
    dir: PathBuf,
    short: Mutex<Option<String>>,
}

impl Space {
    pub fn new(dir: &Path) -> Space {
        Space { dir: dir.to_path_buf(), short: Mutex::new(None) }
    }

    /// Why `bytes` more cannot be written with the reserve kept, if they cannot.
    pub fn short_of(&self, bytes: u64) -> Option<String> {
        // A file system that cannot say is not held up.
        let stats = rustix::fs::statvfs(&self.dir).ok()?;
        let free = stats.f_bavail.saturating_mul(stats.f_frsize);
        let needed = bytes.saturating_add(RESERVE);
        (free < needed).then(|| {
            format!(
                "no space left for the Raft log of this node: {} MiB free under {}, {} MiB needed",
                free >> 20,
                self.dir.display(),
                needed.div_ceil(1 << 20)
            )
        })
    }

    /// The writer's question: whether `bytes` more can be written with the reserve kept. The
    /// answer stands (and is logged when it changes) until the writer asks again.
    pub fn allows(&self, bytes: u64) -> bool {
        let short = self.short_of(bytes);
        let mut last = self.short.lock().unwrap_or_else(|e| e.into_inner());
        match (&*last, &short) {
            (None, Some(why)) => tracing::warn!(reason = %why, "log writes held until space is freed"),
            (Some(_), None) => tracing::info!("space freed: log writes go on"),
            _ => {}
        }
        let allowed = short.is_none();
        *last = short;
        allowed
    }

    /// Why a new write is refused: the writer is held, or the reserve is already gone.
    pub fn refusal(&self) -> Option<String> {
        self.shortage().or_else(|| self.short_of(0))
    }

    /// Why the writer is held, while it is.
    fn shortage(&self) -> Option<String> {
        self.short.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}
