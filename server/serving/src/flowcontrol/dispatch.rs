//! Queuing and dispatch, per priority level and on each replica: a Limited level runs at most its
//! concurrency limit of requests at once (one seat each); the rest wait in the level's queues,
//! a flow (schema and distinguisher) shuffle-sharded onto a hand of queues and put in the
//! shortest, and freed seats go to the queues in turn. A `Reject` level, a full queue, or a wait
//! past the limit is refused (429). Exempt levels never wait.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use tokio::sync::oneshot;

/// How a level limits its requests, from its PriorityLevelConfiguration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LevelConfig {
    pub exempt: bool,
    /// Seats (requests at once); unused when exempt.
    pub limit: usize,
    /// `None` for `limitResponse.type: Reject`.
    pub queuing: Option<Queuing>,
}

/// `limitResponse.queuing`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Queuing {
    pub queues: usize,
    pub hand_size: usize,
    pub queue_length_limit: usize,
}

/// What a waiting or executing request is, for the debug dumps.
#[derive(Debug, Clone, Default)]
pub struct RequestInfo {
    pub flow_schema: std::sync::Arc<str>,
    pub distinguisher: String,
    pub user: String,
    pub verb: String,
    pub path: String,
    pub namespace: String,
    pub name: String,
    pub api_version: String,
    pub resource: String,
    pub subresource: String,
}

/// Why a request was refused, as `apiserver_flowcontrol_rejected_requests_total` labels it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    QueueFull,
    ConcurrencyLimit,
    TimedOut,
}

impl Rejection {
    pub fn reason(self) -> &'static str {
        match self {
            Rejection::QueueFull => "queue-full",
            Rejection::ConcurrencyLimit => "concurrency-limit",
            Rejection::TimedOut => "time-out",
        }
    }
}

struct Entry {
    id: u64,
    info: RequestInfo,
    arrived: SystemTime,
    started: Option<SystemTime>,
}

struct Waiter {
    entry: Entry,
    go: oneshot::Sender<()>,
}

#[derive(Default)]
struct Level {
    config: Option<LevelConfig>,
    queues: Vec<VecDeque<Waiter>>,
    /// Requests each queue has had dispatched: its progress in the round of turns.
    served: Vec<u64>,
    /// Executing requests by id, with the queue they waited in (none if they never queued).
    executing: BTreeMap<u64, (Option<usize>, Entry)>,
    /// The queue the next freed seat is offered to first.
    next_queue: usize,
    /// The schemas whose requests came here, so that their gauges stay (at 0) once idle.
    schemas: BTreeSet<String>,
    dispatched: u64,
    rejected: u64,
    timed_out: u64,
    cancelled: u64,
}

impl Level {
    fn waiting(&self) -> usize {
        self.queues.iter().map(VecDeque::len).sum()
    }

    /// Adopts a (changed) configuration; waiters of queues that no longer exist move over.
    fn configure(&mut self, config: LevelConfig) {
        if self.config == Some(config) {
            return;
        }
        let count = config.queuing.map_or(0, |q| q.queues.max(1));
        let old = std::mem::take(&mut self.queues);
        self.queues = (0..count).map(|_| VecDeque::new()).collect();
        self.served = vec![0; count];
        for (i, waiter) in old.into_iter().enumerate().flat_map(|(i, q)| q.into_iter().map(move |w| (i, w))) {
            match self.queues.get_mut(i % count.max(1)) {
                Some(q) => q.push_back(waiter),
                None => drop(waiter), // a Reject level: the waiter sees its sender gone
            }
        }
        self.next_queue = 0;
        self.config = Some(config);
    }

    fn has_room(&self) -> bool {
        let config = self.config.expect("configured");
        config.exempt || self.executing.len() < config.limit
    }

    /// Offers free seats to the queues in turn.
    fn dispatch(&mut self) {
        while self.has_room() && self.waiting() > 0 {
            let n = self.queues.len();
            let Some(q) = (0..n).map(|i| (self.next_queue + i) % n).find(|&q| !self.queues[q].is_empty()) else { return };
            self.next_queue = (q + 1) % n;
            let mut waiter = self.queues[q].pop_front().expect("non-empty");
            waiter.entry.started = Some(SystemTime::now());
            if waiter.go.send(()).is_ok() {
                self.dispatched += 1;
                self.served[q] += 1;
                self.executing.insert(waiter.entry.id, (Some(q), waiter.entry));
            } else {
                self.cancelled += 1;
            }
        }
    }

    /// The queue a flow waits in: the shortest (waiting plus executing) of its hand.
    fn choose_queue(&self, flow: u64, hand_size: usize) -> usize {
        let busy = |q: usize| self.queues[q].len() + self.executing.values().filter(|(eq, _)| *eq == Some(q)).count();
        deal(flow, self.queues.len(), hand_size).into_iter().min_by_key(|&q| (busy(q), q)).unwrap_or(0)
    }
}

/// `hand_size` distinct queues out of `deck`, drawn by the flow's hash, so that two flows share
/// all of them only rarely (shuffle sharding).
pub fn deal(mut hash: u64, deck: usize, hand_size: usize) -> Vec<usize> {
    let mut cards: Vec<usize> = (0..deck).collect();
    let mut hand = Vec::with_capacity(hand_size.min(deck));
    for _ in 0..hand_size.min(deck) {
        let n = cards.len() as u64;
        hand.push(cards.remove((hash % n) as usize));
        hash /= n;
    }
    hand
}

/// The flow's hash: its schema and distinguisher.
fn flow_hash(schema: &str, distinguisher: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (schema, distinguisher).hash(&mut h);
    h.finish()
}

/// Every level's queues on this replica.
#[derive(Default)]
pub struct Dispatcher {
    levels: Mutex<BTreeMap<String, Level>>,
    next_id: AtomicU64,
}

/// A seat held while the request runs; freed on drop.
pub struct Permit {
    dispatcher: Arc<Dispatcher>,
    level: String,
    id: u64,
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut levels = self.dispatcher.levels.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(level) = levels.get_mut(&self.level) {
            level.executing.remove(&self.id);
            level.dispatch();
        }
    }
}

/// A request waiting in a queue, holding the permit it becomes. Dropped before its turn (the
/// client went away), it leaves the queue; a seat granted meanwhile is freed with the permit.
struct Waiting {
    permit: Option<Permit>,
}

impl Waiting {
    /// Takes the request out of its queue; true when it was still there.
    fn leave(&self, levels: &mut BTreeMap<String, Level>) -> bool {
        let Some(p) = &self.permit else { return false };
        let Some(level) = levels.get_mut(&p.level) else { return false };
        for q in &mut level.queues {
            if let Some(i) = q.iter().position(|w| w.entry.id == p.id) {
                q.remove(i);
                return true;
            }
        }
        false
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let Some(p) = &self.permit else { return };
        let mut levels = p.dispatcher.levels.lock().unwrap_or_else(|e| e.into_inner());
        if self.leave(&mut levels) {
            if let Some(level) = levels.get_mut(&p.level) {
                level.cancelled += 1;
            }
        }
    }
}

impl Dispatcher {
    /// Waits for a seat at `level`; `Err` when the request is refused.
    pub async fn admit(self: &Arc<Self>, level_name: &str, config: LevelConfig, info: RequestInfo, wait_limit: Duration) -> Result<Permit, Rejection> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let now = SystemTime::now();
        let permit = Permit { dispatcher: self.clone(), level: level_name.to_string(), id };
        let go = {
            let mut levels = self.levels.lock().unwrap_or_else(|e| e.into_inner());
            let level = levels.entry(level_name.to_string()).or_default();
            level.configure(config);
            if !level.schemas.contains(&*info.flow_schema) {
                level.schemas.insert(info.flow_schema.to_string());
            }
            if level.has_room() && level.waiting() == 0 {
                level.dispatched += 1;
                level.executing.insert(id, (None, Entry { id, info, arrived: now, started: Some(now) }));
                drop(levels);
                return Ok(permit);
            }
            let Some(queuing) = config.queuing else {
                level.rejected += 1;
                return Err(Rejection::ConcurrencyLimit);
            };
            let q = level.choose_queue(flow_hash(&info.flow_schema, &info.distinguisher), queuing.hand_size);
            if level.queues[q].len() >= queuing.queue_length_limit {
                level.rejected += 1;
                return Err(Rejection::QueueFull);
            }
            let (go, wait) = oneshot::channel();
            level.queues[q].push_back(Waiter { entry: Entry { id, info, arrived: now, started: None }, go });
            wait
        };
        let mut waiting = Waiting { permit: Some(permit) };
        if let Ok(Ok(())) = tokio::time::timeout(wait_limit, go).await {
            return Ok(waiting.permit.take().expect("held until now"));
        }
        // The wait ran out (or the level stopped queuing): refused, unless the seat came just now.
        let mut levels = self.levels.lock().unwrap_or_else(|e| e.into_inner());
        let was_waiting = waiting.leave(&mut levels);
        let granted = levels.get(level_name).is_some_and(|l| l.executing.contains_key(&id));
        if !was_waiting && granted {
            drop(levels);
            return Ok(waiting.permit.take().expect("held until now"));
        }
        if let Some(level) = levels.get_mut(level_name) {
            level.timed_out += 1;
            level.rejected += 1;
        }
        drop(levels);
        Err(Rejection::TimedOut)
    }

    /// Requests waiting and executing per (level, schema), for the metrics.
    pub fn current(&self) -> BTreeMap<(String, String), (usize, usize)> {
        let levels = self.levels.lock().unwrap_or_else(|e| e.into_inner());
        let mut out: BTreeMap<(String, String), (usize, usize)> = BTreeMap::new();
        for (name, level) in levels.iter() {
            for schema in &level.schemas {
                out.insert((name.clone(), schema.clone()), (0, 0));
            }
            for w in level.queues.iter().flatten() {
                out.entry((name.clone(), w.entry.info.flow_schema.to_string())).or_default().0 += 1;
            }
            for (_, e) in level.executing.values() {
                out.entry((name.clone(), e.info.flow_schema.to_string())).or_default().1 += 1;
            }
        }
        out
    }

    /// `/debug/api_priority_and_fairness/dump_priority_levels`.
    pub fn dump_priority_levels(&self) -> String {
        let levels = self.levels.lock().unwrap_or_else(|e| e.into_inner());
        let mut rows = vec![PRIORITY_LEVEL_COLUMNS.iter().map(|c| c.to_string()).collect::<Vec<_>>()];
        for (name, l) in levels.iter() {
            let active = l.queues.iter().filter(|q| !q.is_empty()).count();
            let idle = l.waiting() == 0 && l.executing.is_empty();
            rows.push(vec![
                name.clone(),
                active.to_string(),
                idle.to_string(),
                "false".into(),
                l.waiting().to_string(),
                l.executing.len().to_string(),
                l.dispatched.to_string(),
                l.rejected.to_string(),
                l.timed_out.to_string(),
                l.cancelled.to_string(),
            ]);
        }
        table(&rows)
    }

    /// `/debug/api_priority_and_fairness/dump_queues`.
    pub fn dump_queues(&self) -> String {
        let levels = self.levels.lock().unwrap_or_else(|e| e.into_inner());
        let mut rows = vec![QUEUE_COLUMNS.iter().map(|c| c.to_string()).collect::<Vec<_>>()];
        for (name, l) in levels.iter() {
            for (i, q) in l.queues.iter().enumerate() {
                let executing = l.executing.values().filter(|(eq, _)| *eq == Some(i)).count();
                rows.push(vec![
                    name.clone(),
                    i.to_string(),
                    q.len().to_string(),
                    executing.to_string(),
                    executing.to_string(),
                    format!("{}.00000000ss", l.served[i]),
                    q.len().to_string(),
                    q.len().to_string(),
                    format!("{}.00000000ss", q.len()),
                ]);
            }
        }
        table(&rows)
    }

    /// `/debug/api_priority_and_fairness/dump_requests` (`details`: `?includeRequestDetails=1`).
    pub fn dump_requests(&self, details: bool) -> String {
        let levels = self.levels.lock().unwrap_or_else(|e| e.into_inner());
        let mut header: Vec<String> = REQUEST_COLUMNS.iter().map(|c| c.to_string()).collect();
        if details {
            header.extend(REQUEST_DETAIL_COLUMNS.iter().map(|c| c.to_string()));
        }
        let mut rows = vec![header];
        let time = |t: Option<SystemTime>| t.map(|t| chrono::DateTime::<chrono::Utc>::from(t).to_rfc3339_opts(chrono::SecondsFormat::Nanos, true)).unwrap_or_default();
        for (name, l) in levels.iter() {
            let mut row = |queue: i64, index: i64, e: &Entry| {
                let i = &e.info;
                let mut r = vec![
                    name.clone(),
                    i.flow_schema.to_string(),
                    queue.to_string(),
                    index.to_string(),
                    i.distinguisher.clone(),
                    time(Some(e.arrived)),
                    "1".into(),
                    "0".into(),
                    "0s".into(),
                    time(e.started),
                ];
                if details {
                    r.extend([&i.user, &i.verb, &i.path, &i.namespace, &i.name, &i.api_version, &i.resource, &i.subresource].map(String::clone));
                }
                rows.push(r);
            };
            for (qi, q) in l.queues.iter().enumerate() {
                for (wi, w) in q.iter().enumerate() {
                    row(qi as i64, wi as i64, &w.entry);
                }
            }
            for (q, e) in l.executing.values() {
                row(q.map_or(-1, |q| q as i64), -1, e);
            }
        }
        table(&rows)
    }
}

const PRIORITY_LEVEL_COLUMNS: &[&str] = &[
    "PriorityLevelName",
    "ActiveQueues",
    "IsIdle",
    "IsQuiescing",
    "WaitingRequests",
    "ExecutingRequests",
    "DispatchedRequests",
    "RejectedRequests",
    "TimedoutRequests",
    "CancelledRequests",
];
const QUEUE_COLUMNS: &[&str] =
    &["PriorityLevelName", "Index", "PendingRequests", "ExecutingRequests", "SeatsInUse", "NextDispatchR", "InitialSeatsSum", "MaxSeatsSum", "TotalWorkSum"];
const REQUEST_COLUMNS: &[&str] = &[
    "PriorityLevelName",
    "FlowSchemaName",
    "QueueIndex",
    "RequestIndexInQueue",
    "FlowDistingsher",
    "ArriveTime",
    "InitialSeats",
    "FinalSeats",
    "AdditionalLatency",
    "StartTime",
];
const REQUEST_DETAIL_COLUMNS: &[&str] = &["UserName", "Verb", "APIPath", "Namespace", "Name", "APIVersion", "Resource", "SubResource"];

/// Rows as kube-apiserver's dumps print them: cells joined by `,` and padded into columns.
fn table(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let width: Vec<usize> = (0..columns).map(|c| rows.iter().filter_map(|r| r.get(c)).map(|s| s.len() + 1).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for r in rows {
        for (c, cell) in r.iter().enumerate() {
            if c + 1 == r.len() {
                out.push_str(cell);
            } else {
                out.push_str(&format!("{:<w$} ", format!("{cell},"), w = width[c]));
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests;
