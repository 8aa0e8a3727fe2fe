//! Shared informers: the controllers' view of the objects they follow, as client-go's shared
//! informers are kube-controller-manager's. One feed per key prefix (a resource's, or every
//! key for the garbage collector) lists this replica's watch cache once, then follows its watch,
//! bringing its own store up to date before it passes each change on. However many controllers
//! follow Secrets, they share one stream and one store. A feed that falls behind the cache lists
//! again and tells its subscribers, which then sync in full.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard};
use std::time::Duration;

use futures::stream::{select_all, SelectAll};
use futures::StreamExt;
use raft_store::{Cache, Event, EventType, Object, WatchError};
use tokio::sync::{broadcast, watch};
use tokio_stream::wrappers::BroadcastStream;

/// Changes a subscriber may fall behind by before it must sync in full.
const BACKLOG: usize = 4096;

/// What a subscriber hears from a feed.
#[derive(Debug, Clone)]
pub enum Notice {
    /// One change, already in the feed's store.
    Changed(Arc<Event>),
    /// The store was listed again (or the subscriber fell behind): changes may have been missed.
    Relisted,
}

/// One prefix's store and stream.
struct Feed {
    prefix: String,
    store: RwLock<BTreeMap<String, Object>>,
    notices: broadcast::Sender<Notice>,
    /// Set once the first list is in the store.
    ready: watch::Sender<bool>,
}

/// Every feed on this replica; cheap to clone.
#[derive(Clone)]
pub struct Informers {
    cache: Arc<Cache>,
    feeds: Arc<Mutex<HashMap<String, Arc<Feed>>>>,
}

/// A handle on one feed's store.
#[derive(Clone)]
pub struct Informer {
    feed: Arc<Feed>,
}

/// The changes of one or more feeds, as one stream.
pub struct Subscription {
    streams: SelectAll<BroadcastStream<Notice>>,
}

impl Informers {
    pub fn new(cache: Arc<Cache>) -> Informers {
        Informers { cache, feeds: Default::default() }
    }

    /// The informer of the keys under `prefix`, started on first use; returns once its store
    /// holds a full list.
    pub async fn informer(&self, prefix: &str) -> Informer {
        let feed = {
            let mut feeds = self.feeds.lock().unwrap_or_else(|e| e.into_inner());
            feeds
                .entry(prefix.to_string())
                .or_insert_with(|| {
                    let feed = Arc::new(Feed {
                        prefix: prefix.to_string(),
                        store: Default::default(),
                        notices: broadcast::channel(BACKLOG).0,
                        ready: watch::channel(false).0,
                    });
                    tokio::spawn(follow(feed.clone(), self.cache.clone()));
                    feed
                })
                .clone()
        };
        let mut ready = feed.ready.subscribe();
        // The sender lives in the feed, which outlives this wait.
        let _ = ready.wait_for(|r| *r).await;
        Informer { feed }
    }

    /// The changes under each of `prefixes` from now on, as one stream.
    pub async fn subscribe(&self, prefixes: &[String]) -> Subscription {
        let mut streams = Vec::new();
        for prefix in prefixes {
            let informer = self.informer(prefix).await;
            streams.push(BroadcastStream::new(informer.feed.notices.subscribe()));
        }
        Subscription { streams: select_all(streams) }
    }

    /// The object at `key`, decoded, from the informer of `prefix` (the key's resource); `None`
    /// when absent or undecodable.
    pub async fn get_parsed(&self, prefix: &str, key: &str) -> Option<serde_json::Value> {
        self.informer(prefix).await.get(key).and_then(|o| machinery::stored::parse(&o).ok())
    }

    /// How many feeds run: one per prefix, whatever the number of subscribers.
    #[cfg(test)]
    fn feeds(&self) -> usize {
        self.feeds.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

impl Informer {
    fn store(&self) -> RwLockReadGuard<'_, BTreeMap<String, Object>> {
        self.feed.store.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Every object the feed holds.
    pub fn list(&self) -> Vec<Object> {
        self.store().values().cloned().collect()
    }

    /// The objects whose keys start with `prefix` (a namespace's, within a resource's feed).
    pub fn list_under(&self, prefix: &str) -> Vec<Object> {
        self.store().range(prefix.to_string()..).take_while(|(k, _)| k.starts_with(prefix)).map(|(_, v)| v.clone()).collect()
    }

    /// Whether the feed holds any object under `prefix`.
    pub fn holds_under(&self, prefix: &str) -> bool {
        self.store().range(prefix.to_string()..).next().is_some_and(|(k, _)| k.starts_with(prefix))
    }

    /// The object stored under `key`, as the feed last saw it.
    pub fn get(&self, key: &str) -> Option<Object> {
        self.store().get(key).cloned()
    }
}

impl Subscription {
    /// The next notice from any of the feeds; falling behind one is a [`Notice::Relisted`].
    /// `None` only once every feed is gone, which does not happen while the node runs.
    pub async fn next(&mut self) -> Option<Notice> {
        Some(match self.streams.next().await? {
            Ok(notice) => notice,
            Err(_lagged) => Notice::Relisted,
        })
    }
}

/// A feed's life: list, announce, follow the watch; list again whenever the watch ends.
async fn follow(feed: Arc<Feed>, cache: Arc<Cache>) {
    loop {
        let (rev, items) = cache.entries(&feed.prefix);
        *feed.store.write().unwrap_or_else(|e| e.into_inner()) = items.into_iter().collect();
        // Subscribers from before this list start over; the first list has none yet, since
        // subscribing waits for `ready`.
        let _ = feed.notices.send(Notice::Relisted);
        feed.ready.send_replace(true);
        let mut watcher = match cache.watch(&feed.prefix, rev) {
            Ok(w) => w,
            Err(e) => {
                tracing::debug!(prefix = %feed.prefix, error = %e, "informer lists again");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        loop {
            match watcher.next().await {
                Ok(event) => {
                    {
                        let mut store = feed.store.write().unwrap_or_else(|e| e.into_inner());
                        match event.kind {
                            EventType::Deleted => store.remove(&event.key),
                            EventType::Added | EventType::Modified => store.insert(event.key.clone(), event.object.clone()),
                        };
                    }
                    let _ = feed.notices.send(Notice::Changed(event));
                }
                Err(WatchError::Lagged) => break,
                // A snapshot replaced the state (or the store is closing): list again shortly.
                Err(WatchError::Closed) => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use raft_store::{Action, Cond, Op, Store, Txn};

    fn put(key: &str, name: &str) -> Txn {
        let data = Bytes::from(serde_json::to_vec(&serde_json::json!({"metadata": {"name": name}})).unwrap());
        Txn::new(vec![Op { key: key.into(), cond: Cond::Absent, action: Action::Put(data) }])
    }

    fn delete(key: &str) -> Txn {
        Txn::new(vec![Op { key: key.into(), cond: Cond::Any, action: Action::Delete }])
    }

    /// The next change a subscription hears, within a few seconds.
    async fn next_change(sub: &mut Subscription) -> Arc<Event> {
        match tokio::time::timeout(Duration::from_secs(5), sub.next()).await {
            Ok(Some(Notice::Changed(event))) => event,
            other => panic!("expected a change, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn controllers_following_one_resource_share_one_feed_and_its_store() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), Default::default()).await.unwrap();
        store.write(put("/registry/pods/default/a", "a")).await.unwrap();
        let informers = Informers::new(store.cache().clone());
        let pods = "/registry/pods/".to_string();
        let mut gc = informers.subscribe(std::slice::from_ref(&pods)).await;
        let mut pod_gc = informers.subscribe(&[pods.clone(), "/registry/namespaces/".into()]).await;
        assert_eq!(informers.feeds(), 2, "pods and namespaces: one feed each");
        let informer = informers.informer(&pods).await;
        assert_eq!(informer.list().len(), 1, "the first list is in the store before anyone subscribes");

        store.write(put("/registry/secrets/default/s", "s")).await.unwrap();
        store.write(put("/registry/pods/default/b", "b")).await.unwrap();
        for sub in [&mut gc, &mut pod_gc] {
            let event = next_change(sub).await;
            assert_eq!((event.key.as_str(), event.kind), ("/registry/pods/default/b", EventType::Added));
        }
        assert!(informer.get("/registry/pods/default/b").is_some(), "a change is in the store before it is heard");
        assert_eq!(informer.list_under("/registry/pods/default/").len(), 2);

        store.write(delete("/registry/pods/default/a")).await.unwrap();
        assert_eq!(next_change(&mut gc).await.kind, EventType::Deleted);
        assert!(informer.get("/registry/pods/default/a").is_none());
        assert_eq!(informers.feeds(), 2, "no feed was added by the later subscribers or reads");
    }
}
