//! The watch cache: the current objects, a window of recent events (the MVCC history) and the
//! fan-out to watchers. Fed only by the apply loop, so every replica holds the same history.
//!
//! A read at an older revision starts from the current objects and undoes the events newer than
//! it; once an event leaves the window, revisions before it are compacted and yield
//! [`StoreError::Compacted`].

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::watch;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::dedupe::{Outcome, Outcomes};
use crate::error::{CorruptObject, StoreError, MAX_CORRUPT};
use crate::fanout::{concerns, dir, field_value, FieldIndex, Hub, Registration, Selects, Watcher};
use crate::observer::Observers;
use crate::stamp::{stamp, undecodable};
use crate::types::{Action, Cond, Object, Txn, TxnResult};

/// How a watch event changed its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

/// One change to one key, at one revision.
#[derive(Debug, Clone)]
pub struct Event {
    pub rev: u64,
    pub key: String,
    pub kind: EventType,
    /// The new object; for a deletion, the last state stamped with the deletion revision.
    pub object: Object,
    /// The object before this change (as stored, with its own revision).
    pub prev: Option<Object>,
    /// Why `object` cannot be decoded, when it cannot.
    pub undecodable: Option<String>,
    at: Instant,
    forms: Forms,
    /// The indexed fields of the key's kind: each one's value after and before the change
    /// (`None` when the object cannot be decoded), read once, when a watcher first selects by
    /// one of them ([`Event::indexed`]).
    indexed: OnceLock<Vec<Indexed>>,
}

/// One indexed field of an event's object, after and before its change.
#[derive(Debug, Clone)]
pub(crate) struct Indexed {
    pub(crate) field: String,
    pub(crate) now: Option<String>,
    pub(crate) before: Option<String>,
}

/// An event's object in the forms its watchers asked for (an encoding of a version, named and
/// made by the layer above), each made once and shared by every watcher of the same form.
#[derive(Default)]
struct Forms(Mutex<Vec<(Box<str>, Bytes)>>);

impl Clone for Forms {
    fn clone(&self) -> Self {
        Forms::default()
    }
}

impl std::fmt::Debug for Forms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Forms")
    }
}

impl Event {
    /// What the event counts toward the window's bytes: its key and new object. The object
    /// before the change is the previous event's, or the state's from before the window.
    fn weight(&self) -> u64 {
        (self.key.len() + self.object.data.len()) as u64
    }

    /// The values of the `indexes` that cover the event's key, read on the first call.
    pub(crate) fn indexed(&self, indexes: &[FieldIndex]) -> &[Indexed] {
        self.indexed.get_or_init(|| {
            indexes
                .iter()
                .filter(|i| self.key.starts_with(&i.prefix))
                .map(|i| Indexed {
                    field: i.field.clone(),
                    now: if self.undecodable.is_some() { None } else { field_value(&self.object.data, &i.field) },
                    before: self.prev.as_ref().and_then(|p| field_value(&p.data, &i.field)),
                })
                .collect()
        })
    }

    /// The object in the form named `form`, if a watcher made it already.
    pub fn form(&self, form: &str) -> Option<Bytes> {
        let forms = self.forms.0.lock().unwrap_or_else(|e| e.into_inner());
        forms.iter().find(|(f, _)| &**f == form).map(|(_, b)| b.clone())
    }

    /// Keeps the object in the form named `form` for the event's other watchers; the first one
    /// kept wins when two watchers made it at once.
    pub fn keep_form(&self, form: &str, bytes: Bytes) -> Bytes {
        let mut forms = self.forms.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, kept)) = forms.iter().find(|(f, _)| &**f == form) {
            return kept.clone();
        }
        forms.push((form.into(), bytes.clone()));
        bytes
    }
}

/// Limits of the event window, and the fields watchers may be indexed by.
#[derive(Debug, Clone)]
pub struct CacheOptions {
    /// How long events (and so past revisions and continue tokens) are kept.
    pub retention: Duration,
    /// At most this many events are kept, whatever their age.
    pub max_events: usize,
    /// At most this many bytes of objects are kept in events ([`Event::weight`]), whatever
    /// their age.
    pub max_event_bytes: u64,
    /// A watcher further behind than this many events is closed.
    pub watch_buffer: usize,
    /// Fields an event is offered by to the watchers selecting their value (a pod's
    /// `spec.nodeName`), instead of to every watcher of the keys.
    pub indexes: Vec<FieldIndex>,
}

impl Default for CacheOptions {
    fn default() -> Self {
        CacheOptions { retention: Duration::from_secs(300), max_events: 100_000, max_event_bytes: 256 << 20, watch_buffer: 10_000, indexes: Vec::new() }
    }
}

/// What a snapshot of the state holds: the applied revision, the objects, and the remembered
/// proposal outcomes (revision, id, outcome).
pub(crate) type Snapshot = (u64, BTreeMap<String, Object>, Vec<(u64, u64, Outcome)>);

#[derive(Default)]
pub(crate) struct State {
    pub(crate) applied: u64,
    pub(crate) objects: BTreeMap<String, Object>,
    history: VecDeque<Arc<Event>>,
    /// The events' weights, all told.
    history_bytes: u64,
    /// Revisions below this can no longer be read.
    compacted: u64,
    /// Outcomes of recent proposals, so that a retried one applies once.
    txns: Outcomes,
    /// Current objects whose bytes cannot be decoded: key to (revision, why).
    undecodable: BTreeMap<String, (u64, String)>,
    /// How many current objects each directory of keys holds (a key's directory: the key up to
    /// its last `/`), kept by the apply path for counts by prefix.
    dirs: BTreeMap<String, u64>,
}

/// The directory of `key`: up to and with its last `/`.
/// What one stored object counts toward the state's size.
fn size(key: &str, object: &Object) -> u64 {
    (key.len() + object.data.len()) as u64
}

impl State {
    /// Counts a new object at `key`.
    fn count_in(&mut self, key: &str) {
        match self.dirs.get_mut(dir(key)) {
            Some(n) => *n += 1,
            None => {
                self.dirs.insert(dir(key).to_string(), 1);
            }
        }
    }

    /// Counts the object at `key` gone.
    fn count_out(&mut self, key: &str) {
        let d = dir(key);
        if let Some(n) = self.dirs.get_mut(d) {
            *n -= 1;
            if *n == 0 {
                self.dirs.remove(d);
            }
        }
    }

    /// `obj` (at `key`) as a read may return it: an error when its bytes cannot be decoded.
    fn readable(&self, key: &str, obj: &Object) -> Result<(), CorruptObject> {
        match self.undecodable.get(key) {
            Some((rev, reason)) if *rev == obj.rev => Err(CorruptObject { key: key.to_string(), rev: *rev, reason: reason.clone() }),
            _ => Ok(()),
        }
    }
}

/// A page of a list: the items, the revision they were read at, and whether more follow.
#[derive(Debug, Clone)]
pub struct ListResult {
    pub rev: u64,
    pub items: Vec<Object>,
    /// Key of the last item returned, when more keys follow it.
    pub continue_after: Option<String>,
    /// Keys left after this page (before any filtering).
    pub remaining: u64,
}

pub struct Cache {
    state: RwLock<State>,
    /// The watchers. Emptied when the state is replaced (snapshot install): the watchers of the
    /// old state then end, since no event connects it to the new one.
    hub: Mutex<Hub>,
    applied: watch::Sender<u64>,
    opts: CacheOptions,
    observers: Observers,
    /// The current objects' keys and bytes, all told (what `--quota-backend-bytes` bounds),
    /// kept by the apply path and read without the lock.
    bytes: AtomicU64,
}

impl Cache {
    pub fn new(opts: CacheOptions) -> Self {
        Cache::with_observers(opts, Observers::default())
    }

    /// A cache whose apply path also feeds `observers`.
    pub fn with_observers(opts: CacheOptions, observers: Observers) -> Self {
        let hub = Mutex::new(Hub::new(opts.indexes.clone(), opts.watch_buffer));
        let (applied, _) = watch::channel(0);
        Cache { state: RwLock::new(State::default()), hub, applied, opts, observers, bytes: Default::default() }
    }

    fn hub(&self) -> std::sync::MutexGuard<'_, Hub> {
        self.hub.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn read(&self) -> RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn write(&self) -> Applier<'_> {
        Applier { cache: self, state: self.state.write().unwrap_or_else(|e| e.into_inner()), pending: Vec::new(), traced: Vec::new() }
    }

    /// The last applied log index: the revision of the newest readable state.
    pub fn applied(&self) -> u64 {
        *self.applied.borrow()
    }

    /// The oldest revision still readable.
    pub fn compacted(&self) -> u64 {
        self.read().compacted
    }

    /// Waits until the applied revision reaches `rev`, at most `timeout`.
    pub async fn wait_applied(&self, rev: u64, timeout: Duration) -> Result<(), StoreError> {
        let mut rx = self.applied.subscribe();
        let reached = tokio::time::timeout(timeout, rx.wait_for(|a| *a >= rev)).await;
        match reached {
            Ok(Ok(_)) => Ok(()),
            _ => Err(StoreError::TooLargeResourceVersion { requested: rev, current: self.applied() }),
        }
    }

    fn check_rev(st: &State, rev: u64) -> Result<(), StoreError> {
        if rev < st.compacted {
            return Err(StoreError::Compacted { requested: rev, compacted: st.compacted });
        }
        if rev > st.applied {
            return Err(StoreError::TooLargeResourceVersion { requested: rev, current: st.applied });
        }
        Ok(())
    }

    /// The object at `key`, now or as it was at revision `at`.
    pub fn get(&self, key: &str, at: Option<u64>) -> Result<Option<Object>, StoreError> {
        let st = self.read();
        let mut obj = st.objects.get(key).cloned();
        if let Some(rev) = at {
            Self::check_rev(&st, rev)?;
            for ev in st.history.iter().rev().take_while(|e| e.rev > rev) {
                if ev.key == key {
                    obj = ev.prev.clone();
                }
            }
        }
        if let Some(o) = &obj {
            st.readable(key, o).map_err(|c| StoreError::Corrupt(vec![c]))?;
        }
        Ok(obj)
    }

    /// Every object under `prefix` with its key, and the revision they are current at: what an
    /// informer starts from before it watches from that revision.
    pub fn entries(&self, prefix: &str) -> (u64, Vec<(String, Object)>) {
        let st = self.read();
        let items = st.objects.range(prefix.to_string()..).take_while(|(k, _)| k.starts_with(prefix)).map(|(k, v)| (k.clone(), v.clone())).collect();
        (st.applied, items)
    }

    /// A page of the objects under `prefix`, now or at revision `at`, starting after key
    /// `start_after`, with at most `limit` items for which `keep` holds.
    pub fn list(
        &self,
        prefix: &str,
        at: Option<u64>,
        start_after: Option<&str>,
        limit: Option<usize>,
        keep: &dyn Fn(&Object) -> bool,
    ) -> Result<ListResult, StoreError> {
        let st = self.read();
        let rev = at.unwrap_or(st.applied);
        Self::check_rev(&st, rev)?;
        let lower = match start_after {
            Some(k) => Bound::Excluded(k.to_string()),
            None => Bound::Included(prefix.to_string()),
        };
        if rev == st.applied {
            let range = st.objects.range((lower, Bound::Unbounded)).take_while(|(k, _)| k.starts_with(prefix));
            return page(&st, rev, range, limit, keep);
        }
        // An older revision: the current range with newer events undone.
        let mut view: BTreeMap<String, Object> = st
            .objects
            .range((lower.clone(), Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for ev in st.history.iter().rev().take_while(|e| e.rev > rev) {
            let in_range = ev.key.starts_with(prefix)
                && match &lower {
                    Bound::Excluded(k) => ev.key.as_str() > k.as_str(),
                    _ => true,
                };
            if !in_range {
                continue;
            }
            match &ev.prev {
                Some(p) => view.insert(ev.key.clone(), p.clone()),
                None => view.remove(&ev.key),
            };
        }
        page(&st, rev, view.iter(), limit, keep)
    }

    /// Starts a watch on keys under `prefix` for events after revision `after`.
    pub fn watch(self: &Arc<Self>, prefix: &str, after: u64) -> Result<Watcher, StoreError> {
        self.watch_selecting(prefix, after, Selects::Everything)
    }

    /// Starts a watch on keys under `prefix` for events after revision `after`, offered only
    /// the events that `selects` may concern.
    pub fn watch_selecting(self: &Arc<Self>, prefix: &str, after: u64, selects: Selects) -> Result<Watcher, StoreError> {
        let st = self.read();
        if after < st.compacted {
            return Err(StoreError::Compacted { requested: after, compacted: st.compacted });
        }
        // Subscribing under the read lock: the backlog and the live stream neither overlap
        // nor leave a gap, since apply offers while holding the write lock.
        let (registration, rx, lagged) = self.hub().subscribe(prefix, selects);
        let newer = st.history.partition_point(|e| e.rev <= after);
        let backlog: VecDeque<Arc<Event>> =
            st.history.range(newer..).filter(|e| e.key.starts_with(prefix) && concerns(e, &registration.selects, &self.opts.indexes)).cloned().collect();
        Ok(Watcher { cache: self.clone(), registration, backlog, rx, lagged, seen: after })
    }

    pub(crate) fn unsubscribe(&self, registration: &Registration) {
        self.hub().unsubscribe(registration);
    }

    /// Replaces the whole state (snapshot install or restore).
    pub(crate) fn reset(&self, applied: u64, objects: BTreeMap<String, Object>, txns: Vec<(u64, u64, Outcome)>) {
        let mut st = self.state.write().unwrap_or_else(|e| e.into_inner());
        // Watchers of the old state get its events sent so far, then the end of their stream;
        // resuming, they find its revisions compacted (410) and list again.
        self.hub().close_all();
        self.observers.reset(&objects);
        let undecodable = objects.iter().filter_map(|(k, o)| Some((k.clone(), (o.rev, undecodable(&o.data)?)))).collect();
        self.bytes.store(objects.iter().map(|(k, o)| size(k, o)).sum(), Relaxed);
        let mut dirs = BTreeMap::new();
        for key in objects.keys() {
            *dirs.entry(dir(key).to_string()).or_default() += 1;
        }
        *st = State {
            applied,
            objects,
            history: VecDeque::new(),
            history_bytes: 0,
            compacted: applied,
            txns: Outcomes::from_entries(txns),
            undecodable,
            dirs,
        };
        self.applied.send_replace(applied);
    }

    /// A copy of the current objects, revision and remembered proposal outcomes, for a snapshot.
    pub(crate) fn snapshot(&self) -> Snapshot {
        let st = self.read();
        (st.applied, st.objects.clone(), st.txns.entries())
    }

    /// Drops events older than the retention window even when nothing is written.
    pub fn expire_history(&self) {
        self.write().expire();
    }

    pub fn object_count(&self) -> usize {
        self.read().objects.len()
    }

    /// The current objects whose bytes cannot be decoded: key, revision and why.
    pub(crate) fn undecodable(&self) -> Vec<(String, u64, String)> {
        self.read().undecodable.iter().map(|(k, (rev, why))| (k.clone(), *rev, why.clone())).collect()
    }

    /// How many current objects have keys under `prefix` (which ends with `/`), from the counts
    /// the apply path keeps by directory.
    pub fn count_under(&self, prefix: &str) -> u64 {
        let st = self.read();
        st.dirs.range::<str, _>((std::ops::Bound::Included(prefix), std::ops::Bound::Unbounded)).take_while(|(d, _)| d.starts_with(prefix)).map(|(_, n)| n).sum()
    }

    /// The current objects' keys and bytes, all told.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Relaxed)
    }
}

/// The page of `range` a list returns; an error naming the objects in it that cannot be decoded
/// (up to [`MAX_CORRUPT`]), if any.
fn page<'a>(
    st: &State,
    rev: u64,
    range: impl Iterator<Item = (&'a String, &'a Object)>,
    limit: Option<usize>,
    keep: &dyn Fn(&Object) -> bool,
) -> Result<ListResult, StoreError> {
    let limit = limit.filter(|l| *l > 0).unwrap_or(usize::MAX);
    let mut items = Vec::new();
    let mut last_key = None;
    let mut remaining = 0u64;
    let mut full = false;
    let mut corrupt = Vec::new();
    let check = !st.undecodable.is_empty();
    for (k, v) in range {
        if full {
            remaining += 1;
            continue;
        }
        if check {
            if let Err(c) = st.readable(k, v) {
                if corrupt.len() < MAX_CORRUPT + 1 {
                    corrupt.push(c);
                }
                continue;
            }
        }
        if keep(v) {
            items.push(v.clone());
            if items.len() == limit {
                full = true;
                last_key = Some(k.clone());
            }
        }
    }
    if !corrupt.is_empty() {
        return Err(StoreError::Corrupt(corrupt));
    }
    let continue_after = if remaining > 0 { last_key } else { None };
    Ok(ListResult { rev, items, continue_after, remaining })
}

/// Write access used by the apply loop: applies transactions, records events, and publishes
/// them to watchers when dropped.
pub(crate) struct Applier<'a> {
    cache: &'a Cache,
    state: RwLockWriteGuard<'a, State>,
    pending: Vec<Arc<Event>>,
    /// The traced transactions applied: each one's `traceparent` and where its events start and
    /// end in `pending` (their fan-out is a span of its trace).
    traced: Vec<(String, usize, usize)>,
}

impl Applier<'_> {
    /// Marks `index` applied without a change (blank or membership entries).
    pub(crate) fn advance(&mut self, index: u64) {
        self.state.applied = index;
    }

    /// Applies one transaction at log index `rev`: all conditions, then all actions.
    pub(crate) fn apply(&mut self, rev: u64, txn: &Txn) -> TxnResult {
        self.state.applied = rev;
        if let Some(first) = self.state.txns.get(txn.id) {
            return self.repeat(txn, first);
        }
        let start = self.pending.len();
        let result = self.apply_once(rev, txn);
        if let Some(parent) = txn.trace.as_ref().filter(|_| self.pending.len() > start) {
            self.traced.push((parent.clone(), start, self.pending.len()));
        }
        let outcome = match &result {
            TxnResult::Failed { op, .. } => Outcome::Failed(*op),
            _ => Outcome::Applied(rev),
        };
        self.state.txns.record(rev, txn.id, outcome);
        result
    }

    /// The answer to a proposal applied before: what it stored (from the current objects or the
    /// event window), or which condition failed and what the key holds now.
    fn repeat(&self, txn: &Txn, first: Outcome) -> TxnResult {
        match first {
            Outcome::Failed(op) => TxnResult::Failed { op, current: self.state.objects.get(&txn.ops[op].key).cloned() },
            Outcome::Applied(at) => {
                let objects = txn
                    .ops
                    .iter()
                    .map(|op| {
                        let now = self.state.objects.get(&op.key).filter(|o| o.rev == at).cloned();
                        now.or_else(|| self.state.history.iter().rev().find(|e| e.rev == at && e.key == op.key).map(|e| e.object.clone()))
                    })
                    .collect();
                TxnResult::Ok { rev: at, objects }
            }
        }
    }

    fn apply_once(&mut self, rev: u64, txn: &Txn) -> TxnResult {
        for (i, op) in txn.ops.iter().enumerate() {
            let current = self.state.objects.get(&op.key);
            let holds = match op.cond {
                Cond::Any => true,
                Cond::Absent => current.is_none(),
                Cond::Exists => current.is_some(),
                Cond::Rev(r) => current.is_some_and(|c| c.rev == r),
            };
            if !holds {
                return TxnResult::Failed { op: i, current: current.cloned() };
            }
        }
        let now = Instant::now();
        let mut objects = Vec::with_capacity(txn.ops.len());
        for op in &txn.ops {
            let prev = self.state.objects.get(&op.key).cloned();
            let (kind, object, undecodable) = match &op.action {
                Action::Check => {
                    objects.push(prev);
                    continue;
                }
                Action::Put(data) => {
                    let (obj, bad) = match stamp(data, rev) {
                        Ok(stamped) => (Object { rev, data: stamped }, None),
                        Err(why) => (Object { rev, data: data.clone() }, Some(why)),
                    };
                    match &bad {
                        None => self.state.undecodable.remove(&op.key),
                        Some(why) => self.state.undecodable.insert(op.key.clone(), (rev, why.clone())),
                    };
                    self.cache.observers.applied(&op.key, Some(&obj));
                    self.cache.bytes.fetch_add(size(&op.key, &obj), Relaxed);
                    self.cache.bytes.fetch_sub(prev.as_ref().map_or(0, |p| size(&op.key, p)), Relaxed);
                    if prev.is_none() {
                        self.state.count_in(&op.key);
                    }
                    self.state.objects.insert(op.key.clone(), obj.clone());
                    (if prev.is_some() { EventType::Modified } else { EventType::Added }, obj, bad)
                }
                Action::Delete => match self.state.objects.remove(&op.key) {
                    Some(old) => {
                        self.cache.bytes.fetch_sub(size(&op.key, &old), Relaxed);
                        self.state.count_out(&op.key);
                        self.state.undecodable.remove(&op.key);
                        self.cache.observers.applied(&op.key, None);
                        match stamp(&old.data, rev) {
                            Ok(stamped) => (EventType::Deleted, Object { rev, data: stamped }, None),
                            Err(why) => (EventType::Deleted, Object { rev, data: old.data }, Some(why)),
                        }
                    }
                    None => {
                        objects.push(None);
                        continue;
                    }
                },
            };
            objects.push(Some(object.clone()));
            let ev = Arc::new(Event { rev, key: op.key.clone(), kind, object, prev, undecodable, at: now, forms: Forms::default(), indexed: OnceLock::new() });
            self.state.history_bytes += ev.weight();
            self.state.history.push_back(ev.clone());
            self.pending.push(ev);
        }
        self.trim(now);
        TxnResult::Ok { rev, objects }
    }

    /// Drops events beyond the window; revisions before the newest dropped one become
    /// unreadable.
    fn trim(&mut self, now: Instant) {
        let opts = &self.cache.opts;
        while let Some(front) = self.state.history.front() {
            let too_many = self.state.history.len() > opts.max_events || self.state.history_bytes > opts.max_event_bytes;
            let too_old = now.duration_since(front.at) > opts.retention;
            if !(too_many || too_old) {
                break;
            }
            let dropped = self.state.history.pop_front().expect("front exists");
            self.state.history_bytes -= dropped.weight();
            self.state.compacted = self.state.compacted.max(dropped.rev);
        }
    }

    /// Compacts by age alone; called periodically so that an idle store also forgets.
    pub(crate) fn expire(&mut self) {
        self.trim(Instant::now());
    }
}

impl Drop for Applier<'_> {
    fn drop(&mut self) {
        let mut hub = self.cache.hub();
        let mut traced = self.traced.drain(..).peekable();
        // A traced transaction's events: their span, where they end, and to how many watchers
        // they were offered.
        let mut fanout: Option<(tracing::Span, usize, usize)> = None;
        let end_span = |(span, _, offered): (tracing::Span, usize, usize)| span.set_attribute("watch.receivers", offered as i64);
        for (i, ev) in self.pending.drain(..).enumerate() {
            if fanout.as_ref().is_some_and(|(_, end, _)| *end == i) {
                fanout.take().map(end_span);
            }
            if let Some((parent, _, end)) = traced.next_if(|(_, start, _)| *start == i) {
                fanout = Some((crate::trace::continued(&parent, "watch.fanout"), end, 0));
            }
            let offered = hub.send(&ev);
            if let Some((_, _, n)) = fanout.as_mut() {
                *n += offered;
            }
        }
        fanout.map(end_span);
        drop(hub);
        let applied = self.state.applied;
        self.cache.applied.send_if_modified(|a| {
            let changed = *a != applied;
            *a = applied;
            changed
        });
    }
}

/// Why a watch stream ended.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WatchError {
    /// The watcher fell too far behind and was dropped; it should resume from its last revision.
    #[error("watcher fell behind and was closed")]
    Lagged,
    /// The store closed, or a snapshot replaced its state (resuming from before it gets 410).
    #[error("store closed or its state replaced")]
    Closed,
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::types::Op;

    fn create(key: &str, id: u64) -> Txn {
        let op = Op { key: key.into(), cond: Cond::Absent, action: Action::Put(Bytes::from_static(b"{\"metadata\":{}}")) };
        Txn { ops: vec![op], id, trace: None }
    }

    #[test]
    fn a_repeated_proposal_answers_its_first_outcome_and_changes_nothing() {
        let cache = Arc::new(Cache::new(CacheOptions::default()));
        let first = cache.write().apply(1, &create("/k", 7));
        let TxnResult::Ok { rev: 1, objects } = &first else { panic!("{first:?}") };
        // The same proposal, committed again: the first answer, not a failed condition.
        let again = cache.write().apply(2, &create("/k", 7));
        assert_eq!(again, TxnResult::Ok { rev: 1, objects: objects.clone() });
        assert_eq!(cache.get("/k", None).unwrap().unwrap().rev, 1);
        assert_eq!(cache.watch("/", 0).unwrap().backlog.len(), 1, "one event, not two");
        // Another proposal with the same effect is applied (and fails) on its own.
        let other = cache.write().apply(3, &create("/k", 8));
        assert!(matches!(other, TxnResult::Failed { op: 0, current: Some(_) }), "{other:?}");
    }

    #[test]
    fn the_event_window_keeps_at_most_its_bytes_and_compacts_the_revisions_before() {
        let cache = Arc::new(Cache::new(CacheOptions::default()));
        cache.write().apply(1, &create("/k00", 1));
        let weight = cache.watch("/", 0).unwrap().backlog[0].weight();
        // Room for three events of that size, and a little more.
        let cache = Arc::new(Cache::new(CacheOptions { max_event_bytes: 3 * weight + weight / 2, ..Default::default() }));
        for i in 1..=10 {
            cache.write().apply(i, &create(&format!("/k{i:02}"), i));
        }
        // Revisions 8, 9 and 10 are kept: a watch can resume from 7, not from 6.
        let kept: Vec<u64> = cache.watch("/", 7).unwrap().backlog.iter().map(|e| e.rev).collect();
        assert_eq!(kept, [8, 9, 10]);
        assert!(matches!(cache.watch("/", 6), Err(StoreError::Compacted { requested: 6, compacted: 7 })));
        // The objects themselves stay.
        assert_eq!(cache.object_count(), 10);
    }

    #[test]
    fn objects_are_counted_by_prefix_through_creates_updates_deletes_and_installs() {
        let cache = Arc::new(Cache::new(CacheOptions::default()));
        let keys = ["/registry/pods/a/p1", "/registry/pods/a/p2", "/registry/pods/b/p1", "/registry/podtemplates/a/t", "/registry/namespaces/a"];
        for (i, key) in keys.iter().enumerate() {
            cache.write().apply(i as u64 + 1, &create(key, i as u64 + 1));
        }
        // An update is no new object.
        let update = Op { key: "/registry/pods/a/p1".into(), cond: Cond::Any, action: Action::Put(Bytes::from_static(b"{\"metadata\":{}}")) };
        cache.write().apply(6, &Txn { ops: vec![update], id: 6, trace: None });
        let count = |p: &str| cache.count_under(p);
        assert_eq!((count("/registry/pods/"), count("/registry/podtemplates/"), count("/registry/namespaces/"), count("/registry/")), (3, 1, 1, 5));
        let delete = Op { key: "/registry/pods/b/p1".into(), cond: Cond::Any, action: Action::Delete };
        cache.write().apply(7, &Txn { ops: vec![delete], id: 7, trace: None });
        assert_eq!(count("/registry/pods/"), 2);
        let objects = BTreeMap::from([("/registry/pods/c/p".to_string(), Object { rev: 10, data: Bytes::from_static(b"{}") })]);
        cache.reset(10, objects, Vec::new());
        assert_eq!((count("/registry/pods/"), count("/registry/namespaces/")), (1, 0));
    }

    #[tokio::test]
    async fn a_snapshot_install_ends_the_watchers_of_the_state_it_replaces() {
        let cache = Arc::new(Cache::new(CacheOptions::default()));
        let mut watcher = cache.watch("/", 0).unwrap();
        cache.write().apply(1, &create("/a", 1));
        // A snapshot taken elsewhere at revision 10: the events from 2 to 10 never reach here.
        let objects = BTreeMap::from([("/b".to_string(), Object { rev: 10, data: Bytes::from_static(b"{}") })]);
        cache.reset(10, objects, Vec::new());
        cache.write().apply(11, &create("/c", 2));
        // The event of the old state sent before the install, then the end: no bookmark, and no
        // event of the new state, which would skip the gap.
        assert_eq!(watcher.next().await.unwrap().rev, 1);
        assert_eq!(watcher.progress(), None);
        assert_eq!(watcher.next().await.unwrap_err(), WatchError::Closed);
        // Resuming from before the install: compacted (410); from after it: the new events.
        assert!(matches!(cache.watch("/", 1), Err(StoreError::Compacted { requested: 1, compacted: 10 })));
        let mut resumed = cache.watch("/", 10).unwrap();
        assert_eq!(resumed.next().await.unwrap().rev, 11);
    }

    fn put(key: &str, id: u64, json: &'static str) -> Txn {
        Txn { ops: vec![Op { key: key.into(), cond: Cond::Any, action: Action::Put(Bytes::from_static(json.as_bytes())) }], id, trace: None }
    }

    /// The revisions a watcher has been offered so far.
    fn offered(w: &mut Watcher) -> Vec<u64> {
        let mut revs: Vec<u64> = w.backlog.drain(..).map(|e| e.rev).collect();
        while let Ok(ev) = w.rx.try_recv() {
            revs.push(ev.rev);
        }
        revs
    }

    #[test]
    fn events_are_offered_only_to_the_watchers_their_name_or_indexed_field_concerns() {
        let indexes = vec![FieldIndex { prefix: "/registry/pods/".into(), field: "spec.nodeName".into() }];
        let cache = Arc::new(Cache::new(CacheOptions { indexes, ..Default::default() }));
        let node = |n: &str| Selects::Field { field: "spec.nodeName".into(), value: n.into() };
        let mut on_a = cache.watch_selecting("/registry/pods/", 0, node("a")).unwrap();
        let mut unscheduled = cache.watch_selecting("/registry/pods/", 0, node("")).unwrap();
        let mut by_name = cache.watch_selecting("/registry/pods/ns/", 0, Selects::Name("p2".into())).unwrap();
        let mut all = cache.watch("/registry/pods/", 0).unwrap();
        // A field no index covers (not under the prefix indexed) selects everything there.
        let mut unindexed = cache.watch_selecting("/registry/nodes/", 0, node("a")).unwrap();
        assert_eq!(cache.hub().watchers(), 5);

        cache.write().apply(1, &put("/registry/pods/ns/p1", 1, r#"{"spec":{}}"#));
        cache.write().apply(2, &put("/registry/pods/ns/p1", 2, r#"{"spec":{"nodeName":"a"}}"#));
        cache.write().apply(3, &put("/registry/pods/ns/p2", 3, r#"{"spec":{"nodeName":"b"}}"#));
        // Moved from a to b: a's watcher is offered it (a DELETED event for it).
        cache.write().apply(4, &put("/registry/pods/ns/p1", 4, r#"{"spec":{"nodeName":"b"}}"#));
        cache.write().apply(5, &put("/registry/nodes/a", 5, r#"{}"#));
        cache.write().apply(6, &put("/registry/pods/ns/p3", 6, "not json"));

        assert_eq!(offered(&mut on_a), [2, 4, 6], "undecodable objects go to every watcher of the field");
        assert_eq!(offered(&mut unscheduled), [1, 2, 6]);
        assert_eq!(offered(&mut by_name), [3]);
        assert_eq!(offered(&mut all), [1, 2, 3, 4, 6]);
        assert_eq!(offered(&mut unindexed), [5]);
        // A watch started later gets the same selection from the event window, without reading
        // the objects again: a restarted kubelet's watch is not handed every node's pods.
        assert_eq!(offered(&mut cache.watch_selecting("/registry/pods/ns/", 1, Selects::Name("p1".into())).unwrap()), [2, 4]);
        assert_eq!(offered(&mut cache.watch_selecting("/registry/pods/", 1, node("a")).unwrap()), [2, 4, 6]);
        assert_eq!(offered(&mut cache.watch_selecting("/registry/pods/", 2, node("b")).unwrap()), [3, 4, 6]);
        drop((on_a, unscheduled, by_name, all));
        assert_eq!(cache.hub().watchers(), 1, "dropped watchers leave the fan-out");
    }

    #[tokio::test]
    async fn a_watcher_that_falls_a_buffer_behind_is_closed_as_lagging_and_others_go_on() {
        let cache = Arc::new(Cache::new(CacheOptions { watch_buffer: 16, ..Default::default() }));
        let mut slow = cache.watch("/a/", 0).unwrap();
        let mut other = cache.watch("/b/", 0).unwrap();
        for i in 1..=17 {
            cache.write().apply(i, &create(&format!("/a/{i}"), i));
        }
        cache.write().apply(18, &create("/b/x", 18));
        for rev in 1..=16 {
            assert_eq!(slow.next().await.unwrap().rev, rev);
        }
        assert_eq!(slow.next().await.unwrap_err(), WatchError::Lagged);
        assert_eq!(other.next().await.unwrap().rev, 18, "a lagging watcher of other keys is no one else's concern");
        assert_eq!(cache.hub().watchers(), 1);
    }

    #[test]
    fn an_events_forms_are_made_once_and_shared() {
        let cache = Arc::new(Cache::new(CacheOptions::default()));
        let mut first = cache.watch("/", 0).unwrap();
        let mut second = cache.watch("/", 0).unwrap();
        cache.write().apply(1, &create("/k", 1));
        let (a, b) = (first.rx.try_recv().unwrap(), second.rx.try_recv().unwrap());
        assert_eq!(a.form("protobuf v1"), None);
        assert_eq!(a.keep_form("protobuf v1", Bytes::from_static(b"made first")), Bytes::from_static(b"made first"));
        // The other watcher's copy of the event holds it; one made meanwhile loses to it.
        assert_eq!(b.form("protobuf v1"), Some(Bytes::from_static(b"made first")));
        assert_eq!(b.keep_form("protobuf v1", Bytes::from_static(b"made again")), Bytes::from_static(b"made first"));
        assert_eq!(b.form("json metadata v1"), None, "forms are told apart by name");
    }
}
