//! List, then watch from the list's revision, as client-go's reflector does: bookmarks move the
//! revision on, 410 Gone lists again, any other end of the stream watches again from the last
//! revision; until `stop`. Every simulated client that follows a set of objects runs one.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use kube::api::{ListParams, WatchEvent, WatchParams};
use kube::Api;
use tokio::sync::watch;

use super::sli::{Call, Sli};

/// How an object came to the follower.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    Listed,
    Added,
    Modified,
    Deleted,
}

/// Follows the objects of `api` that `fields` selects (all, when empty), timing each LIST as
/// `list`, and hands each object to `seen`.
pub async fn reflect<K>(api: Api<K>, fields: &str, list: Call, sli: &Sli, mut stop: watch::Receiver<bool>, mut seen: impl FnMut(Seen, K))
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    while !*stop.borrow() {
        let Ok(listed) = sli.time(list, api.list(&ListParams::default().fields(fields))).await else {
            tokio::time::sleep(Duration::from_secs(1)).await;
            continue;
        };
        let mut rv = listed.metadata.resource_version.clone().unwrap_or_default();
        for object in listed.items {
            seen(Seen::Listed, object);
        }
        loop {
            let Ok(stream) = api.watch(&WatchParams::default().fields(fields).timeout(290), &rv).await else { break };
            let mut stream = stream.boxed();
            let gone = loop {
                let event = tokio::select! {
                    event = stream.try_next() => event,
                    _ = stop.changed() => return,
                };
                let (how, object) = match event {
                    Ok(Some(WatchEvent::Added(o))) => (Seen::Added, o),
                    Ok(Some(WatchEvent::Modified(o))) => (Seen::Modified, o),
                    Ok(Some(WatchEvent::Deleted(o))) => (Seen::Deleted, o),
                    Ok(Some(WatchEvent::Bookmark(b))) => {
                        rv = b.metadata.resource_version;
                        continue;
                    }
                    Ok(Some(WatchEvent::Error(e))) => break e.code == 410,
                    Ok(None) | Err(_) => break false,
                };
                rv = object.meta().resource_version.clone().unwrap_or(rv);
                seen(how, object);
            };
            if gone {
                break;
            }
        }
    }
}
