//! Calls a follower makes to the leader, sent in batches: while a batch is on its way, the
//! requests that arrive queue up and travel together in the next call, so that a busy follower
//! costs the leader one call per batch instead of one per request. Forwarded writes and
//! read-index requests both go this way. A request always rides in a call that starts after it
//! arrived, so a read index it gets is at least as new as the request.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, oneshot, Semaphore};

use crate::peer::{ask_leader, decode, encode, Peers};
use crate::service::Forwarded;
use crate::types::{NodeId, Txn};

/// Batches on their way to one leader at a time; later requests wait for a slot and join the
/// next batch.
const IN_FLIGHT: usize = 2;

/// Most requests in one call.
const MAX_BATCH: usize = 256;

/// One call to the leader at `addr` carrying a batch; answers one result per request, in order.
type Call<Q, A> = fn(Peers, NodeId, String, Vec<Q>) -> Pin<Box<dyn Future<Output = Vec<Result<A, String>>> + Send>>;

struct Job<Q, A> {
    request: Q,
    reply: oneshot::Sender<Result<A, String>>,
}

/// The queue of requests for each leader (by id and address).
type Queues<Q, A> = HashMap<(NodeId, String), mpsc::UnboundedSender<Job<Q, A>>>;

/// One queue (and one sending task) per leader address; clones share them.
pub(crate) struct Batcher<Q, A> {
    peers: Peers,
    call: Call<Q, A>,
    queues: Arc<Mutex<Queues<Q, A>>>,
}

impl<Q, A> Clone for Batcher<Q, A> {
    fn clone(&self) -> Self {
        Batcher { peers: self.peers.clone(), call: self.call, queues: self.queues.clone() }
    }
}

/// Writes forwarded to the leader: the log index each applied at, and its result.
pub(crate) fn writes(peers: Peers) -> Batcher<Txn, Forwarded> {
    Batcher { peers, call: |peers, leader, addr, txns| Box::pin(forward(peers, leader, addr, txns)), queues: Default::default() }
}

/// Read indexes asked of the leader; one answer serves every request of the batch.
pub(crate) fn read_indexes(peers: Peers) -> Batcher<(), u64> {
    Batcher { peers, call: |peers, leader, addr, reqs| Box::pin(read_index(peers, leader, addr, reqs.len())), queues: Default::default() }
}

impl<Q: Send + 'static, A: Send + 'static> Batcher<Q, A> {
    /// Sends `request` to the leader `leader` at `addr` with the next batch; answers its result
    /// or why the leader did not answer.
    pub(crate) async fn ask(&self, leader: NodeId, addr: &str, request: Q) -> Result<A, String> {
        let (reply, answer) = oneshot::channel();
        self.queue(leader, addr).send(Job { request, reply }).map_err(|_| "the batcher stopped".to_string())?;
        answer.await.map_err(|_| "the batcher stopped".to_string())?
    }

    fn queue(&self, leader: NodeId, addr: &str) -> mpsc::UnboundedSender<Job<Q, A>> {
        let mut queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
        let key = (leader, addr.to_string());
        if let Some(queue) = queues.get(&key) {
            return queue.clone();
        }
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(send_batches(self.peers.clone(), self.call, leader, addr.to_string(), rx));
        queues.insert(key, tx.clone());
        tx
    }
}

/// Takes whatever has queued once a slot is free, and sends it as one call. Ends when the
/// batcher is dropped.
async fn send_batches<Q: Send + 'static, A: Send + 'static>(
    peers: Peers,
    call: Call<Q, A>,
    leader: NodeId,
    addr: String,
    mut queue: mpsc::UnboundedReceiver<Job<Q, A>>,
) {
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
        let (requests, replies): (Vec<Q>, Vec<_>) = jobs.into_iter().map(|j| (j.request, j.reply)).unzip();
        let answers = call(peers.clone(), leader, addr.clone(), requests);
        tokio::spawn(async move {
            for (reply, answer) in replies.into_iter().zip(answers.await) {
                let _ = reply.send(answer);
            }
            drop(slot);
        });
    }
}

async fn forward(peers: Peers, leader: NodeId, addr: String, txns: Vec<Txn>) -> Vec<Result<Forwarded, String>> {
    let n = txns.len();
    let call = async {
        let txns = txns.iter().map(encode).collect::<Result<Vec<_>, _>>()?;
        let mut client = peers.client(leader, &addr)?;
        let resp = ask_leader(client.forward(proto::raft::ForwardRequest { txns })).await?;
        if resp.results.len() != n {
            return Err(format!("the leader answered {} of {n} forwarded writes", resp.results.len()));
        }
        Ok(resp.results)
    };
    match call.await {
        Ok(results) => results.into_iter().map(|r| if r.error.is_empty() { decode(&r.result) } else { Err(r.error) }).collect(),
        Err(e) => vec![Err(e); n],
    }
}

async fn read_index(peers: Peers, leader: NodeId, addr: String, n: usize) -> Vec<Result<u64, String>> {
    let call = async {
        let mut client = peers.client(leader, &addr)?;
        let resp = ask_leader(client.read_index(proto::raft::ReadIndexRequest {})).await?;
        if resp.error.is_empty() {
            Ok(resp.index)
        } else {
            Err(resp.error)
        }
    };
    vec![call.await; n]
}
