//! The leader's answer to a follower's read-index request.
//!
//! A read index must be at least every entry committed before the read began, which holds if
//! this node still led after the read began: no later leader can have committed anything yet.
//! openraft confirms that with a heartbeat round to a quorum. A request from a follower whose
//! vote still named this leader when the read asked confirms it too, for that follower: a later
//! leader (openraft orders leader ids by term, then node) needs the votes of a quorum, and this
//! follower had not given its vote then, nor had the leader, which still holds its own when it
//! answers. Where the two form a quorum of every configuration (a follower of a 3-voter group),
//! the heartbeat round is not needed.

use std::collections::BTreeSet;

use openraft::{RaftState, ReadPolicy, ServerState};
use proto::raft::{ReadIndexRequest, ReadIndexResponse};

use crate::types::{LeaderId, NodeId, Raft, TypeConfig};

/// What the leader needs to know of its own state to take a follower's word, read in one step
/// inside the Raft core.
#[derive(Debug, Clone, PartialEq)]
struct Leading {
    /// This node's leader id, if it leads with a committed vote.
    leader: Option<LeaderId>,
    /// The leader id that wrote the committed log entry, and its index.
    committed: Option<(LeaderId, u64)>,
    /// The voter sets of the effective configuration (two while joint).
    configs: Vec<BTreeSet<NodeId>>,
}

impl Leading {
    fn of(st: &RaftState<TypeConfig>) -> Leading {
        let vote = st.vote_ref();
        let leads = st.server_state == ServerState::Leader && vote.is_committed();
        Leading {
            leader: leads.then_some(*vote.leader_id()),
            committed: st.local_committed().map(|c| (*c.committed_leader_id(), c.index())),
            configs: st.membership_state.effective().membership().get_joint_config().clone(),
        }
    }

    /// The read index a request from `asker`, whose vote named `voted_for`, settles without a
    /// heartbeat round: the committed index, if this node leads as `voted_for`, has committed an
    /// entry of its own (so its commit covers every earlier leader's), and with `asker` forms a
    /// majority of every configuration.
    fn vouched_by(&self, asker: NodeId, voted_for: LeaderId) -> Option<u64> {
        let me = self.leader?;
        let (writer, index) = self.committed?;
        let quorum = |voters: &BTreeSet<NodeId>| {
            let with = usize::from(voters.contains(&me.node_id)) + usize::from(asker != me.node_id && voters.contains(&asker));
            2 * with > voters.len()
        };
        (voted_for == me && writer == me && self.configs.iter().all(quorum)).then_some(index)
    }
}

/// The read index for `req`: vouched for by the asking follower where it can be, else confirmed
/// by openraft with a quorum.
pub(crate) async fn answer(raft: &Raft, req: &ReadIndexRequest) -> ReadIndexResponse {
    if req.vote_term != 0 {
        let (asker, voted_for) = (req.node_id, LeaderId { term: req.vote_term, node_id: req.vote_leader });
        if let Ok(Some(index)) = raft.with_raft_state(move |st| Leading::of(st).vouched_by(asker, voted_for)).await {
            return ReadIndexResponse { index, error: String::new() };
        }
    }
    match raft.get_read_linearizer(ReadPolicy::ReadIndex).await {
        Ok(linearizer) => ReadIndexResponse { index: linearizer.read_log_id().index(), error: String::new() },
        Err(e) => ReadIndexResponse { index: 0, error: e.to_string() },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(term: u64, node_id: NodeId) -> LeaderId {
        LeaderId { term, node_id }
    }

    /// Node 1 leads in term 5 and has committed index 40, an entry of its own.
    fn leading(voters: &[&[NodeId]]) -> Leading {
        Leading { leader: Some(id(5, 1)), committed: Some((id(5, 1), 40)), configs: voters.iter().map(|c| c.iter().copied().collect()).collect() }
    }

    #[test]
    fn a_follower_of_three_voters_that_follows_the_leader_vouches_for_the_committed_index() {
        assert_eq!(leading(&[&[1, 2, 3]]).vouched_by(2, id(5, 1)), Some(40));
        // Joint: the two are a majority of both configurations.
        assert_eq!(leading(&[&[1, 2, 3], &[1, 2, 4]]).vouched_by(2, id(5, 1)), Some(40));
    }

    #[test]
    fn no_word_is_taken_that_does_not_settle_the_leadership() {
        let three = leading(&[&[1, 2, 3]]);
        // The follower's vote named a later leader (a later term, or the same term and a
        // greater node), an earlier one, or another.
        assert_eq!(three.vouched_by(2, id(6, 1)), None);
        assert_eq!(three.vouched_by(2, id(5, 3)), None);
        assert_eq!(three.vouched_by(2, id(4, 1)), None);
        assert_eq!(three.vouched_by(2, id(5, 2)), None);
        // Not a voter (a learner), or the leader itself: no second member of the quorum.
        assert_eq!(three.vouched_by(4, id(5, 1)), None);
        assert_eq!(three.vouched_by(1, id(5, 1)), None);
        // Five voters need three; joint, a majority of one configuration is not enough.
        assert_eq!(leading(&[&[1, 2, 3, 4, 5]]).vouched_by(2, id(5, 1)), None);
        assert_eq!(leading(&[&[1, 2, 3], &[1, 4, 5]]).vouched_by(2, id(5, 1)), None);
        // Not leading, or no entry of its own committed yet.
        assert_eq!(Leading { leader: None, ..three.clone() }.vouched_by(2, id(5, 1)), None);
        assert_eq!(Leading { committed: Some((id(4, 3), 39)), ..three.clone() }.vouched_by(2, id(5, 1)), None);
        assert_eq!(Leading { committed: None, ..three }.vouched_by(2, id(5, 1)), None);
    }
}
