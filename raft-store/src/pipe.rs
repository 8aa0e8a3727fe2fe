//! A standing replication stream to one peer for single appends (heartbeats, commit-only probes):
//! each is one message on a stream that stays open rather than a call of its own, which costs a
//! gRPC call's setup and three writes each way. Answers come back in order; a pipe that fails
//! or ends is dropped, and the next append opens another.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use openraft::raft::AppendEntriesRequest;
use proto::raft::raft_client::RaftClient;
use proto::raft::RaftPayload;
use tokio::sync::{mpsc, oneshot};
use tonic::transport::Channel;

use crate::network::StreamAnswer;
use crate::peer::{decode, encode};
use crate::types::TypeConfig;

type Reply = oneshot::Sender<Result<StreamAnswer, String>>;

/// The sending half of one open stream.
pub(crate) struct Pipe {
    appends: mpsc::UnboundedSender<(AppendEntriesRequest<TypeConfig>, Reply)>,
    /// Set once the stream has ended or failed.
    ended: Arc<AtomicBool>,
}

impl Pipe {
    /// Opens a stream on `client`; a task reads its answers until it ends.
    pub(crate) async fn open(mut client: RaftClient<Channel>) -> Result<Pipe, tonic::Status> {
        let (appends, queued) = mpsc::unbounded_channel::<(AppendEntriesRequest<TypeConfig>, Reply)>();
        // Replies in the order their appends went out.
        let waiting: Arc<Mutex<VecDeque<Reply>>> = Default::default();
        let sent = waiting.clone();
        let outgoing = tokio_stream::wrappers::UnboundedReceiverStream::new(queued).filter_map(move |(rpc, reply)| {
            let message = match encode(&rpc) {
                Ok(payload) => {
                    sent.lock().unwrap_or_else(|e| e.into_inner()).push_back(reply);
                    Some(RaftPayload { payload })
                }
                Err(e) => {
                    let _ = reply.send(Err(e));
                    None
                }
            };
            futures::future::ready(message)
        });
        let mut answers = client.append_stream(outgoing).await?.into_inner();
        let ended = Arc::new(AtomicBool::new(false));
        let end = ended.clone();
        tokio::spawn(async move {
            let why = loop {
                let answer = match answers.next().await {
                    Some(Ok(answer)) => decode::<StreamAnswer>(&answer.payload),
                    Some(Err(status)) => break status.message().to_string(),
                    None => break "the stream ended".to_string(),
                };
                let Some(reply) = waiting.lock().unwrap_or_else(|e| e.into_inner()).pop_front() else {
                    break "an answer to no append".to_string();
                };
                let _ = reply.send(answer);
            };
            end.store(true, Ordering::Relaxed);
            for reply in waiting.lock().unwrap_or_else(|e| e.into_inner()).drain(..) {
                let _ = reply.send(Err(why.clone()));
            }
        });
        Ok(Pipe { appends, ended })
    }

    /// Whether the stream has ended (a new one is needed).
    pub(crate) fn ended(&self) -> bool {
        self.ended.load(Ordering::Relaxed)
    }

    /// Sends one append; answers its result, or why the pipe failed (it is then of no more use).
    pub(crate) async fn send(&self, rpc: AppendEntriesRequest<TypeConfig>) -> Result<StreamAnswer, String> {
        let (reply, answer) = oneshot::channel();
        self.appends.send((rpc, reply)).map_err(|_| "the stream is closed".to_string())?;
        answer.await.map_err(|_| "the stream is closed".to_string())?
    }
}
