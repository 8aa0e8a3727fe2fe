//! Watchers: one per replica, each watching the workload namespace from the revision the run
//! started at, resuming from its last seen revision after any error (or with a fresh list after
//! 410 Gone), recording every session start, event, bookmark, relist and error.

use std::time::Duration;

use futures::StreamExt;
use kube::api::{ListParams, WatchEvent, WatchParams};
use tokio::sync::watch;

use super::{item, rv_of, Target};
use crate::history::{EventType, WatchKind, WatchRecord};
use crate::record::Recorder;

/// Server-side length of one watch session: sessions end and resume regularly.
const SESSION_SECONDS: u32 = 15;

/// Watches until `stop` carries a revision: then one last short session delivers whatever
/// is left up to it, and the watcher returns (at once if it has seen that revision).
pub async fn run(rec: std::sync::Arc<Recorder>, target: Target, from: u64, mut stop: watch::Receiver<Option<u64>>) {
    let record = |kind: WatchKind| rec.watch(WatchRecord { watcher: target.name.clone(), at: rec.now(), kind });
    let mut last = from;
    let mut drained = false;
    loop {
        let stopping = *stop.borrow();
        if stopping.is_some_and(|until| last >= until || drained) {
            return;
        }
        // kube-rs asks for bookmarks by default.
        let params = WatchParams::default().timeout(if stopping.is_some() { 2 } else { SESSION_SECONDS });
        let mut stream = match target.api.watch(&params, &last.to_string()).await {
            Ok(s) => s.boxed(),
            Err(e) => {
                let code = api_code(&e);
                record(WatchKind::Error { code, message: e.to_string() });
                if code == Some(410) {
                    last = relist(&rec, &target, last).await;
                } else {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                }
                continue;
            }
        };
        record(WatchKind::Started { from: last });
        loop {
            let next = tokio::select! {
                next = stream.next() => next,
                // Stopping: end this session and drain in a short one.
                _ = stop.changed(), if stopping.is_none() => break,
            };
            match next {
                None => {
                    drained = stopping.is_some();
                    break;
                }
                Some(Ok(WatchEvent::Added(cm))) => last = event(&record, EventType::Added, &cm).unwrap_or(last),
                Some(Ok(WatchEvent::Modified(cm))) => last = event(&record, EventType::Modified, &cm).unwrap_or(last),
                Some(Ok(WatchEvent::Deleted(cm))) => last = event(&record, EventType::Deleted, &cm).unwrap_or(last),
                Some(Ok(WatchEvent::Bookmark(b))) => {
                    if let Ok(rv) = b.metadata.resource_version.parse() {
                        record(WatchKind::Bookmark { rv });
                        last = rv;
                    }
                }
                Some(Ok(WatchEvent::Error(status))) => {
                    record(WatchKind::Error { code: Some(status.code), message: status.message.clone() });
                    if status.code == 410 {
                        last = relist(&rec, &target, last).await;
                    }
                    break;
                }
                Some(Err(e)) => {
                    record(WatchKind::Error { code: None, message: e.to_string() });
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    break;
                }
            }
            if stop.borrow().is_some_and(|until| last >= until) {
                return;
            }
        }
    }
}

fn api_code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

fn event(record: &impl Fn(WatchKind), event: EventType, cm: &k8s_openapi::api::core::v1::ConfigMap) -> Option<u64> {
    record(WatchKind::Event { event, item: item(cm) });
    rv_of(&cm.metadata)
}

/// After 410: lists the namespace (retrying until a replica answers) and records it.
async fn relist(rec: &Recorder, target: &Target, last: u64) -> u64 {
    for _ in 0..50 {
        match target.api.list(&ListParams::default()).await {
            Ok(list) => {
                let rv = list.metadata.resource_version.as_deref().and_then(|v| v.parse().ok()).unwrap_or(last);
                let items = list.items.iter().map(item).collect();
                rec.watch(WatchRecord { watcher: target.name.clone(), at: rec.now(), kind: WatchKind::Relist { rv, items } });
                return rv;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(300)).await,
        }
    }
    last
}
