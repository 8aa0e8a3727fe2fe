//! Calls a follower makes to the leader, sent in batches: while a batch is on its way, the
//! requests that arrive queue up and travel together in the next call, so that a busy follower
//! costs the leader one call per batch instead of one per request. Forwarded writes and
//! read-index requests both go this way. A request always rides in a call that starts after it
//! arrived, so a read index it gets is at least as new as the request. Calls go as messages on
//! a standing stream to the leader (or as calls to a leader without one).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, oneshot, Semaphore};
use tokio::time::Instant;
use tokio_stream::wrappers::UnboundedReceiverStream;

use crate::peer::{ask_leader, decode, encode, Client, Peers, PEER_CALL};
use crate::pipe::{PipeError, Pipes};
use crate::service::Forwarded;
use crate::types::{Action, LeaderId, NodeId, Txn};

/// Batches on their way to one leader at a time; later requests wait for a slot and join the
/// next batch.
const IN_FLIGHT: usize = 2;

/// Most requests in one call.
const MAX_BATCH: usize = 256;

/// Most bytes of objects in one call (one request alone may exceed it).
const MAX_BATCH_BYTES: usize = 16 << 20;

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
    /// The bytes a request adds to a call.
    size: fn(&Q) -> usize,
    queues: Arc<Mutex<Queues<Q, A>>>,
}

impl<Q, A> Clone for Batcher<Q, A> {
    fn clone(&self) -> Self {
        Batcher { peers: self.peers.clone(), call: self.call, size: self.size, queues: self.queues.clone() }
    }
}

/// Writes forwarded to the leader: the log index each applied at, and its result.
pub(crate) fn writes(peers: Peers) -> Batcher<Txn, Forwarded> {
    Batcher {
        peers,
        call: |peers, leader, addr, txns| Box::pin(forward(peers, leader, addr, txns)),
        size: |txn| txn.ops.iter().map(|op| op.key.len() + if let Action::Put(data) = &op.action { data.len() } else { 0 }).sum(),
        queues: Default::default(),
    }
}

/// Who asks for a read index: this node, and the leader of its vote when the read asked.
pub(crate) type Asker = (NodeId, Option<LeaderId>);

/// Read indexes asked of the leader; one answer serves every request of the batch.
pub(crate) fn read_indexes(peers: Peers) -> Batcher<Asker, u64> {
    Batcher {
        peers,
        call: |peers, leader, addr, askers| Box::pin(read_index(peers, leader, addr, askers)),
        size: |_| 0,
        queues: Default::default(),
    }
}

impl<Q: Send + 'static, A: Send + 'static> Batcher<Q, A> {
    /// Sends `request` to the leader `leader` at `addr` with the next batch; answers its result,
    /// or why the leader did not answer by `deadline`.
    pub(crate) async fn ask(&self, leader: NodeId, addr: &str, request: Q, deadline: Instant) -> Result<A, String> {
        let (reply, answer) = oneshot::channel();
        self.queue(leader, addr).send(Job { request, reply }).map_err(|_| "the batcher stopped".to_string())?;
        match tokio::time::timeout_at(deadline, answer).await {
            Ok(answer) => answer.map_err(|_| "the batcher stopped".to_string())?,
            Err(_) => Err("the leader did not answer in time".to_string()),
        }
    }

    /// The queue to `leader`, with its sending task started when there is none (or it ended).
    fn queue(&self, leader: NodeId, addr: &str) -> mpsc::UnboundedSender<Job<Q, A>> {
        let mut queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
        let key = (leader, addr.to_string());
        if let Some(queue) = queues.get(&key).filter(|q| !q.is_closed()) {
            return queue.clone();
        }
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(send_batches(self.peers.clone(), self.call, self.size, leader, addr.to_string(), rx));
        queues.insert(key, tx.clone());
        tx
    }
}

/// Takes whatever has queued once a slot is free (up to `MAX_BATCH` requests and
/// `MAX_BATCH_BYTES`), and sends it as one call. Requests whose caller has given up are dropped.
/// Ends when the batcher is dropped.
async fn send_batches<Q: Send + 'static, A: Send + 'static>(
    peers: Peers,
    call: Call<Q, A>,
    size: fn(&Q) -> usize,
    leader: NodeId,
    addr: String,
    mut queue: mpsc::UnboundedReceiver<Job<Q, A>>,
) {
    let slots = Arc::new(Semaphore::new(IN_FLIGHT));
    // A request that did not fit the last batch; it leads the next one.
    let mut carried: Option<Job<Q, A>> = None;
    loop {
        let first = match carried.take() {
            Some(job) => job,
            None => match queue.recv().await {
                Some(job) => job,
                None => return,
            },
        };
        let slot = slots.clone().acquire_owned().await.expect("the semaphore is never closed");
        let mut bytes = size(&first.request);
        let mut jobs = vec![first];
        while jobs.len() < MAX_BATCH {
            let Ok(job) = queue.try_recv() else { break };
            bytes += size(&job.request);
            if bytes > MAX_BATCH_BYTES {
                carried = Some(job);
                break;
            }
            jobs.push(job);
        }
        jobs.retain(|job| !job.reply.is_closed());
        if jobs.is_empty() {
            continue;
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

/// `request` to the leader as a message on its standing stream (`stream` opens one), or as one
/// call (`call`) to a leader without such streams.
async fn piped_or_called<Q: Send + 'static, A: Send + 'static, S, C>(
    pipes: &Pipes<Q, A>,
    peers: &Peers,
    leader: NodeId,
    addr: &str,
    request: Q,
    stream: impl FnOnce(Client, UnboundedReceiverStream<Q>) -> S,
    call: impl FnOnce(Client, Q) -> C,
) -> Result<A, String>
where
    S: Future<Output = Result<tonic::Response<tonic::Streaming<A>>, tonic::Status>>,
    C: Future<Output = Result<tonic::Response<A>, tonic::Status>>,
{
    let client = peers.client(leader, addr)?;
    match pipes.send(leader, addr, request, PEER_CALL, |s| stream(client.clone(), s)).await {
        Ok(answer) => Ok(answer),
        Err(PipeError::Failed(why)) => Err(why),
        Err(PipeError::Unimplemented(request)) => ask_leader(call(client, request)).await,
    }
}

async fn forward(peers: Peers, leader: NodeId, addr: String, txns: Vec<Txn>) -> Vec<Result<Forwarded, String>> {
    let n = txns.len();
    let call = async {
        let request = proto::raft::ForwardRequest { txns: txns.iter().map(encode).collect::<Result<Vec<_>, _>>()? };
        let resp = piped_or_called(
            &peers.forwards,
            &peers,
            leader,
            &addr,
            request,
            |mut c, s| async move { c.forward_stream(s).await },
            |mut c, r| async move { c.forward(r).await },
        )
        .await?;
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

/// One read index for a batch. The batch vouches for the leader of its askers' vote only if
/// every read in it saw the same one.
async fn read_index(peers: Peers, leader: NodeId, addr: String, askers: Vec<Asker>) -> Vec<Result<u64, String>> {
    let n = askers.len();
    let first = askers.first().copied().unwrap_or_default();
    let (node_id, voted_for) = if askers.iter().all(|a| *a == first) { first } else { (first.0, None) };
    let (vote_term, vote_leader) = voted_for.map_or((0, 0), |id| (id.term, id.node_id));
    let call = async {
        let resp = piped_or_called(
            &peers.read_indexes,
            &peers,
            leader,
            &addr,
            proto::raft::ReadIndexRequest { node_id, vote_term, vote_leader },
            |mut c, s| async move { c.read_index_stream(s).await },
            |mut c, r| async move { c.read_index(r).await },
        )
        .await?;
        if resp.error.is_empty() {
            Ok(resp.index)
        } else {
            Err(resp.error)
        }
    };
    vec![call.await; n]
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// Every call made: when it started, and when each of its requests was asked.
    static CALLS: Mutex<Vec<(Instant, Vec<Instant>)>> = Mutex::new(Vec::new());

    fn recording() -> Batcher<Instant, u64> {
        Batcher {
            peers: Peers::new(None),
            call: |_, _, _, asked| {
                Box::pin(async move {
                    let n = asked.len();
                    CALLS.lock().unwrap().push((Instant::now(), asked));
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    vec![Ok(7); n]
                })
            },
            size: |_| 0,
            queues: Default::default(),
        }
    }

    #[tokio::test]
    async fn requests_ride_in_calls_that_start_after_them_and_share_calls() {
        let batcher = recording();
        let deadline = Instant::now() + Duration::from_secs(10);
        let asks: Vec<_> = (0..200u64)
            .map(|i| {
                let batcher = batcher.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(i % 50)).await;
                    batcher.ask(1, "leader:1", Instant::now(), deadline).await
                })
            })
            .collect();
        for ask in asks {
            assert_eq!(ask.await.unwrap(), Ok(7));
        }
        let calls = CALLS.lock().unwrap();
        assert_eq!(calls.iter().map(|(_, asked)| asked.len()).sum::<usize>(), 200);
        for (started, asked) in calls.iter() {
            assert!(asked.iter().all(|at| at <= started), "a request rode in a call that started before it was asked");
        }
        assert!(calls.len() < 100, "{} calls for 200 requests: they were not batched", calls.len());
    }

    #[tokio::test]
    async fn a_leader_without_streams_gets_calls() {
        let addr = crate::network::tests::calls_only().await;
        let deadline = Instant::now() + Duration::from_secs(10);
        let writes = writes(Peers::new(None));
        let (index, _) = writes.ask(2, &addr, Txn::new(Vec::new()), deadline).await.unwrap();
        assert_eq!(index, 5);
        // Again, now that the leader is known to have no stream.
        assert_eq!(writes.ask(2, &addr, Txn::new(Vec::new()), deadline).await.unwrap().0, 5);
        assert_eq!(read_indexes(Peers::new(None)).ask(2, &addr, (1, None), deadline).await, Ok(7));
    }
}
