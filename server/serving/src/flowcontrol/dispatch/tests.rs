//! Dispatch: seats, queues, refusals and fairness between flows.

use super::*;

const WAIT: Duration = Duration::from_secs(5);

fn limited(limit: usize, queue_length_limit: usize) -> LevelConfig {
    LevelConfig { exempt: false, limit, queuing: Some(Queuing { queues: 16, hand_size: 4, queue_length_limit }) }
}

fn req(schema: &str, user: &str) -> RequestInfo {
    RequestInfo { flow_schema: schema.into(), distinguisher: user.into(), user: user.into(), ..Default::default() }
}

async fn settle() {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
}

#[test]
fn hands_hold_distinct_queues() {
    for hash in [0, 1, 12345, u64::MAX] {
        let mut hand = deal(hash, 64, 8);
        assert_eq!(hand.len(), 8);
        hand.sort();
        hand.dedup();
        assert_eq!(hand.len(), 8);
        assert!(hand.iter().all(|&q| q < 64));
    }
    assert_eq!(deal(7, 3, 8).len(), 3);
}

#[tokio::test]
async fn exempt_levels_never_wait() {
    let d = Arc::new(Dispatcher::default());
    let exempt = LevelConfig { exempt: true, limit: 0, queuing: None };
    let permits: Vec<Permit> = futures::future::join_all((0..100).map(|_| d.admit("exempt", exempt, req("exempt", "admin"), WAIT)))
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let dump = d.dump_priority_levels();
    let row: Vec<&str> = dump.lines().find(|l| l.starts_with("exempt,")).unwrap().split(',').map(str::trim).collect();
    // waiting 0, executing 100, dispatched 100
    assert_eq!(&row[4..7], ["0", "100", "100"], "{dump}");
    drop(permits);
    assert_eq!(d.current()[&("exempt".to_string(), "exempt".to_string())], (0, 0));
}

#[tokio::test]
async fn a_full_level_queues_and_a_freed_seat_dispatches() {
    let d = Arc::new(Dispatcher::default());
    let config = limited(1, 2);
    let first = d.admit("l", config, req("s", "a"), WAIT).await.unwrap();
    let d2 = d.clone();
    let second = tokio::spawn(async move { d2.admit("l", config, req("s", "a"), WAIT).await.map(|_| ()) });
    settle().await;
    assert_eq!(d.current()[&("l".to_string(), "s".to_string())], (1, 1));
    let dump = d.dump_requests(true);
    assert_eq!(dump.lines().count(), 3, "{dump}");
    assert!(dump.lines().next().unwrap().ends_with("SubResource"), "{dump}");
    drop(first);
    assert_eq!(second.await.unwrap(), Ok(()));
}

#[tokio::test]
async fn refusals() {
    let d = Arc::new(Dispatcher::default());
    // Reject: no queue at all.
    let reject = LevelConfig { exempt: false, limit: 1, queuing: None };
    let _held = d.admit("r", reject, req("s", "a"), WAIT).await.unwrap();
    assert_eq!(d.admit("r", reject, req("s", "a"), WAIT).await.err(), Some(Rejection::ConcurrencyLimit));

    // A queue of one: the second waiter of the same flow finds it full.
    let config = LevelConfig { exempt: false, limit: 1, queuing: Some(Queuing { queues: 1, hand_size: 1, queue_length_limit: 1 }) };
    let _running = d.admit("q", config, req("s", "a"), WAIT).await.unwrap();
    let d2 = d.clone();
    let waiter = tokio::spawn(async move { d2.admit("q", config, req("s", "a"), Duration::from_millis(200)).await.map(|_| ()) });
    settle().await;
    assert_eq!(d.admit("q", config, req("s", "a"), WAIT).await.err(), Some(Rejection::QueueFull));
    // The waiter's time runs out.
    assert_eq!(waiter.await.unwrap(), Err(Rejection::TimedOut));
    let dump = d.dump_priority_levels();
    let row = dump.lines().find(|l| l.starts_with("q,")).unwrap();
    let cells: Vec<&str> = row.split(',').map(str::trim).collect();
    // waiting 0, executing 1, dispatched 1, rejected 2, timed out 1, cancelled 0
    assert_eq!(&cells[4..], ["0", "1", "1", "2", "1", "0"], "{dump}");
}

#[tokio::test]
async fn a_client_that_leaves_leaves_its_queue() {
    let d = Arc::new(Dispatcher::default());
    let config = limited(1, 10);
    let running = d.admit("l", config, req("s", "a"), WAIT).await.unwrap();
    let d2 = d.clone();
    let waiter = tokio::spawn(async move { d2.admit("l", config, req("s", "b"), WAIT).await.map(|_| ()) });
    settle().await;
    waiter.abort();
    let _ = waiter.await;
    assert_eq!(d.current()[&("l".to_string(), "s".to_string())], (0, 1));
    drop(running);
    // The seat is free again.
    let _again = tokio::time::timeout(Duration::from_secs(1), d.admit("l", config, req("s", "c"), WAIT)).await.unwrap().unwrap();
}

#[tokio::test]
async fn a_quiet_flow_is_not_stuck_behind_a_flood() {
    let d = Arc::new(Dispatcher::default());
    let config = limited(1, 100);
    let running = d.admit("l", config, req("s", "flood"), WAIT).await.unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for i in 0..20 {
        let (d, order) = (d.clone(), order.clone());
        tasks.push(tokio::spawn(async move {
            let _p = d.admit("l", config, req("s", "flood"), WAIT).await.unwrap();
            order.lock().unwrap().push(format!("flood-{i}"));
        }));
        settle().await;
    }
    let (d2, order2) = (d.clone(), order.clone());
    tasks.push(tokio::spawn(async move {
        let _p = d2.admit("l", config, req("s", "quiet"), WAIT).await.unwrap();
        order2.lock().unwrap().push("quiet".to_string());
    }));
    settle().await;
    drop(running);
    for t in tasks {
        t.await.unwrap();
    }
    let order = order.lock().unwrap();
    let quiet = order.iter().position(|n| n == "quiet").unwrap();
    // The flood spreads over its hand of 4 queues; each non-empty queue gets a turn in a round.
    assert!(quiet <= 4, "the quiet flow ran {quiet}th: {order:?}");
}
