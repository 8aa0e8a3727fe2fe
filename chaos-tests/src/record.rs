//! The recorder every workload task writes to: a clock that starts with the run, operation ids,
//! and the operations, watch records and lists in the order they completed.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use crate::history::{ListRecord, Micros, Op, WatchRecord};

pub struct Recorder {
    start: Instant,
    next_id: AtomicU64,
    pub ops: Mutex<Vec<Op>>,
    pub watches: Mutex<Vec<WatchRecord>>,
    pub lists: Mutex<Vec<ListRecord>>,
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder { start: Instant::now(), next_id: AtomicU64::new(1), ops: Default::default(), watches: Default::default(), lists: Default::default() }
    }
}

impl Recorder {
    /// Microseconds since the run started.
    pub fn now(&self) -> Micros {
        self.start.elapsed().as_micros() as Micros
    }

    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    pub fn op(&self, op: Op) {
        self.ops.lock().unwrap().push(op);
    }

    pub fn watch(&self, record: WatchRecord) {
        self.watches.lock().unwrap().push(record);
    }

    pub fn list(&self, list: ListRecord) {
        self.lists.lock().unwrap().push(list);
    }
}
