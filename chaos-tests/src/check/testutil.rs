//! Builders for the checkers' tests: an operation, a watch record or a list in one short call.

use crate::history::{Call, EventType, Item, ListRecord, Op, Ret, WatchKind, WatchRecord};

pub fn op(id: u64, call: Call, ret: Ret, invoke: u64, complete: u64) -> Op {
    Op { id, client: id as u32, target: "lb".into(), call, ret, invoke, complete, rv: None }
}

pub fn read(key: &str) -> Call {
    Call::Read { key: key.into() }
}

pub fn create(key: &str, value: &str) -> Call {
    Call::Create { key: key.into(), value: value.into() }
}

pub fn cas(key: &str, expect: &str, value: &str) -> Call {
    Call::Cas { key: key.into(), expect: expect.into(), value: value.into() }
}

pub fn delete(key: &str) -> Call {
    Call::Delete { key: key.into() }
}

pub fn got(value: Option<&str>) -> Ret {
    Ret::Read { value: value.map(Into::into) }
}

pub fn unknown() -> Ret {
    Ret::Unknown { error: "timeout".into() }
}

pub fn item(key: &str, value: Option<&str>, rv: u64) -> Item {
    Item { key: key.into(), value: value.map(Into::into), rv }
}

fn record(watcher: &str, kind: WatchKind) -> WatchRecord {
    WatchRecord { watcher: watcher.into(), at: 0, kind }
}

pub fn started(watcher: &str, from: u64) -> WatchRecord {
    record(watcher, WatchKind::Started { from })
}

pub fn event(watcher: &str, event: EventType, key: &str, value: Option<&str>, rv: u64) -> WatchRecord {
    record(watcher, WatchKind::Event { event, item: item(key, value, rv) })
}

pub fn added(watcher: &str, key: &str, value: &str, rv: u64) -> WatchRecord {
    event(watcher, EventType::Added, key, Some(value), rv)
}

pub fn modified(watcher: &str, key: &str, value: &str, rv: u64) -> WatchRecord {
    event(watcher, EventType::Modified, key, Some(value), rv)
}

pub fn deleted(watcher: &str, key: &str, value: &str, rv: u64) -> WatchRecord {
    event(watcher, EventType::Deleted, key, Some(value), rv)
}

pub fn bookmark(watcher: &str, rv: u64) -> WatchRecord {
    record(watcher, WatchKind::Bookmark { rv })
}

pub fn error(watcher: &str, code: Option<u16>) -> WatchRecord {
    record(watcher, WatchKind::Error { code, message: "stream ended".into() })
}

/// A relist at `rv` with `(key, value)` items.
pub fn relist(watcher: &str, rv: u64, items: &[(&str, &str)]) -> WatchRecord {
    record(watcher, WatchKind::Relist { rv, items: items.iter().map(|(k, v)| item(k, Some(v), rv)).collect() })
}

/// A list at `rv` with `(key, value)` items.
pub fn list(rv: u64, items: &[(&str, &str)]) -> ListRecord {
    ListRecord {
        target: "node-0".into(),
        at: 0,
        rv,
        exact: true,
        pages: 1,
        items: items.iter().map(|(k, v)| item(k, Some(v), rv)).collect(),
    }
}
