//! The Raft library's repeated warnings, let through once per window. While a peer is down,
//! openraft warns at every heartbeat and at every replication retry: several identical lines a
//! second for as long as the peer stays down. A warning whose line (after its timestamp) was
//! already written in the current window is held back and counted, and each window ends with
//! one line per held-back warning saying how often it repeated.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tracing::{Level, Metadata};
use tracing_subscriber::fmt::MakeWriter;

/// How often each distinct warning is let through.
pub const WINDOW: Duration = Duration::from_secs(10);

/// Distinct warnings remembered in one window; past this many, further ones all go through (the
/// memory stays bounded whatever the warnings say).
const REMEMBERED: usize = 1_000;

/// The log's writer: each formatted line goes to `inner`, but the repeats of an openraft warning
/// in a window (the same text after the timestamp) are counted instead.
#[derive(Clone)]
pub struct RepeatLimit<M> {
    inner: M,
    /// The warnings let through in this window, by a hash of their text.
    seen: Arc<Mutex<HashMap<u64, Held>>>,
}

struct Held {
    text: String,
    repeats: u64,
}

impl<M> RepeatLimit<M> {
    pub fn new(inner: M) -> Self {
        RepeatLimit { inner, seen: Arc::default() }
    }

    /// Whether `line` goes through: the first time its text is seen in this window.
    fn first(&self, line: &[u8]) -> bool {
        // The text after the timestamp.
        let text = line.iter().position(|b| *b == b' ').map_or(line, |i| &line[i + 1..]);
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut hasher);
        let key = hasher.finish();
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(held) = seen.get_mut(&key) {
            held.repeats += 1;
            return false;
        }
        if seen.len() < REMEMBERED {
            seen.insert(key, Held { text: plain(text), repeats: 0 });
        }
        true
    }

    /// Ends the window: each warning that repeated in it, with how often; in the next window
    /// each goes through once again.
    pub fn end_window(&self) -> Vec<(String, u64)> {
        let seen = std::mem::take(&mut *self.seen.lock().unwrap_or_else(|p| p.into_inner()));
        seen.into_values().filter(|h| h.repeats > 0).map(|h| (h.text, h.repeats)).collect()
    }

    /// Ends a window every [`WINDOW`], logging one line per warning held back in it.
    pub async fn report(self) {
        let mut every = tokio::time::interval(WINDOW);
        every.tick().await;
        loop {
            every.tick().await;
            for (text, repeats) in self.end_window() {
                tracing::warn!(repeats, "repeated in the last {} s: {text}", WINDOW.as_secs());
            }
        }
    }
}

impl<'a, M: MakeWriter<'a> + 'a> MakeWriter<'a> for RepeatLimit<M> {
    type Writer = Limited<'a, M>;

    fn make_writer(&'a self) -> Self::Writer {
        Limited { to: self.inner.make_writer(), limit: None }
    }

    fn make_writer_for(&'a self, meta: &Metadata<'_>) -> Self::Writer {
        let watched = *meta.level() == Level::WARN && meta.target().starts_with("openraft");
        Limited { to: self.inner.make_writer_for(meta), limit: watched.then_some(self) }
    }
}

/// A line's text without its terminal colours and surrounding blanks.
fn plain(text: &[u8]) -> String {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.iter();
    while let Some(&b) = rest.next() {
        if b == 0x1b {
            // `ESC [ ... m`
            rest.by_ref().find(|c| **c == b'm');
        } else {
            bytes.push(b);
        }
    }
    String::from_utf8_lossy(&bytes).trim().to_string()
}

/// The writer of one line; `limit` is set for the lines it may hold back.
pub struct Limited<'a, M: MakeWriter<'a> + 'a> {
    to: M::Writer,
    limit: Option<&'a RepeatLimit<M>>,
}

impl<'a, M: MakeWriter<'a> + 'a> Write for Limited<'a, M> {
    /// The formatter writes each line whole, in one call.
    fn write(&mut self, line: &[u8]) -> std::io::Result<usize> {
        if self.limit.is_none_or(|l| l.first(line)) {
            self.to.write_all(line)?;
        }
        Ok(line.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.to.flush()
    }
}

#[cfg(test)]
mod tests {
    use tracing_subscriber::layer::SubscriberExt;

    use super::*;

    /// The log's lines, as a writer the formatter can share.
    #[derive(Clone, Default)]
    struct Lines(Arc<Mutex<Vec<u8>>>);

    impl Write for Lines {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().write(buf)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Lines {
        type Writer = Lines;
        fn make_writer(&'a self) -> Lines {
            self.clone()
        }
    }

    impl Lines {
        fn count(&self, what: &str) -> usize {
            String::from_utf8_lossy(&self.0.lock().unwrap()).lines().filter(|l| l.contains(what)).count()
        }
    }

    #[test]
    fn a_repeated_raft_warning_goes_through_once_a_window_and_its_repeats_are_counted() {
        let lines = Lines::default();
        let limit = RepeatLimit::new(lines.clone());
        let log = tracing_subscriber::fmt::layer().with_ansi(false).with_writer(limit.clone());
        tracing::subscriber::with_default(tracing_subscriber::registry().with(log), || {
            for _ in 0..5 {
                tracing::warn!(target: "openraft::replication", "node {} unreachable", 3);
                tracing::warn!(target: "openraft::replication", "node {} unreachable", 2);
                tracing::warn!(target: "apiserver::other", "a warning of this server's own");
                tracing::info!(target: "openraft::core", "an openraft line that is not a warning");
            }
            assert_eq!(lines.count("node 3 unreachable"), 1);
            assert_eq!(lines.count("node 2 unreachable"), 1);
            assert_eq!(lines.count("of this server's own"), 5);
            assert_eq!(lines.count("not a warning"), 5);
            let mut held = limit.end_window();
            held.sort();
            let texts: Vec<(&str, u64)> = held.iter().map(|(t, n)| (t.as_str(), *n)).collect();
            assert_eq!(texts, [("WARN openraft::replication: node 2 unreachable", 4), ("WARN openraft::replication: node 3 unreachable", 4)]);
            // A new window lets each through again; nothing repeated in it yet.
            tracing::warn!(target: "openraft::replication", "node {} unreachable", 3);
            assert_eq!(lines.count("node 3 unreachable"), 2);
            assert!(limit.end_window().is_empty());
        });
    }

    #[test]
    fn a_held_back_line_is_reported_without_its_colours() {
        assert_eq!(plain(b" \x1b[33m WARN\x1b[0m \x1b[2mopenraft::replication\x1b[0m\x1b[2m:\x1b[0m node 3 unreachable\n"), "WARN openraft::replication: node 3 unreachable");
    }
}
