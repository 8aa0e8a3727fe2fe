//! The peer gRPC service every replica serves: openraft's RPCs and replication stream from the
//! leader, snapshot installs, writes forwarded by followers, read-index requests, and membership changes
//! (carried out by the leader; a follower passes them on).

use std::collections::BTreeSet;

use futures::StreamExt;
use openraft::errors::RaftError;
use openraft::async_runtime::WatchReceiver;
use openraft::{BasicNode, ChangeMembers};
use proto::raft::raft_server::{Raft as RaftRpc, RaftServer};
use proto::raft::{
    ForwardRequest, ForwardResponse, ForwardResult, Member, MembershipRequest, MembershipResponse, RaftPayload, ReadIndexRequest, ReadIndexResponse,
    SnapshotChunk,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use tonic::service::interceptor::InterceptedService;
use tonic::{Request, Response, Status, Streaming};
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::network::{carried, SnapshotHeader, StreamAnswer};
use crate::peer::{decode, encode, Peers, MAX_MESSAGE};
use crate::protocol::{self, PROTOCOL};
use crate::read_index;
use crate::trace;
use crate::snapshot::{Snapshot, Snapshots};
use crate::types::{Raft, Txn, TxnResult, TypeConfig};

/// What a forwarded write answers: the log index it was applied at, and its result.
pub(crate) type Forwarded = (u64, TxnResult);

/// The service of one replica.
pub(crate) struct Service {
    pub raft: Raft,
    pub peers: Peers,
    /// Where snapshots sent by the leader are written.
    pub snapshots: Snapshots,
}

/// Proposes one forwarded transaction and answers what it applied as.
async fn propose(raft: &Raft, txn: &[u8]) -> ForwardResult {
    let answer = async {
        let mut txn: Txn = decode(txn)?;
        let proposal = txn.id;
        tracing::debug!(proposal, "forwarded write received");
        // The follower's forward span is the parent; the entry carries the proposal's.
        let span = txn.trace.as_deref().map_or_else(Span::none, |parent| trace::continued(parent, "raft.propose"));
        txn.trace = trace::traceparent(&span);
        let resp = raft.client_write(txn).await.map_err(|e| e.to_string())?;
        span.set_attribute("raft.index", resp.log_id.index() as i64);
        tracing::debug!(proposal, index = resp.log_id.index(), "forwarded write applied");
        let forwarded: Forwarded = (resp.log_id.index(), resp.data);
        encode(&forwarded)
    };
    match answer.await {
        Ok(result) => ForwardResult { result, error: String::new() },
        Err(error) => ForwardResult { result: Vec::new(), error },
    }
}

fn payload<T: Serialize>(value: &T) -> Result<Response<RaftPayload>, Status> {
    encode(value).map(|payload| Response::new(RaftPayload { payload })).map_err(Status::internal)
}

fn request<T: DeserializeOwned>(req: Request<RaftPayload>) -> Result<T, Status> {
    decode(&req.into_inner().payload).map_err(Status::invalid_argument)
}

#[tonic::async_trait]
impl RaftRpc for Service {
    type AppendStreamStream = Piped<RaftPayload>;

    /// Appends in the order they come, answered in the same order; a message that does not
    /// decode ends the stream (the leader starts another), as does a rejected append.
    async fn append_stream(&self, req: Request<Streaming<RaftPayload>>) -> Result<Response<Self::AppendStreamStream>, Status> {
        let appends = messages(req).scan((), |_, message| {
            let rpc = decode::<openraft::raft::AppendEntriesRequest<TypeConfig>>(&message.payload).ok();
            if let Some(rpc) = &rpc {
                tracing::debug!(carried = ?carried(rpc), "append received");
            }
            futures::future::ready(rpc)
        });
        let answers = self.raft.stream_append(appends).map(|answer: StreamAnswer| {
            tracing::debug!(?answer, "append answered");
            encode(&answer).map(|payload| RaftPayload { payload }).map_err(Status::internal)
        });
        Ok(Response::new(Box::pin(answers)))
    }

    async fn append_entries(&self, req: Request<RaftPayload>) -> Result<Response<RaftPayload>, Status> {
        let rpc: openraft::raft::AppendEntriesRequest<TypeConfig> = request(req)?;
        tracing::debug!(carried = ?carried(&rpc), "append received");
        let answer = self.raft.append_entries(rpc).await;
        tracing::debug!(?answer, "append answered");
        payload(&answer)
    }

    async fn probe(&self, _req: Request<RaftPayload>) -> Result<Response<RaftPayload>, Status> {
        Ok(Response::new(RaftPayload { payload: protocol::probe_answer() }))
    }

    async fn vote(&self, req: Request<RaftPayload>) -> Result<Response<RaftPayload>, Status> {
        payload(&self.raft.vote(request(req)?).await)
    }

    async fn pre_vote(&self, req: Request<RaftPayload>) -> Result<Response<RaftPayload>, Status> {
        payload(&self.raft.pre_vote(request(req)?).await)
    }

    async fn install_snapshot(&self, req: Request<Streaming<SnapshotChunk>>) -> Result<Response<RaftPayload>, Status> {
        let mut chunks = req.into_inner();
        let first = chunks.next().await.ok_or_else(|| Status::invalid_argument("empty snapshot stream"))??;
        let header: SnapshotHeader = decode(&first.header).map_err(Status::invalid_argument)?;
        let pieces = futures::stream::iter([Ok(first.data)]).chain(chunks.map(|c| c.map(|c| c.data)));
        let file = self.snapshots.receive(&header.meta, header.size, pieces).await.map_err(|e| Status::invalid_argument(e.to_string()))?;
        let snapshot = Snapshot { meta: header.meta, snapshot: file };
        let result = self.raft.install_full_snapshot(header.vote, snapshot).await.map_err(RaftError::<TypeConfig>::Fatal);
        payload(&result)
    }

    async fn forward(&self, req: Request<ForwardRequest>) -> Result<Response<ForwardResponse>, Status> {
        Ok(Response::new(propose_all(self.raft.clone(), req.into_inner()).await))
    }

    type ForwardStreamStream = Piped<ForwardResponse>;

    /// Batches of forwarded writes, a few at a time, answered in order.
    async fn forward_stream(&self, req: Request<Streaming<ForwardRequest>>) -> Result<Response<Self::ForwardStreamStream>, Status> {
        let raft = self.raft.clone();
        let answers = messages(req).map(move |batch| propose_all(raft.clone(), batch)).buffered(IN_FLIGHT).map(Ok);
        Ok(Response::new(Box::pin(answers)))
    }

    type ReadIndexStreamStream = Piped<ReadIndexResponse>;

    /// Read-index requests, a few at a time, answered in order.
    async fn read_index_stream(&self, req: Request<Streaming<ReadIndexRequest>>) -> Result<Response<Self::ReadIndexStreamStream>, Status> {
        let raft = self.raft.clone();
        let answers = messages(req)
            .map(move |req| {
                let raft = raft.clone();
                async move { read_index::answer(&raft, &req).await }
            })
            .buffered(IN_FLIGHT)
            .map(Ok);
        Ok(Response::new(Box::pin(answers)))
    }

    async fn membership(&self, req: Request<MembershipRequest>) -> Result<Response<MembershipResponse>, Status> {
        let req = req.into_inner();
        let ids = || BTreeSet::from([req.node_id]);
        let changed = match req.action.as_str() {
            "" => Ok(()),
            "add-learner" => self.raft.add_learner(req.node_id, BasicNode { addr: req.addr.clone() }, true).await.map(drop),
            "promote" => self.raft.change_membership(ChangeMembers::AddVoterIds(ids()), false).await.map(drop),
            "remove" => self.raft.change_membership(ChangeMembers::RemoveVoters(ids()), false).await.map(drop),
            other => return Err(Status::invalid_argument(format!("unknown membership action {other:?}"))),
        };
        let metrics = self.raft.metrics().borrow_watched().clone();
        let leader_id = metrics.current_leader.unwrap_or(0);
        if let Err(e) = changed {
            // Changes are made by the leader: forward there when this node follows.
            if let Some((leader, addr)) = e.forward_to_leader().and_then(|f| Some((f.leader_id?, f.leader_node.clone()?.addr))) {
                let mut client = self.peers.client(leader, &addr).map_err(Status::unavailable)?;
                return client.membership(req).await;
            }
            return Ok(Response::new(MembershipResponse { members: Vec::new(), leader_id, error: e.to_string() }));
        }
        let membership = metrics.membership_config.membership().clone();
        let voters: BTreeSet<u64> = membership.voter_ids().collect();
        let me = metrics.id;
        let members = membership
            .nodes()
            .map(|(id, node)| {
                let protocol = if *id == me { Some(PROTOCOL) } else { self.peers.protocols.of(*id) };
                Member { id: *id, addr: node.addr.clone(), voter: voters.contains(id), protocol: protocol.unwrap_or(0) }
            })
            .collect();
        Ok(Response::new(MembershipResponse { members, leader_id, error: String::new() }))
    }

    async fn read_index(&self, req: Request<ReadIndexRequest>) -> Result<Response<ReadIndexResponse>, Status> {
        Ok(Response::new(read_index::answer(&self.raft, &req.into_inner()).await))
    }
}

/// A peer that has not finished its TLS handshake by then is dropped.
const HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Serves the peer service on `listener` until `shutdown` completes; over mutual TLS with the
/// certificates in force when each connection arrives.
pub(crate) async fn serve(
    raft: Raft,
    peers: Peers,
    snapshots: Snapshots,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), String> {
    let tls = peers.tls().is_some();
    let service = RaftServer::new(Service { raft, peers: peers.clone(), snapshots }).max_decoding_message_size(MAX_MESSAGE).max_encoding_message_size(MAX_MESSAGE);
    let service = InterceptedService::new(service, protocol::admit);
    // Small RPCs (votes, heartbeats, single appends) must not wait for Nagle's algorithm.
    let connections = tokio_stream::wrappers::TcpListenerStream::new(listener).map(|conn| {
        let conn = conn?;
        conn.set_nodelay(true)?;
        Ok::<_, std::io::Error>(conn)
    });
    let server = tonic::transport::Server::builder().add_service(service);
    if !tls {
        return server.serve_with_incoming_shutdown(connections, shutdown).await.map_err(|e| e.to_string());
    }
    server.serve_with_incoming_shutdown(handshakes(connections, peers), shutdown).await.map_err(|e| e.to_string())
}

/// The connections that complete a TLS handshake, each shaken on its own task.
fn handshakes(
    mut connections: impl futures::Stream<Item = std::io::Result<tokio::net::TcpStream>> + Unpin + Send + 'static,
    peers: Peers,
) -> impl futures::Stream<Item = std::io::Result<tokio_rustls::server::TlsStream<tokio::net::TcpStream>>> {
    let (tx, rx) = tokio::sync::mpsc::channel(16);
    tokio::spawn(async move {
        // Until the server stops taking connections (then the listener closes with this task).
        loop {
            let conn = tokio::select! {
                conn = connections.next() => conn,
                () = tx.closed() => return,
            };
            let Some(conn) = conn else { return };
            let Ok(conn) = conn else { continue };
            let Some(config) = peers.tls().and_then(|t| t.server_config().ok()) else { continue };
            let tx = tx.clone();
            tokio::spawn(async move {
                match tokio::time::timeout(HANDSHAKE_TIMEOUT, tokio_rustls::TlsAcceptor::from(config).accept(conn)).await {
                    Ok(Ok(stream)) => {
                        let _ = tx.send(Ok(stream)).await;
                    }
                    Ok(Err(e)) => tracing::debug!(error = %e, "a peer's TLS handshake failed"),
                    Err(_) => tracing::debug!("a peer's TLS handshake timed out"),
                }
            });
        }
    });
    tokio_stream::wrappers::ReceiverStream::new(rx)
}

/// The answers of a standing stream.
type Piped<A> = std::pin::Pin<Box<dyn futures::Stream<Item = Result<A, Status>> + Send>>;

/// The messages of a stream until it ends or fails.
fn messages<T>(req: Request<Streaming<T>>) -> impl futures::Stream<Item = T> {
    req.into_inner().scan((), |_, message| futures::future::ready(message.ok()))
}

/// How many requests of one standing stream are handled at once (a follower sends at most this
/// many batches before the first is answered).
const IN_FLIGHT: usize = 4;

/// Proposes a batch of forwarded transactions together, so that they share log flushes.
async fn propose_all(raft: Raft, batch: ForwardRequest) -> ForwardResponse {
    let results = futures::future::join_all(batch.txns.iter().map(|txn| propose(&raft, txn))).await;
    ForwardResponse { results }
}
