//! The Raft network between replicas: openraft's RPCs sent over gRPC (`proto`), each message
//! CBOR-encoded; replication as one long-lived stream per follower, so that an append is one
//! message (not a call) and the next goes before the last is answered; snapshots streamed in
//! chunks.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use tokio::io::AsyncReadExt;

use openraft::errors::{NetworkError, RPCError, RaftError, ReplicationClosed, StreamingError, Unreachable};
use openraft::network::{RPCOption, RaftNetworkFactory, RaftNetworkV2};
use openraft::raft::{AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, StreamAppendResult, VoteRequest, VoteResponse};
use openraft::BasicNode;
use proto::raft::{RaftPayload, SnapshotChunk};
use serde::{Deserialize, Serialize};

use crate::peer::{decode, encode, Peers};
use crate::pipe::PipeError;
use crate::snapshot::{Snapshot, SnapshotFile, SnapshotMeta};
use crate::types::{NodeId, TypeConfig};

pub(crate) type Vote = openraft::alias::VoteOf<TypeConfig>;

/// Bytes of snapshot data per streamed chunk.
const SNAPSHOT_CHUNK: usize = 1 << 20;

/// The first chunk of a streamed snapshot: who sends it and what it is.
#[derive(Serialize, Deserialize)]
pub(crate) struct SnapshotHeader {
    pub vote: Vote,
    pub meta: SnapshotMeta,
    /// The body's length in bytes (absent from earlier versions).
    #[serde(default)]
    pub size: Option<u64>,
}

/// Creates clients to peers.
#[derive(Clone)]
pub struct Network {
    pub(crate) peers: Peers,
}

/// A client to one peer.
pub struct PeerClient {
    target: NodeId,
    addr: String,
    peers: Peers,
    /// Cleared once the peer answers that it has no replication stream (a node of an earlier
    /// version, during a rolling upgrade): appends then go one call at a time.
    streams: AtomicBool,
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = PeerClient;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> PeerClient {
        PeerClient { target, addr: node.addr.clone(), peers: self.peers.clone(), streams: AtomicBool::new(true) }
    }
}

/// What an append carries, for the trace: its last entry's index and the leader's commit.
pub(crate) fn carried(rpc: &AppendEntriesRequest<TypeConfig>) -> (Option<u64>, Option<u64>) {
    (rpc.entries.last().map(|e| e.log_id.index()), rpc.leader_commit.as_ref().map(|c| c.index()))
}

/// The replication stream's answer for one append.
pub(crate) type StreamAnswer = Result<StreamAppendResult<TypeConfig>, openraft::errors::Fatal<TypeConfig>>;

impl PeerClient {
    fn unreachable(&self, why: impl std::fmt::Display) -> Unreachable<TypeConfig> {
        Unreachable::from_string(format!("node {} at {}: {why}", self.target, self.addr))
    }

    /// One unary call: encode, send, decode the remote `Result`.
    async fn call<Req: Serialize, Resp: for<'de> Deserialize<'de>>(
        &self,
        req: &Req,
        send: impl AsyncFnOnce(crate::peer::Client, RaftPayload) -> Result<tonic::Response<RaftPayload>, tonic::Status>,
    ) -> Result<Resp, RPCError<TypeConfig>> {
        let client = self.peers.client(self.target, &self.addr).map_err(|e| RPCError::Unreachable(self.unreachable(e)))?;
        let payload = encode(req).map_err(|e| RPCError::Network(NetworkError::from_string(e)))?;
        let resp = send(client, RaftPayload { payload }).await.map_err(|s| match s.code() {
            tonic::Code::Unavailable | tonic::Code::Cancelled | tonic::Code::DeadlineExceeded => {
                RPCError::Unreachable(self.unreachable(s.message()))
            }
            _ => RPCError::Network(NetworkError::from_string(format!("node {}: {s}", self.target))),
        })?;
        let result: Result<Resp, RaftError<TypeConfig>> =
            decode(&resp.into_inner().payload).map_err(|e| RPCError::Network(NetworkError::from_string(e)))?;
        result.map_err(|e| RPCError::Unreachable(self.unreachable(e)))
    }

    /// The status of a failed attempt to open a replication stream, as an openraft error; a
    /// peer without one is remembered, and gets calls from then on.
    fn stream_refused(&self, s: tonic::Status) -> RPCError<TypeConfig> {
        if s.code() == tonic::Code::Unimplemented {
            self.streams.store(false, Ordering::Relaxed);
            return RPCError::Unreachable(self.unreachable("no replication stream; appends go one call at a time"));
        }
        RPCError::Unreachable(self.unreachable(s.message()))
    }

    /// One append on the standing pipe to this peer, answered within `ttl`.
    async fn piped(&self, rpc: AppendEntriesRequest<TypeConfig>, ttl: std::time::Duration) -> Result<StreamAppendResult<TypeConfig>, RPCError<TypeConfig>> {
        let target = self.target;
        tracing::debug!(target, carried = ?carried(&rpc), "append sent");
        let payload = encode(&rpc).map_err(|e| RPCError::Network(NetworkError::from_string(e)))?;
        let mut client = self.peers.client(self.target, &self.addr).map_err(|e| RPCError::Unreachable(self.unreachable(e)))?;
        let answer = self.peers.appends.send(self.target, &self.addr, RaftPayload { payload }, ttl, move |s| async move { client.append_stream(s).await }).await;
        let answer = match answer {
            Ok(answer) => decode::<StreamAnswer>(&answer.payload).map_err(|e| RPCError::Network(NetworkError::from_string(e)))?,
            Err(PipeError::Unimplemented(_)) => return Err(self.stream_refused(tonic::Status::unimplemented(""))),
            Err(PipeError::Failed(why)) => return Err(RPCError::Unreachable(self.unreachable(why))),
        };
        tracing::debug!(target, ?answer, "append acknowledged");
        answer.map_err(|fatal| RPCError::Unreachable(self.unreachable(fatal)))
    }
}

impl RaftNetworkV2<TypeConfig> for PeerClient {
    type SnapshotData = SnapshotFile;

    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        _option: RPCOption,
    ) -> Result<AppendEntriesResponse<TypeConfig>, RPCError<TypeConfig>> {
        let target = self.target;
        tracing::debug!(target, carried = ?carried(&rpc), "append sent");
        let resp = self.call(&rpc, async |mut c, p| c.append_entries(p).await).await;
        tracing::debug!(target, ?resp, "append acknowledged");
        resp
    }

    /// A stream of one request (a heartbeat, a commit-only probe) goes on the standing pipe; a
    /// longer one (the leader's replication of new entries) as a gRPC stream of its own whose
    /// answers come back in order, one per append. A peer without streams gets calls.
    fn stream_append<'s, S>(
        &'s mut self,
        input: S,
        option: RPCOption,
    ) -> BoxFuture<'s, Result<BoxStream<'s, Result<StreamAppendResult<TypeConfig>, RPCError<TypeConfig>>>, RPCError<TypeConfig>>>
    where
        S: Stream<Item = AppendEntriesRequest<TypeConfig>> + Send + Unpin + 'static,
    {
        if !self.streams.load(Ordering::Relaxed) {
            return openraft::network::stream_append_sequential(self, input, option);
        }
        if input.size_hint().1 == Some(1) {
            return Box::pin(async move {
                let mut input = input;
                let Some(rpc) = input.next().await else { return Ok(futures::stream::empty().boxed()) };
                let answer = self.piped(rpc, option.hard_ttl()).await;
                Ok(futures::stream::once(futures::future::ready(answer)).boxed())
            });
        }
        Box::pin(async move {
            // The first append is taken before the stream opens: openraft waits out its backoff
            // while producing it, so a peer that refuses connections is retried at the backoff's
            // pace. Opened first, a refused connection failed before the backoff was reached, and
            // the leader retried in a busy loop (tens of thousands of attempts a second).
            let mut input = input;
            let Some(first) = input.next().await else { return Ok(futures::stream::empty().boxed()) };
            let input = futures::stream::once(futures::future::ready(first)).chain(input);
            let mut client = self.peers.client(self.target, &self.addr).map_err(|e| RPCError::Unreachable(self.unreachable(e)))?;
            let target = self.target;
            // An append that cannot be encoded ends the stream; the leader starts another.
            let requests = input
                .map(move |rpc| {
                    tracing::debug!(target, carried = ?carried(&rpc), "append sent");
                    encode(&rpc).map(|payload| RaftPayload { payload })
                })
                .take_while(|encoded| futures::future::ready(encoded.is_ok()))
                .filter_map(|encoded| futures::future::ready(encoded.ok()));
            // A peer cut off would hold the stream's opening until the connection's keepalive
            // gives up; the leader tries again sooner.
            let opened = tokio::time::timeout(crate::peer::PEER_CALL, client.append_stream(requests))
                .await
                .map_err(|_| RPCError::Unreachable(self.unreachable("the replication stream did not open in time")))?;
            let answers = opened.map_err(|s| self.stream_refused(s))?.into_inner();
            let unreachable = move |why: String| RPCError::Unreachable(Unreachable::from_string(format!("node {target}: {why}")));
            let results = answers.map(move |answer| {
                let answer = answer.map_err(|s| unreachable(s.message().to_string()))?;
                let result: StreamAnswer = decode(&answer.payload).map_err(&unreachable)?;
                tracing::debug!(target, ?result, "append acknowledged");
                result.map_err(|fatal| unreachable(fatal.to_string()))
            });
            Ok(results.boxed())
        })
    }

    async fn vote(&mut self, rpc: VoteRequest<TypeConfig>, _option: RPCOption) -> Result<VoteResponse<TypeConfig>, RPCError<TypeConfig>> {
        self.call(&rpc, async |mut c, p| c.vote(p).await).await
    }

    /// A peer of protocol 2 or earlier has no pre-vote: its answer counts as a grant, as openraft
    /// counts a network without one, so that a cluster in a rolling upgrade still elects. A peer
    /// not reached grants nothing.
    async fn pre_vote(&mut self, rpc: VoteRequest<TypeConfig>, _option: RPCOption) -> Result<VoteResponse<TypeConfig>, RPCError<TypeConfig>> {
        let granted: Result<VoteResponse<TypeConfig>, RaftError<TypeConfig>> = Ok(VoteResponse::new(rpc.vote.clone(), None, true));
        self.call(&rpc, async |mut c, p| match c.pre_vote(p).await {
            Err(s) if s.code() == tonic::Code::Unimplemented => Ok(tonic::Response::new(RaftPayload { payload: encode(&granted).map_err(tonic::Status::internal)? })),
            answer => answer,
        })
        .await
    }

    async fn full_snapshot(
        &mut self,
        vote: Vote,
        snapshot: Snapshot,
        cancel: impl Future<Output = ReplicationClosed> + Send + 'static,
        _option: RPCOption,
    ) -> Result<SnapshotResponse<TypeConfig>, StreamingError<TypeConfig>> {
        let mut client = self.peers.client(self.target, &self.addr).map_err(|e| StreamingError::Unreachable(self.unreachable(e)))?;
        let network = |e: String| StreamingError::Network(NetworkError::from_string(e));
        let (body, size) = snapshot.snapshot.body().map_err(|e| network(e.to_string()))?;
        let header = encode(&SnapshotHeader { vote, meta: snapshot.meta.clone(), size: Some(size) }).map_err(network)?;
        // The body in pieces as they are read; a read that fails ends the stream short, and the
        // peer refuses a body shorter than announced.
        let pieces = futures::stream::unfold(body, |mut body| async move {
            let mut data = Vec::with_capacity(SNAPSHOT_CHUNK);
            match (&mut body).take(SNAPSHOT_CHUNK as u64).read_to_end(&mut data).await {
                Ok(0) => None,
                Ok(_) => Some((SnapshotChunk { header: Vec::new(), data }, body)),
                Err(e) => {
                    tracing::warn!(error = %e, "reading the snapshot to send failed");
                    None
                }
            }
        });
        let chunks = futures::stream::once(async { SnapshotChunk { header, data: Vec::new() } }).chain(pieces);
        let send = client.install_snapshot(chunks);
        let resp = tokio::select! {
            closed = cancel => return Err(StreamingError::Closed(closed)),
            resp = send => resp.map_err(|s| StreamingError::Unreachable(self.unreachable(s.message())))?,
        };
        let result: Result<SnapshotResponse<TypeConfig>, RaftError<TypeConfig>> =
            decode(&resp.into_inner().payload).map_err(|e| StreamingError::Network(NetworkError::from_string(e)))?;
        result.map_err(|e| StreamingError::Unreachable(self.unreachable(e)))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use openraft::vote::RaftLeaderId;
    use proto::raft::raft_server::{Raft as RaftRpc, RaftServer};
    use proto::raft::{
        ForwardRequest, ForwardResponse, MembershipRequest, MembershipResponse, ReadIndexRequest, ReadIndexResponse, SnapshotChunk,
    };
    use tonic::{Request, Response, Status, Streaming};

    use super::*;

    /// A peer of an earlier version: it answers appends, forwarded writes (each as applied at
    /// index 5) and read indexes (7) one call at a time, and has no standing streams.
    pub(crate) struct CallsOnly;

    #[tonic::async_trait]
    impl RaftRpc for CallsOnly {
        type AppendStreamStream = BoxStream<'static, Result<RaftPayload, Status>>;
        type ForwardStreamStream = BoxStream<'static, Result<ForwardResponse, Status>>;
        type ReadIndexStreamStream = BoxStream<'static, Result<ReadIndexResponse, Status>>;

        async fn append_entries(&self, _: Request<RaftPayload>) -> Result<Response<RaftPayload>, Status> {
            let ok: Result<AppendEntriesResponse<TypeConfig>, RaftError<TypeConfig>> = Ok(AppendEntriesResponse::Success);
            Ok(Response::new(RaftPayload { payload: encode(&ok).unwrap() }))
        }
        async fn append_stream(&self, _: Request<Streaming<RaftPayload>>) -> Result<Response<Self::AppendStreamStream>, Status> {
            Err(Status::unimplemented("no such method"))
        }
        async fn vote(&self, _: Request<RaftPayload>) -> Result<Response<RaftPayload>, Status> {
            Err(Status::unimplemented(""))
        }
        async fn pre_vote(&self, _: Request<RaftPayload>) -> Result<Response<RaftPayload>, Status> {
            Err(Status::unimplemented(""))
        }
        async fn install_snapshot(&self, _: Request<Streaming<SnapshotChunk>>) -> Result<Response<RaftPayload>, Status> {
            Err(Status::unimplemented(""))
        }
        async fn forward(&self, req: Request<ForwardRequest>) -> Result<Response<ForwardResponse>, Status> {
            let applied: crate::service::Forwarded = (5, crate::types::TxnResult::None);
            let result = proto::raft::ForwardResult { result: encode(&applied).unwrap(), error: String::new() };
            Ok(Response::new(ForwardResponse { results: vec![result; req.into_inner().txns.len()] }))
        }
        async fn membership(&self, _: Request<MembershipRequest>) -> Result<Response<MembershipResponse>, Status> {
            Err(Status::unimplemented(""))
        }
        async fn probe(&self, _: Request<RaftPayload>) -> Result<Response<RaftPayload>, Status> {
            Err(Status::unimplemented("no such method"))
        }
        async fn read_index(&self, _: Request<ReadIndexRequest>) -> Result<Response<ReadIndexResponse>, Status> {
            Ok(Response::new(ReadIndexResponse { index: 7, error: String::new() }))
        }
        async fn forward_stream(&self, _: Request<Streaming<ForwardRequest>>) -> Result<Response<Self::ForwardStreamStream>, Status> {
            Err(Status::unimplemented(""))
        }
        async fn read_index_stream(&self, _: Request<Streaming<ReadIndexRequest>>) -> Result<Response<Self::ReadIndexStreamStream>, Status> {
            Err(Status::unimplemented(""))
        }
    }

    fn append(index: u64) -> AppendEntriesRequest<TypeConfig> {
        let leader = openraft::alias::CommittedLeaderIdOf::<TypeConfig>::new(1, 1);
        AppendEntriesRequest {
            vote: Vote::new_committed(1, 1),
            prev_log_id: Some(openraft::alias::LogIdOf::<TypeConfig>::new(leader, index - 1)),
            leader_commit: None,
            entries: vec![openraft::entry::RaftEntry::new_blank(openraft::alias::LogIdOf::<TypeConfig>::new(leader, index))],
        }
    }

    /// Serves [`CallsOnly`] on a loopback port; answers its address.
    pub(crate) async fn calls_only() -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(RaftServer::new(CallsOnly))
                .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
        );
        addr
    }

    #[tokio::test]
    async fn a_peer_without_streams_gets_appends_one_call_at_a_time() {
        let addr = calls_only().await;
        let mut network = Network { peers: Peers::new(None) };
        let mut client = network.new_client(2, &BasicNode { addr }).await;
        let appends = || futures::stream::iter([append(1), append(2)]);
        // The first stream is refused, and remembered.
        let refused = client.stream_append(appends(), RPCOption::new(std::time::Duration::from_secs(5))).await.err().expect("refused");
        assert!(refused.to_string().contains("no replication stream"), "{refused}");
        // Then each append is one call, answered in order.
        let answers: Vec<_> = client.stream_append(appends(), RPCOption::new(std::time::Duration::from_secs(5))).await.unwrap().collect().await;
        let matched: Vec<Option<u64>> = answers.into_iter().map(|a| a.unwrap().unwrap().map(|l| l.index())).collect();
        assert_eq!(matched, [Some(1), Some(2)]);
        // A single append too.
        let one = client.stream_append(futures::stream::iter([append(3)]), RPCOption::new(std::time::Duration::from_secs(5))).await.unwrap();
        assert_eq!(one.collect::<Vec<_>>().await.len(), 1);
    }

    #[tokio::test]
    async fn a_stream_to_a_peer_that_refuses_connections_fails_only_after_its_first_append_is_produced() {
        let mut network = Network { peers: Peers::new(None) };
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
        let mut gone = network.new_client(3, &BasicNode { addr: closed }).await;
        // openraft produces each append after its backoff's delay; here the first takes 300 ms.
        let wait = std::time::Duration::from_millis(300);
        let appends = futures::stream::once(async move {
            tokio::time::sleep(wait).await;
            append(1)
        })
        .chain(futures::stream::iter([append(2)]))
        .boxed();
        let started = std::time::Instant::now();
        let refused = gone.stream_append(appends, RPCOption::new(std::time::Duration::from_secs(5))).await.err().expect("nothing listens");
        assert!(matches!(refused, RPCError::Unreachable(_)), "{refused}");
        assert!(started.elapsed() >= wait, "failed after {:?}, before the backoff's delay", started.elapsed());
    }

    #[tokio::test]
    async fn a_peer_without_pre_vote_counts_as_granting_it_and_one_not_reached_does_not() {
        let mut network = Network { peers: Peers::new(None) };
        let ask = VoteRequest::new(Vote::new(2, 1), None);
        let option = || RPCOption::new(std::time::Duration::from_secs(5));
        let mut earlier = network.new_client(2, &BasicNode { addr: calls_only().await }).await;
        let answer = earlier.pre_vote(ask.clone(), option()).await.unwrap();
        assert!(answer.vote_granted && answer.vote == ask.vote, "{answer:?}");
        // A port nothing listens on: no answer, so no grant (else a node cut off from every peer
        // would count a majority and stand).
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
        let mut gone = network.new_client(3, &BasicNode { addr: closed }).await;
        assert!(gone.pre_vote(ask, option()).await.is_err());
    }
}
