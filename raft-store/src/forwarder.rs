//! Writes a follower passes to the leader, sent in batches: while a batch is on its way, the
//! writes that arrive queue up and travel together in the next call, so that a busy follower
//! costs the leader one call per batch instead of one per write.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, oneshot, Semaphore};

use crate::peer::{ask_leader, decode, encode, Peers};
use crate::service::Forwarded;
use crate::types::{NodeId, Txn};

/// Batches on their way to one leader at a time; later writes wait for a slot and join the
/// next batch.
const IN_FLIGHT: usize = 2;

/// Most writes in one call.
const MAX_BATCH: usize = 256;

struct Job {
    txn: Txn,
    reply: oneshot::Sender<Result<Forwarded, String>>,
}

/// One queue (and one sending task) per leader address; clones share them.
#[derive(Clone)]
pub(crate) struct Forwarder {
    peers: Peers,
    queues: Arc<Mutex<HashMap<(NodeId, String), mpsc::UnboundedSender<Job>>>>,
}

impl Forwarder {
    pub(crate) fn new(peers: Peers) -> Self {
        Forwarder { peers, queues: Default::default() }
    }

    /// Sends a write to the leader `leader` at `addr`; answers the log index it was applied at
    /// and its result, or why the leader did not take it.
    pub(crate) async fn forward(&self, leader: NodeId, addr: &str, txn: &Txn) -> Result<Forwarded, String> {
        let (reply, answer) = oneshot::channel();
        self.queue(leader, addr).send(Job { txn: txn.clone(), reply }).map_err(|_| "the forwarder stopped".to_string())?;
        answer.await.map_err(|_| "the forwarder stopped".to_string())?
    }

    fn queue(&self, leader: NodeId, addr: &str) -> mpsc::UnboundedSender<Job> {
        let mut queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
        let key = (leader, addr.to_string());
        if let Some(queue) = queues.get(&key) {
            return queue.clone();
        }
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(send_batches(self.peers.clone(), leader, addr.to_string(), rx));
        queues.insert(key, tx.clone());
        tx
    }
}

/// Takes whatever has queued once a slot is free, and sends it as one call. Ends when the
/// forwarder is dropped.
async fn send_batches(peers: Peers, leader: NodeId, addr: String, mut queue: mpsc::UnboundedReceiver<Job>) {
    let slots = Arc::new(Semaphore::new(IN_FLIGHT));
    while let Some(first) = queue.recv().await {
        let slot = slots.clone().acquire_owned().await.expect("the semaphore is never closed");
        let mut jobs = vec![first];
        while jobs.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(job) => jobs.push(job),
                Err(_) => break,
            }
        }
        let (peers, addr) = (peers.clone(), addr.clone());
        tokio::spawn(async move {
            let answers = send(&peers, leader, &addr, jobs.iter().map(|j| &j.txn)).await;
            for (job, answer) in jobs.into_iter().zip(answers) {
                let _ = job.reply.send(answer);
            }
            drop(slot);
        });
    }
}

/// One call carrying `txns`; answers one result per transaction, in order.
async fn send<'a>(peers: &Peers, leader: NodeId, addr: &str, txns: impl ExactSizeIterator<Item = &'a Txn>) -> Vec<Result<Forwarded, String>> {
    let n = txns.len();
    let call = async {
        let txns = txns.map(encode).collect::<Result<Vec<_>, _>>()?;
        let mut client = peers.client(leader, addr)?;
        let resp = ask_leader(client.forward(proto::raft::ForwardRequest { txns })).await?;
        if resp.results.len() != n {
            return Err(format!("the leader answered {} of {n} forwarded writes", resp.results.len()));
        }
        Ok(resp.results)
    };
    match call.await {
        Ok(results) => {
            results.into_iter().map(|r| if r.error.is_empty() { decode(&r.result) } else { Err(r.error) }).collect()
        }
        Err(e) => vec![Err(e); n],
    }
}
