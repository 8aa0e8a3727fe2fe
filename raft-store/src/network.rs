//! The Raft network between replicas: openraft's RPCs sent over gRPC (`proto`), each message
//! CBOR-encoded; snapshots streamed in chunks.

use std::future::Future;
use std::io::Cursor;

use openraft::errors::{NetworkError, RPCError, RaftError, ReplicationClosed, StreamingError, Unreachable};
use openraft::network::{RPCOption, RaftNetworkFactory, RaftNetworkV2};
use openraft::raft::{AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, VoteRequest, VoteResponse};
use openraft::BasicNode;
use proto::raft::{RaftPayload, SnapshotChunk};
use serde::{Deserialize, Serialize};

use crate::peer::{decode, encode, Peers};
use crate::types::{NodeId, TypeConfig};

pub(crate) type Vote = openraft::alias::VoteOf<TypeConfig>;
type Snapshot = openraft::alias::SnapshotOf<TypeConfig, Cursor<Vec<u8>>>;
pub(crate) type SnapshotMeta = openraft::alias::SnapshotMetaOf<TypeConfig>;

/// Bytes of snapshot data per streamed chunk.
const SNAPSHOT_CHUNK: usize = 1 << 20;

/// The first chunk of a streamed snapshot: who sends it and what it is.
#[derive(Serialize, Deserialize)]
pub(crate) struct SnapshotHeader {
    pub vote: Vote,
    pub meta: SnapshotMeta,
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
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = PeerClient;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> PeerClient {
        PeerClient { target, addr: node.addr.clone(), peers: self.peers.clone() }
    }
}

impl PeerClient {
    fn unreachable(&self, why: impl std::fmt::Display) -> Unreachable<TypeConfig> {
        Unreachable::from_string(format!("node {} at {}: {why}", self.target, self.addr))
    }

    /// One unary call: encode, send, decode the remote `Result`.
    async fn call<Req: Serialize, Resp: for<'de> Deserialize<'de>>(
        &self,
        req: &Req,
        send: impl AsyncFnOnce(proto::raft::raft_client::RaftClient<tonic::transport::Channel>, RaftPayload) -> Result<tonic::Response<RaftPayload>, tonic::Status>,
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
}

impl RaftNetworkV2<TypeConfig> for PeerClient {
    type SnapshotData = Cursor<Vec<u8>>;

    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        _option: RPCOption,
    ) -> Result<AppendEntriesResponse<TypeConfig>, RPCError<TypeConfig>> {
        let (target, last, commit) = (self.target, rpc.entries.last().map(|e| e.log_id.index()), rpc.leader_commit.map(|c| c.index()));
        tracing::debug!(target, ?last, ?commit, "append sent");
        let resp = self.call(&rpc, async |mut c, p| c.append_entries(p).await).await;
        tracing::debug!(target, ?last, ?commit, "append acknowledged");
        resp
    }

    async fn vote(&mut self, rpc: VoteRequest<TypeConfig>, _option: RPCOption) -> Result<VoteResponse<TypeConfig>, RPCError<TypeConfig>> {
        self.call(&rpc, async |mut c, p| c.vote(p).await).await
    }

    async fn full_snapshot(
        &mut self,
        vote: Vote,
        snapshot: Snapshot,
        cancel: impl Future<Output = ReplicationClosed> + Send + 'static,
        _option: RPCOption,
    ) -> Result<SnapshotResponse<TypeConfig>, StreamingError<TypeConfig>> {
        let mut client = self.peers.client(self.target, &self.addr).map_err(|e| StreamingError::Unreachable(self.unreachable(e)))?;
        let header = encode(&SnapshotHeader { vote, meta: snapshot.meta.clone() })
            .map_err(|e| StreamingError::Network(NetworkError::from_string(e)))?;
        let data = snapshot.snapshot.into_inner();
        let mut chunks = vec![SnapshotChunk { header, data: Vec::new() }];
        chunks.extend(data.chunks(SNAPSHOT_CHUNK).map(|c| SnapshotChunk { header: Vec::new(), data: c.to_vec() }));
        let send = client.install_snapshot(futures::stream::iter(chunks));
        let resp = tokio::select! {
            closed = cancel => return Err(StreamingError::Closed(closed)),
            resp = send => resp.map_err(|s| StreamingError::Unreachable(self.unreachable(s.message())))?,
        };
        let result: Result<SnapshotResponse<TypeConfig>, RaftError<TypeConfig>> =
            decode(&resp.into_inner().payload).map_err(|e| StreamingError::Network(NetworkError::from_string(e)))?;
        result.map_err(|e| StreamingError::Unreachable(self.unreachable(e)))
    }
}
