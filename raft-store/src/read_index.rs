//! The leader's answer to a follower's read-index request.
//!
//! A read index must be at least every entry committed before the read began, which holds if
//! this node still led after the read began: no later leader can have committed anything yet.
//! openraft confirms that with a heartbeat round to a quorum. A request from a follower whose
//! vote was still in the leader's term when the read asked confirms it too, for that follower:
//! a leader of a later term needs the vote of a quorum, and this follower had not given it then,
//! nor had the leader, which is still in its term when it answers. Where the two form a quorum
//! of every configuration (a follower of a 3-voter group), the heartbeat round is not needed.

use std::collections::BTreeSet;

use openraft::{RaftState, ReadPolicy, ServerState};
use proto::raft::{ReadIndexRequest, ReadIndexResponse};

use crate::types::{NodeId, Raft, TypeConfig};

/// What the leader needs to know of its own state to take a follower's word, read in one step
/// inside the Raft core.
#[derive(Debug, Clone, PartialEq)]
struct Leading {
    /// This node, if it leads with a committed vote.
    leader: Option<NodeId>,
    term: u64,
    /// The committed log id's term and index.
    committed: Option<(u64, u64)>,
    /// The voter sets of the effective configuration (two while joint).
    configs: Vec<BTreeSet<NodeId>>,
}

impl Leading {
    fn of(st: &RaftState<TypeConfig>) -> Leading {
        let vote = st.vote_ref();
        let leads = st.server_state == ServerState::Leader && vote.is_committed();
        Leading {
            leader: leads.then_some(vote.leader_id().node_id),
            term: vote.leader_id().term,
            committed: st.local_committed().map(|c| (c.committed_leader_id().term, c.index())),
            configs: st.membership_state.effective().membership().get_joint_config().clone(),
        }
    }

    /// The read index `asker`'s request settles without a heartbeat round: the committed
    /// index, if this node leads in `term`, has committed an entry of that term (so its commit
    /// covers every earlier term's), and with `asker` forms a majority of every configuration.
    fn vouched_by(&self, asker: NodeId, term: u64) -> Option<u64> {
        let me = self.leader?;
        let (committed_term, index) = self.committed?;
        let quorum = |voters: &BTreeSet<NodeId>| {
            let with = usize::from(voters.contains(&me)) + usize::from(asker != me && voters.contains(&asker));
            2 * with > voters.len()
        };
        (term != 0 && term == self.term && committed_term == term && self.configs.iter().all(quorum)).then_some(index)
    }
}

/// The read index for `req`: vouched for by the asking follower where it can be, else confirmed
/// by openraft with a quorum.
pub(crate) async fn answer(raft: &Raft, req: &ReadIndexRequest) -> ReadIndexResponse {
    let (asker, term) = (req.node_id, req.term);
    if term != 0 {
        if let Ok(Some(index)) = raft.with_raft_state(move |st| Leading::of(st).vouched_by(asker, term)).await {
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

    fn leading(voters: &[&[NodeId]]) -> Leading {
        Leading { leader: Some(1), term: 5, committed: Some((5, 40)), configs: voters.iter().map(|c| c.iter().copied().collect()).collect() }
    }

    #[test]
    fn a_follower_of_three_voters_in_the_leaders_term_vouches_for_the_committed_index() {
        assert_eq!(leading(&[&[1, 2, 3]]).vouched_by(2, 5), Some(40));
        // Joint: the two are a majority of both configurations.
        assert_eq!(leading(&[&[1, 2, 3], &[1, 2, 4]]).vouched_by(2, 5), Some(40));
    }

    #[test]
    fn no_word_is_taken_that_does_not_settle_the_leadership() {
        let three = leading(&[&[1, 2, 3]]);
        // The follower voted in a later term, or saw none, or an older one.
        assert_eq!(three.vouched_by(2, 6), None);
        assert_eq!(three.vouched_by(2, 0), None);
        assert_eq!(three.vouched_by(2, 4), None);
        // Not a voter (a learner), or the leader itself: no second member of the quorum.
        assert_eq!(three.vouched_by(4, 5), None);
        assert_eq!(three.vouched_by(1, 5), None);
        // Five voters need three; joint, a majority of one configuration is not enough.
        assert_eq!(leading(&[&[1, 2, 3, 4, 5]]).vouched_by(2, 5), None);
        assert_eq!(leading(&[&[1, 2, 3], &[1, 4, 5]]).vouched_by(2, 5), None);
        // Not leading, or not yet committed an entry of its term.
        assert_eq!(Leading { leader: None, ..three.clone() }.vouched_by(2, 5), None);
        assert_eq!(Leading { committed: Some((4, 39)), ..three.clone() }.vouched_by(2, 5), None);
        assert_eq!(Leading { committed: None, ..three }.vouched_by(2, 5), None);
    }
}
