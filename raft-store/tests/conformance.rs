//! Storage conformance: get, list with paging at a revision, guaranteed update, watch from a
//! revision, compaction and restart, run against a real single-node store on disk.

use std::time::Duration;

use bytes::Bytes;
use raft_store::{Action, CacheOptions, Cond, EventType, Op, Store, StoreError, StoreOptions, Txn, TxnResult};
use serde_json::json;

fn put(key: &str, cond: Cond, value: serde_json::Value) -> Txn {
    let data = Bytes::from(serde_json::to_vec(&value).unwrap());
    Txn::new(vec![Op { key: key.into(), cond, action: Action::Put(data) }])
}

fn del(key: &str, cond: Cond) -> Txn {
    Txn::new(vec![Op { key: key.into(), cond, action: Action::Delete }])
}

async fn open(dir: &std::path::Path, retention: Duration) -> Store {
    let opts = StoreOptions {
        cache: CacheOptions { retention, ..Default::default() },
        ..Default::default()
    };
    Store::open(dir, opts).await.expect("open store")
}

fn ok_rev(r: TxnResult) -> u64 {
    match r {
        TxnResult::Ok { rev, .. } => rev,
        other => panic!("expected Ok, got {other:?}"),
    }
}

fn rv_of(data: &[u8]) -> String {
    let v: serde_json::Value = serde_json::from_slice(data).unwrap();
    v["metadata"]["resourceVersion"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn get_create_update_conflict_delete() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), Duration::from_secs(300)).await;
    let r1 = ok_rev(store.write(put("/a/x", Cond::Absent, json!({"metadata": {"name": "x"}}))).await.unwrap());
    let got = store.cache().get("/a/x", None).unwrap().unwrap();
    assert_eq!(got.rev, r1);
    assert_eq!(rv_of(&got.data), r1.to_string());

    // Create again: the Absent condition fails and reports the current object.
    match store.write(put("/a/x", Cond::Absent, json!({}))).await.unwrap() {
        TxnResult::Failed { op: 0, current: Some(c) } => assert_eq!(c.rev, r1),
        other => panic!("{other:?}"),
    }
    // Guaranteed update: the right revision wins, a stale one fails.
    let r2 = ok_rev(store.write(put("/a/x", Cond::Rev(r1), json!({"v": 2}))).await.unwrap());
    assert!(r2 > r1);
    assert!(matches!(store.write(put("/a/x", Cond::Rev(r1), json!({"v": 3}))).await.unwrap(), TxnResult::Failed { .. }));
    // Reads at a past revision see the old value.
    let old = store.cache().get("/a/x", Some(r1)).unwrap().unwrap();
    assert_eq!(old.rev, r1);
    let r3 = ok_rev(store.write(del("/a/x", Cond::Rev(r2))).await.unwrap());
    assert!(store.cache().get("/a/x", None).unwrap().is_none());
    assert!(store.cache().get("/a/x", Some(r2)).unwrap().is_some());
    assert!(store.cache().get("/a/x", Some(r3)).unwrap().is_none());
    store.shutdown().await;
}

#[tokio::test]
async fn paged_list_is_a_snapshot_at_its_revision() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), Duration::from_secs(300)).await;
    for i in 0..10 {
        store.write(put(&format!("/cm/ns/k{i:02}"), Cond::Absent, json!({"i": i}))).await.unwrap();
    }
    store.write(put("/other/k", Cond::Absent, json!({}))).await.unwrap();
    let first = store.cache().list("/cm/ns/", None, None, Some(4), &|_| true).unwrap();
    assert_eq!(first.items.len(), 4);
    assert_eq!(first.remaining, 6);
    let after = first.continue_after.clone().unwrap();
    // A write between pages is not visible in later pages at the same revision.
    store.write(put("/cm/ns/k05", Cond::Any, json!({"changed": true}))).await.unwrap();
    store.write(put("/cm/ns/k99", Cond::Absent, json!({}))).await.unwrap();
    let mut all = first.items.clone();
    let mut cursor = Some(after);
    while let Some(c) = cursor {
        let page = store.cache().list("/cm/ns/", Some(first.rev), Some(&c), Some(4), &|_| true).unwrap();
        assert_eq!(page.rev, first.rev);
        all.extend(page.items);
        cursor = page.continue_after;
    }
    assert_eq!(all.len(), 10);
    assert!(all.iter().all(|o| o.rev <= first.rev));
    // A filter keeps scanning until the page is full.
    let odd = store.cache().list("/cm/ns/", None, None, Some(2), &|o| o.data.ends_with(b"}")).unwrap();
    assert_eq!(odd.items.len(), 2);
    // Too new a revision is refused, not guessed.
    let too_new = store.cache().list("/cm/ns/", Some(first.rev + 1000), None, None, &|_| true);
    assert!(matches!(too_new, Err(StoreError::TooLargeResourceVersion { .. })));
    store.shutdown().await;
}

#[tokio::test]
async fn watch_from_a_revision_replays_then_follows() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), Duration::from_secs(300)).await;
    let r1 = ok_rev(store.write(put("/w/a", Cond::Absent, json!({}))).await.unwrap());
    let r2 = ok_rev(store.write(put("/w/a", Cond::Any, json!({"x": 1}))).await.unwrap());
    store.write(put("/elsewhere", Cond::Absent, json!({}))).await.unwrap();
    let mut w = store.cache().watch("/w/", r1).unwrap();
    let e = w.next().await.unwrap();
    assert_eq!((e.rev, e.kind), (r2, EventType::Modified));
    let r4 = ok_rev(store.write(del("/w/a", Cond::Any)).await.unwrap());
    let e = tokio::time::timeout(Duration::from_secs(5), w.next()).await.unwrap().unwrap();
    assert_eq!((e.rev, e.kind), (r4, EventType::Deleted));
    // The deleted object carries the deletion revision.
    assert_eq!(rv_of(&e.object.data), r4.to_string());
    assert_eq!(w.progress(), Some(store.cache().applied()));
    store.shutdown().await;
}

#[tokio::test]
async fn history_is_compacted_after_retention() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), Duration::from_millis(300)).await;
    let r1 = ok_rev(store.write(put("/c/a", Cond::Absent, json!({}))).await.unwrap());
    let r2 = ok_rev(store.write(put("/c/a", Cond::Any, json!({"v": 2}))).await.unwrap());
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(matches!(store.cache().get("/c/a", Some(r1)), Err(StoreError::Compacted { .. })));
    assert!(matches!(store.cache().watch("/c/", r1), Err(StoreError::Compacted { .. })));
    // The newest state stays readable.
    assert!(store.cache().get("/c/a", Some(r2)).unwrap().is_some());
    store.shutdown().await;
}

/// Writes 50 objects, restarts the store and checks they are all there and revisions go on;
/// answers the data directory. The restarted leader leads again only after an election, in a
/// later term (it does not resume its old leadership, whose committed id may be behind).
async fn restart_keeps_every_acknowledged_write_with(opts: impl Fn() -> StoreOptions) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let (last, term) = {
        let store = Store::open(dir.path(), opts()).await.unwrap();
        let mut last = 0;
        for i in 0..50 {
            last = ok_rev(store.write(put(&format!("/r/{i}"), Cond::Absent, json!({"i": i}))).await.unwrap());
        }
        let term = store.status().term;
        store.shutdown().await;
        (last, term)
    };
    let store = Store::open(dir.path(), opts()).await.unwrap();
    let rev = store.linearizable_rev().await.unwrap();
    assert!(rev >= last);
    assert!(store.status().term > term, "the restarted leader resumed term {term} without an election");
    let all = store.cache().list("/r/", None, None, None, &|_| true).unwrap();
    assert_eq!(all.items.len(), 50);
    // The revision sequence continues.
    let next = ok_rev(store.write(put("/r/new", Cond::Absent, json!({}))).await.unwrap());
    assert!(next > last);
    store.shutdown().await;
    dir
}

#[tokio::test]
async fn restart_keeps_every_acknowledged_write() {
    restart_keeps_every_acknowledged_write_with(StoreOptions::default).await;
}

#[tokio::test]
async fn restart_from_a_snapshot_keeps_every_acknowledged_write() {
    // A snapshot every 10 entries: the log before the last one is purged, so the restart
    // loads the snapshot file and applies only the entries after it.
    let dir = restart_keeps_every_acknowledged_write_with(|| StoreOptions { snapshot_every: 10, ..Default::default() }).await;
    assert!(dir.path().join("snapshot").is_file(), "no snapshot was written");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_log_that_outgrows_the_snapshot_is_snapshotted_and_its_file_stays_small() {
    // 24 MiB of updates to 16 objects of 2 KiB, far fewer entries than a snapshot's count
    // (50,000): the log's size alone asks for snapshots, and the purges after them keep the
    // database file well under what the log would have grown to (17 MiB here against 68 MiB
    // with snapshots by count only). redb grows its file in steps: a purge that comes a little
    // late takes it one step further, to 34 MiB.
    let dir = tempfile::tempdir().unwrap();
    let store = std::sync::Arc::new(open(dir.path(), Duration::from_secs(300)).await);
    let value = "x".repeat(2 << 10);
    let writers: Vec<_> = (0..16)
        .map(|w| {
            let (store, value) = (store.clone(), value.clone());
            tokio::spawn(async move {
                for i in 0..768 {
                    store.write(put(&format!("/big/{w}"), Cond::Any, json!({"i": i, "v": value}))).await.unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.await.unwrap();
    }
    assert!(dir.path().join("snapshot").is_file(), "no snapshot was written");
    let file = store.file_bytes();
    assert!(file < 48 << 20, "raft.redb holds {} MiB after 24 MiB of updates", file >> 20);
    assert_eq!(store.cache().list("/big/", None, None, None, &|_| true).unwrap().items.len(), 16);
    store.shutdown().await;
}
