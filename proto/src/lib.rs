//! Wire types shared by the replicas: the Raft transport and write forwarding (gRPC via tonic).

/// `apiserver.raft.v1`: Raft RPCs, snapshot streaming, write forwarding and read index.
pub mod raft {
    tonic::include_proto!("apiserver.raft.v1");
}
