//! Standing gRPC streams to a peer for small, frequent messages: single appends (heartbeats,
//! commit-only probes), forwarded writes and read-index requests. Each message is one frame on a
//! stream that stays open rather than a call of its own, which costs a call's setup and three
//! writes each way. Answers come back in order; a pipe that fails or ends is dropped, and the
//! next message opens another.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::{mpsc, oneshot};
use tokio_stream::wrappers::UnboundedReceiverStream;
use tonic::{Response, Status, Streaming};

use crate::types::NodeId;

type Reply<A> = oneshot::Sender<Result<A, String>>;

/// The sending half of one open stream of requests `Q` answered by `A`.
pub(crate) struct Pipe<Q, A> {
    requests: mpsc::UnboundedSender<Q>,
    /// Replies in the order their requests went out.
    waiting: Arc<Mutex<VecDeque<Reply<A>>>>,
    /// Set once the stream has ended or failed.
    ended: Arc<AtomicBool>,
}

impl<Q: Send + 'static, A: Send + 'static> Pipe<Q, A> {
    /// Opens a stream with `call` (given the requests to send); a task reads its answers until
    /// it ends.
    pub(crate) async fn open<F>(call: impl FnOnce(UnboundedReceiverStream<Q>) -> F) -> Result<Self, Status>
    where
        F: Future<Output = Result<Response<Streaming<A>>, Status>>,
    {
        let (requests, queued) = mpsc::unbounded_channel();
        let mut answers = call(UnboundedReceiverStream::new(queued)).await?.into_inner();
        let waiting: Arc<Mutex<VecDeque<Reply<A>>>> = Default::default();
        let ended = Arc::new(AtomicBool::new(false));
        let (replies, end) = (waiting.clone(), ended.clone());
        tokio::spawn(async move {
            let why = loop {
                let answer = match answers.next().await {
                    Some(Ok(answer)) => answer,
                    Some(Err(status)) => break status.message().to_string(),
                    None => break "the stream ended".to_string(),
                };
                let Some(reply) = replies.lock().unwrap_or_else(|e| e.into_inner()).pop_front() else {
                    break "an answer to no request".to_string();
                };
                let _ = reply.send(Ok(answer));
            };
            end.store(true, Ordering::Relaxed);
            for reply in replies.lock().unwrap_or_else(|e| e.into_inner()).drain(..) {
                let _ = reply.send(Err(why.clone()));
            }
        });
        Ok(Pipe { requests, waiting, ended })
    }

    /// Sends one request; answers its answer, or why the pipe failed (it is then of no more use).
    pub(crate) async fn send(&self, request: Q) -> Result<A, String> {
        let (reply, answer) = oneshot::channel();
        {
            // Queued and sent under one lock, so that replies keep the requests' order.
            let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
            if self.ended() {
                return Err("the stream is closed".to_string());
            }
            self.requests.send(request).map_err(|_| "the stream is closed".to_string())?;
            waiting.push_back(reply);
        }
        answer.await.map_err(|_| "the stream is closed".to_string())?
    }

    /// Whether the stream has ended (a new one is needed).
    pub(crate) fn ended(&self) -> bool {
        self.ended.load(Ordering::Relaxed)
    }
}

/// The open pipes, by peer id and address.
type Open<Q, A> = HashMap<(NodeId, String), Arc<Pipe<Q, A>>>;

/// One pipe per peer (by id and address), opened on first use and again after one ends; clones
/// share them.
pub(crate) struct Pipes<Q, A> {
    open: Arc<Mutex<Open<Q, A>>>,
}

impl<Q, A> Clone for Pipes<Q, A> {
    fn clone(&self) -> Self {
        Pipes { open: self.open.clone() }
    }
}

impl<Q, A> Default for Pipes<Q, A> {
    fn default() -> Self {
        Pipes { open: Default::default() }
    }
}

/// Why a message did not get its answer through a pipe.
pub(crate) enum PipeError<Q> {
    /// The peer has no such stream (a node of an earlier version); the request, unsent.
    Unimplemented(Q),
    Failed(String),
}

impl<Q: Send + 'static, A: Send + 'static> Pipes<Q, A> {
    /// Sends `request` on the pipe to peer `id` at `addr`, opened with `call` when there is
    /// none, and waits `ttl` at most for its answer; a pipe that fails or does not answer in time
    /// is dropped.
    pub(crate) async fn send<F>(
        &self,
        id: NodeId,
        addr: &str,
        request: Q,
        ttl: Duration,
        call: impl FnOnce(UnboundedReceiverStream<Q>) -> F,
    ) -> Result<A, PipeError<Q>>
    where
        F: Future<Output = Result<Response<Streaming<A>>, Status>>,
    {
        let key = (id, addr.to_string());
        let current = self.open.lock().unwrap_or_else(|e| e.into_inner()).get(&key).filter(|p| !p.ended()).cloned();
        let pipe = match current {
            Some(pipe) => pipe,
            None => {
                let pipe = match tokio::time::timeout(ttl, Pipe::open(call)).await {
                    Err(_) => return Err(PipeError::Failed("no answer in time".into())),
                    Ok(Err(s)) if s.code() == tonic::Code::Unimplemented => return Err(PipeError::Unimplemented(request)),
                    Ok(Err(s)) => return Err(PipeError::Failed(s.message().to_string())),
                    Ok(Ok(pipe)) => Arc::new(pipe),
                };
                self.open.lock().unwrap_or_else(|e| e.into_inner()).insert(key.clone(), pipe.clone());
                pipe
            }
        };
        let answer = tokio::time::timeout(ttl, pipe.send(request)).await.unwrap_or_else(|_| Err("no answer in time".into()));
        if answer.is_err() {
            let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
            if open.get(&key).is_some_and(|p| Arc::ptr_eq(p, &pipe)) {
                open.remove(&key);
            }
        }
        answer.map_err(PipeError::Failed)
    }
}
