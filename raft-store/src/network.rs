//! The Raft network between replicas. A single-member group never sends an RPC; every peer
//! is reported unreachable until the replication transport is configured.

use std::future::Future;
use std::io::Cursor;

use openraft::errors::{RPCError, ReplicationClosed, StreamingError, Unreachable};
use openraft::network::{RPCOption, RaftNetworkFactory, RaftNetworkV2};
use openraft::raft::{AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, VoteRequest, VoteResponse};
use openraft::BasicNode;

use crate::types::{NodeId, TypeConfig};

type Vote = openraft::alias::VoteOf<TypeConfig>;
type Snapshot = openraft::alias::SnapshotOf<TypeConfig, Cursor<Vec<u8>>>;

/// Creates clients to peers.
#[derive(Clone, Default)]
pub struct Network;

/// A client to one peer.
pub struct PeerClient {
    target: NodeId,
}

impl PeerClient {
    fn unreachable(&self) -> Unreachable<TypeConfig> {
        Unreachable::from_string(format!("no transport to node {}", self.target))
    }
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = PeerClient;

    async fn new_client(&mut self, target: NodeId, _node: &BasicNode) -> PeerClient {
        PeerClient { target }
    }
}

impl RaftNetworkV2<TypeConfig> for PeerClient {
    type SnapshotData = Cursor<Vec<u8>>;

    async fn append_entries(
        &mut self,
        _rpc: AppendEntriesRequest<TypeConfig>,
        _option: RPCOption,
    ) -> Result<AppendEntriesResponse<TypeConfig>, RPCError<TypeConfig>> {
        Err(RPCError::Unreachable(self.unreachable()))
    }

    async fn vote(
        &mut self,
        _rpc: VoteRequest<TypeConfig>,
        _option: RPCOption,
    ) -> Result<VoteResponse<TypeConfig>, RPCError<TypeConfig>> {
        Err(RPCError::Unreachable(self.unreachable()))
    }

    async fn full_snapshot(
        &mut self,
        _vote: Vote,
        _snapshot: Snapshot,
        _cancel: impl Future<Output = ReplicationClosed> + Send + 'static,
        _option: RPCOption,
    ) -> Result<SnapshotResponse<TypeConfig>, StreamingError<TypeConfig>> {
        Err(StreamingError::Unreachable(self.unreachable()))
    }
}
