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

/// Watches until `stop` carries a revision this watcher has reached (or 20 s after it is set).
pub async fn run(rec: std::sync::Arc<Recorder>, target: Target, from: u64, mut stop: watch::Receiver<Option<u64>>) {
    let record = |kind: WatchKind| rec.watch(WatchRecord { watcher: target.name.clone(), at: rec.now(), kind });
    let mut last = from;
    let mut give_up: Option<tokio::time::Instant> = None;
    loop {
        if let Some(until) = *stop.borrow() {
            if last >= until || give_up.is_some_and(|t| tokio::time::Instant::now() > t) {
                return;
            }
            give_up.get_or_insert_with(|| tokio::time::Instant::now() + Duration::from_secs(20));
        }
        // kube-rs asks for bookmarks by default.
        let params = WatchParams::default().timeout(SESSION_SECONDS);
        let mut stream = match target.api.watch(&params, &last.to_string()).await {
            Ok(s) => s.boxed(),
            Err(e) => {
                record(WatchKind::Error { code: api_code(&e), message: e.to_string() });
                tokio::time::sleep(Duration::from_millis(300)).await;
                continue;
            }
        };
        record(WatchKind::Started { from: last });
        loop {
            let next = tokio::select! {
                next = stream.next() => next,
                _ = stop.changed() => continue,
            };
            match next {
                None => break,
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
