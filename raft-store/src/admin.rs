//! The client side of membership administration: what `apiserver member ...` sends to a
//! replica's peer endpoint, authenticated by a peer certificate of the cluster CA.

use crate::peer::{PeerTls, Peers};

/// A member of the group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub id: u64,
    pub addr: String,
    pub voter: bool,
    /// The peer protocol it speaks, as the answering replica last heard.
    pub protocol: Option<u32>,
}

/// A change to the members; `List` changes nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MembershipChange {
    List,
    /// Add a node as a learner (it replicates but does not vote) and wait until it caught up.
    AddLearner { id: u64, addr: String },
    /// Make a learner a voter.
    Promote(u64),
    /// Remove a node from the group.
    Remove(u64),
}

/// Sends `change` to the replica at `endpoint` (`host:port` of its peer listener); answers the
/// members afterwards and the leader's id.
pub async fn membership(endpoint: &str, tls: PeerTls, change: MembershipChange) -> Result<(Vec<Member>, u64), String> {
    let (action, node_id, addr) = match change {
        MembershipChange::List => ("", 0, String::new()),
        MembershipChange::AddLearner { id, addr } => ("add-learner", id, addr),
        MembershipChange::Promote(id) => ("promote", id, String::new()),
        MembershipChange::Remove(id) => ("remove", id, String::new()),
    };
    let mut client = Peers::new(Some(tls)).client(0, endpoint)?;
    let req = proto::raft::MembershipRequest { action: action.into(), node_id, addr };
    let resp = client.membership(req).await.map_err(|s| s.message().to_string())?.into_inner();
    if !resp.error.is_empty() {
        return Err(resp.error);
    }
    let members = resp.members.into_iter().map(|m| Member { id: m.id, addr: m.addr, voter: m.voter, protocol: (m.protocol > 0).then_some(m.protocol) }).collect();
    Ok((members, resp.leader_id))
}
