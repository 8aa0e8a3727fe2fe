//! The fan-out of applied events to watchers, indexed by what each one selects: by the directory
//! of keys it watches, then by an object's name or by the value of an indexed field (a pod's
//! `spec.nodeName`), so that an event is offered only to the watchers it may concern rather than
//! to every watcher of the store. Kubernetes' watch cache does the same with its indexed
//! triggers. Each watcher has its own bounded queue; one that falls the cache's `watch_buffer`
//! events behind is closed, and says so.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

use serde_json::value::RawValue;
use tokio::sync::mpsc;

use crate::cache::{Cache, Event, WatchError};

/// What a watcher selects, as far as the fan-out can tell from a key or an indexed field. It is
/// a bound, not the selection: the watcher still filters what it is offered.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Selects {
    /// Every key under the watcher's prefix.
    Everything,
    /// Keys whose last segment is this name (`metadata.name`).
    Name(String),
    /// Objects whose indexed `field` holds `value`, before or after the change (a change that
    /// moves an object out of a selection is a DELETED event for its watchers).
    Field { field: String, value: String },
}

/// A field watchers may select by: for keys starting with `prefix`, the JSON string at the dotted
/// path `field` (missing or not a string reads as "", as a field selector compares it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldIndex {
    pub prefix: String,
    pub field: String,
}

/// One watcher's end of the fan-out.
struct Sink {
    tx: mpsc::Sender<Arc<Event>>,
    lagged: Arc<AtomicBool>,
    /// The watcher's prefix when it is not a whole directory of keys (checked per event).
    prefix: Option<String>,
}

impl Sink {
    /// Offers `ev`: whether it was queued (not when outside the watcher's prefix), or `Err`
    /// when the watcher is gone or, its queue full, now closed as lagging.
    fn offer(&self, ev: &Arc<Event>) -> Result<bool, ()> {
        if self.prefix.as_ref().is_some_and(|p| !ev.key.starts_with(p.as_str())) {
            return Ok(false);
        }
        match self.tx.try_send(ev.clone()) {
            Ok(()) => Ok(true),
            Err(mpsc::error::TrySendError::Full(_)) => {
                self.lagged.store(true, Relaxed);
                Err(())
            }
            Err(mpsc::error::TrySendError::Closed(_)) => Err(()),
        }
    }
}

type Sinks = HashMap<u64, Sink>;

/// The watchers of one directory of keys.
#[derive(Default)]
struct Group {
    everything: Sinks,
    names: HashMap<String, Sinks>,
    /// By indexed field, then by the value selected.
    fields: HashMap<String, HashMap<String, Sinks>>,
}

impl Group {
    fn is_empty(&self) -> bool {
        self.everything.is_empty() && self.names.is_empty() && self.fields.is_empty()
    }

    fn sinks(&mut self, selects: &Selects) -> &mut Sinks {
        match selects {
            Selects::Everything => &mut self.everything,
            Selects::Name(name) => self.names.entry(name.clone()).or_default(),
            Selects::Field { field, value } => self.fields.entry(field.clone()).or_default().entry(value.clone()).or_default(),
        }
    }

    /// Takes watcher `id` out, and the maps left empty by it.
    fn remove(&mut self, selects: &Selects, id: u64) {
        match selects {
            Selects::Everything => {
                self.everything.remove(&id);
            }
            Selects::Name(name) => {
                let Some(sinks) = self.names.get_mut(name) else { return };
                sinks.remove(&id);
                if sinks.is_empty() {
                    self.names.remove(name);
                }
            }
            Selects::Field { field, value } => {
                let Some(values) = self.fields.get_mut(field) else { return };
                if let Some(sinks) = values.get_mut(value) {
                    sinks.remove(&id);
                    if sinks.is_empty() {
                        values.remove(value);
                    }
                }
                if values.is_empty() {
                    self.fields.remove(field);
                }
            }
        }
    }
}

/// Every watcher of the store, by directory and selection.
pub(crate) struct Hub {
    indexes: Vec<FieldIndex>,
    buffer: usize,
    next: u64,
    groups: HashMap<String, Group>,
}

/// Where a watcher is registered, to take it out again.
pub(crate) struct Registration {
    dir: String,
    pub(crate) selects: Selects,
    id: u64,
}

/// A key's directory: the key up to its last `/`.
pub(crate) fn dir(key: &str) -> &str {
    key.rfind('/').map_or("", |i| &key[..=i])
}

/// The string at the dotted `path` of an object's JSON; "" when missing or not a string, `None`
/// when the bytes are not a JSON object at all.
pub(crate) fn field_value(data: &[u8], path: &str) -> Option<String> {
    let mut raw: &RawValue = serde_json::from_slice(data).ok()?;
    if !raw.get().starts_with('{') {
        return None;
    }
    for segment in path.split('.') {
        let Ok(object) = serde_json::from_str::<HashMap<String, &RawValue>>(raw.get()) else { return Some(String::new()) };
        match object.get(segment) {
            Some(inner) => raw = inner,
            None => return Some(String::new()),
        }
    }
    Some(serde_json::from_str::<String>(raw.get()).unwrap_or_default())
}

/// The values of `field` an event carries (after and before its change, once), or `None` when
/// its object cannot be decoded: every watcher of the field is then offered it (and ends on it).
fn values<'a>(ev: &'a Event, indexes: &[FieldIndex], field: &str) -> Option<impl Iterator<Item = &'a str>> {
    let indexed = ev.indexed(indexes).iter().find(|i| i.field == field)?;
    let now = indexed.now.as_deref()?;
    let before = indexed.before.as_deref().filter(|b| *b != now);
    Some([Some(now), before].into_iter().flatten())
}

/// Whether `selects` may concern `ev` (its key already under the watcher's prefix).
pub(crate) fn concerns(ev: &Event, selects: &Selects, indexes: &[FieldIndex]) -> bool {
    match selects {
        Selects::Everything => true,
        Selects::Name(name) => ev.key[dir(&ev.key).len()..] == **name,
        Selects::Field { field, value } => values(ev, indexes, field).is_none_or(|mut v| v.any(|v| v == value)),
    }
}

/// Offers `ev` to every sink of `sinks`, collecting those to drop; returns to how many it went.
fn offer_all(sinks: &Sinks, ev: &Arc<Event>, dir: &str, selects: impl Fn() -> Selects, gone: &mut Vec<(String, Selects, u64)>) -> usize {
    let mut queued = 0;
    for (id, sink) in sinks {
        match sink.offer(ev) {
            Ok(sent) => queued += usize::from(sent),
            Err(()) => gone.push((dir.to_string(), selects(), *id)),
        }
    }
    queued
}

impl Hub {
    pub(crate) fn new(indexes: Vec<FieldIndex>, buffer: usize) -> Hub {
        Hub { indexes, buffer: buffer.max(16), next: 0, groups: HashMap::new() }
    }

    /// How many watchers are registered.
    #[cfg(test)]
    pub(crate) fn watchers(&self) -> usize {
        let in_group = |g: &Group| g.everything.len() + g.names.values().map(HashMap::len).sum::<usize>() + g.fields.values().flat_map(HashMap::values).map(HashMap::len).sum::<usize>();
        self.groups.values().map(in_group).sum()
    }

    /// Registers a watcher of keys under `prefix` selecting `selects` (a field that is not
    /// indexed under `prefix` selects everything).
    pub(crate) fn subscribe(&mut self, prefix: &str, selects: Selects) -> (Registration, mpsc::Receiver<Arc<Event>>, Arc<AtomicBool>) {
        let selects = match selects {
            Selects::Field { field, .. } if !self.indexes.iter().any(|i| i.field == field && prefix.starts_with(&i.prefix)) => Selects::Everything,
            s => s,
        };
        let (tx, rx) = mpsc::channel(self.buffer);
        let lagged = Arc::new(AtomicBool::new(false));
        let d = dir(prefix);
        let sink = Sink { tx, lagged: lagged.clone(), prefix: (d != prefix).then(|| prefix.to_string()) };
        self.next += 1;
        let id = self.next;
        self.groups.entry(d.to_string()).or_default().sinks(&selects).insert(id, sink);
        (Registration { dir: d.to_string(), selects, id }, rx, lagged)
    }

    pub(crate) fn unsubscribe(&mut self, r: &Registration) {
        self.remove(&r.dir, &r.selects, r.id);
    }

    fn remove(&mut self, dir: &str, selects: &Selects, id: u64) {
        if let Some(group) = self.groups.get_mut(dir) {
            group.remove(selects, id);
            if group.is_empty() {
                self.groups.remove(dir);
            }
        }
    }

    /// Ends every watcher: each gets what was sent to it, then the end of its stream.
    pub(crate) fn close_all(&mut self) {
        self.groups.clear();
    }

    /// Offers `ev` to the watchers it may concern; returns to how many.
    pub(crate) fn send(&mut self, ev: &Arc<Event>) -> usize {
        let mut gone = Vec::new();
        let mut offered = 0;
        let name = &ev.key[dir(&ev.key).len()..];
        for (i, _) in ev.key.match_indices('/') {
            let d = &ev.key[..=i];
            let Some(group) = self.groups.get(d) else { continue };
            offered += offer_all(&group.everything, ev, d, || Selects::Everything, &mut gone);
            if let Some(sinks) = group.names.get(name) {
                offered += offer_all(sinks, ev, d, || Selects::Name(name.to_string()), &mut gone);
            }
            for (field, by_value) in &group.fields {
                let of = |value: &String| Selects::Field { field: field.clone(), value: value.clone() };
                match values(ev, &self.indexes, field) {
                    Some(values) => {
                        for value in values {
                            if let Some((value, sinks)) = by_value.get_key_value(value) {
                                offered += offer_all(sinks, ev, d, || of(value), &mut gone);
                            }
                        }
                    }
                    None => {
                        for (value, sinks) in by_value {
                            offered += offer_all(sinks, ev, d, || of(value), &mut gone);
                        }
                    }
                }
            }
        }
        for (d, selects, id) in gone {
            self.remove(&d, &selects, id);
        }
        offered
    }
}

/// A stream of events under one prefix, after a starting revision.
pub struct Watcher {
    pub(crate) cache: Arc<Cache>,
    pub(crate) registration: Registration,
    pub(crate) backlog: VecDeque<Arc<Event>>,
    pub(crate) rx: mpsc::Receiver<Arc<Event>>,
    pub(crate) lagged: Arc<AtomicBool>,
    /// Highest revision this watcher has passed.
    pub(crate) seen: u64,
}

impl Watcher {
    /// The next event under the prefix (those the watcher's selection cannot concern are never
    /// offered).
    pub async fn next(&mut self) -> Result<Arc<Event>, WatchError> {
        if let Some(ev) = self.backlog.pop_front() {
            self.seen = self.seen.max(ev.rev);
            return Ok(ev);
        }
        loop {
            match self.rx.recv().await {
                // Already delivered from the backlog.
                Some(ev) if ev.rev <= self.seen => continue,
                Some(ev) => {
                    self.seen = ev.rev;
                    return Ok(ev);
                }
                None if self.lagged.load(Relaxed) => return Err(WatchError::Lagged),
                None => return Err(WatchError::Closed),
            }
        }
    }

    /// A revision a bookmark may carry now: every event up to it has been delivered.
    /// `None` while delivered events are still queued.
    pub fn progress(&mut self) -> Option<u64> {
        if !self.backlog.is_empty() {
            return None;
        }
        // Read before looking at the queue: events up to it were offered before it was
        // published, so an empty queue means they are delivered.
        let applied = self.cache.applied();
        // Closed: a snapshot replaced the state (before it published `applied`), or the
        // watcher lagged; no later revision is this watcher's to vouch for.
        if !self.rx.is_empty() || self.rx.is_closed() {
            return None;
        }
        self.seen = self.seen.max(applied);
        Some(self.seen)
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.cache.unsubscribe(&self.registration);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_indexed_field_reads_as_a_field_selector_compares_it() {
        let pod = br#"{"metadata":{"name":"a"},"spec":{"nodeName":"node-1","containers":[]}}"#;
        assert_eq!(field_value(pod, "spec.nodeName").as_deref(), Some("node-1"));
        assert_eq!(field_value(br#"{"spec":{}}"#, "spec.nodeName").as_deref(), Some(""));
        assert_eq!(field_value(br#"{"spec":null}"#, "spec.nodeName").as_deref(), Some(""));
        assert_eq!(field_value(br#"{"spec":{"nodeName":7}}"#, "spec.nodeName").as_deref(), Some(""));
        assert_eq!(field_value(b"\x00\x01 not json", "spec.nodeName"), None);
        assert_eq!(field_value(b"[1]", "spec.nodeName"), None);
    }
}
