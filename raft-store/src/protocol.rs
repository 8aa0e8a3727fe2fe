//! The peer protocol's version. Every call between replicas carries the version its sender
//! speaks (the `apiserver-peer-protocol` metadata); a replica refuses a caller older than the
//! oldest version it interoperates with, saying what to do, and answers a probe with its own
//! version, so that each node knows what every member speaks and what the cluster speaks (the
//! lowest version among its members). A release that changes a message sends the new form only
//! once the cluster speaks the version that introduced it, so that a rolling upgrade can pause
//! at any node.
//!
//! Builds from before the version was carried send none and answer probes with an empty payload
//! (or, older still, `Unimplemented`): they speak version 1.
//!
//! | version | what it added |
//! |---|---|
//! | 1 | every message of `proto/raft.proto` before versioning |
//! | 2 | the version in each call's metadata and in the probe's answer; `Member.protocol` |
//! | 3 | `PreVote`: a follower asks before it stands for election (an earlier peer's answer counts as a grant) |

use std::collections::BTreeMap;
use std::sync::Mutex;

use tonic::metadata::{MetadataMap, MetadataValue};
use tonic::{Request, Status};

use crate::types::NodeId;

/// The version this build speaks.
pub const PROTOCOL: u32 = 3;

/// The oldest version this build interoperates with: a rolling upgrade may start from any
/// release that speaks it.
pub const OLDEST_PEER: u32 = 1;

/// What a peer that does not say speaks.
const UNSAID: u32 = 1;

/// The metadata key of the caller's version.
const HEADER: &str = "apiserver-peer-protocol";

/// Stamps this build's version on every outgoing call.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Stamp;

impl tonic::service::Interceptor for Stamp {
    fn call(&mut self, mut req: Request<()>) -> Result<Request<()>, Status> {
        req.metadata_mut().insert(HEADER, MetadataValue::from(PROTOCOL));
        Ok(req)
    }
}

/// The version a caller speaks, from its call's metadata.
fn spoken(metadata: &MetadataMap) -> Result<u32, Status> {
    match metadata.get(HEADER) {
        None => Ok(UNSAID),
        Some(v) => v
            .to_str()
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .ok_or_else(|| Status::invalid_argument(format!("{HEADER}: not a protocol version: {v:?}"))),
    }
}

/// Admits a call whose sender speaks a version this build interoperates with.
pub(crate) fn admit(req: Request<()>) -> Result<Request<()>, Status> {
    let theirs = spoken(req.metadata())?;
    if theirs < OLDEST_PEER {
        return Err(Status::failed_precondition(format!(
            "the calling replica speaks peer protocol {theirs}, and this one ({PROTOCOL}) interoperates with {OLDEST_PEER} and later: \
             upgrade the caller to a release that speaks at least {OLDEST_PEER} (one release at a time) before it joins"
        )));
    }
    Ok(req)
}

/// A probe's answer: this build's version, CBOR-encoded.
pub(crate) fn probe_answer() -> Vec<u8> {
    crate::peer::encode(&PROTOCOL).unwrap_or_default()
}

/// The version a peer's probe answer says: an empty answer is a build from before versioning.
pub(crate) fn answered(payload: &[u8]) -> u32 {
    if payload.is_empty() {
        return UNSAID;
    }
    crate::peer::decode(payload).unwrap_or(UNSAID)
}

/// What each peer speaks, as its latest probe answered.
#[derive(Debug, Default)]
pub(crate) struct Protocols {
    by_peer: Mutex<BTreeMap<NodeId, u32>>,
}

impl Protocols {
    /// What `peer` speaks, once a probe has answered.
    pub(crate) fn of(&self, peer: NodeId) -> Option<u32> {
        self.by_peer.lock().unwrap_or_else(|e| e.into_inner()).get(&peer).copied()
    }

    pub(crate) fn record(&self, peer: NodeId, version: u32) {
        self.by_peer.lock().unwrap_or_else(|e| e.into_inner()).insert(peer, version);
    }

    /// Forgets the peers that are no longer members.
    pub(crate) fn keep(&self, members: &[NodeId]) {
        self.by_peer.lock().unwrap_or_else(|e| e.into_inner()).retain(|id, _| members.contains(id));
    }

    /// What the cluster of `members` speaks, seen from `me`: the lowest version among them, a
    /// member not heard from yet counting as the oldest this build takes.
    pub(crate) fn cluster(&self, me: NodeId, members: &[NodeId]) -> u32 {
        members.iter().map(|id| if *id == me { PROTOCOL } else { self.of(*id).unwrap_or(OLDEST_PEER) }).min().unwrap_or(PROTOCOL)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::service::Interceptor;

    fn call(version: Option<&str>) -> Request<()> {
        let mut req = Request::new(());
        if let Some(v) = version {
            req.metadata_mut().insert(HEADER, v.parse().unwrap());
        }
        req
    }

    #[test]
    fn a_stamped_call_is_admitted_and_so_is_one_from_before_versions() {
        let stamped = Stamp.call(Request::new(())).unwrap();
        assert_eq!(spoken(stamped.metadata()).unwrap(), PROTOCOL);
        assert!(admit(stamped).is_ok());
        assert_eq!(spoken(call(None).metadata()).unwrap(), 1);
        assert!(admit(call(None)).is_ok());
        // A newer caller speaks down to this one; it is admitted.
        assert!(admit(call(Some(&(PROTOCOL + 1).to_string()))).is_ok());
    }

    #[test]
    fn a_caller_too_old_or_unreadable_is_refused_with_what_to_do() {
        let refused = admit(call(Some("0"))).unwrap_err();
        assert_eq!(refused.code(), tonic::Code::FailedPrecondition);
        assert!(refused.message().contains("speaks peer protocol 0") && refused.message().contains("upgrade the caller"), "{}", refused.message());
        let junk = admit(call(Some("two"))).unwrap_err();
        assert_eq!(junk.code(), tonic::Code::InvalidArgument);
    }

    #[test]
    fn a_probe_answer_reads_back_and_an_empty_one_is_version_one() {
        assert_eq!(answered(&probe_answer()), PROTOCOL);
        assert_eq!(answered(&[]), 1);
    }

    #[test]
    fn the_cluster_speaks_its_lowest_member_and_an_unheard_one_counts_as_the_oldest() {
        let p = Protocols::default();
        assert_eq!(p.cluster(1, &[1]), PROTOCOL);
        assert_eq!(p.cluster(1, &[1, 2, 3]), OLDEST_PEER);
        p.record(2, PROTOCOL);
        p.record(3, PROTOCOL);
        assert_eq!(p.cluster(1, &[1, 2, 3]), PROTOCOL);
        p.record(3, 1);
        assert_eq!(p.cluster(1, &[1, 2, 3]), 1);
        p.keep(&[1, 2]);
        assert_eq!(p.of(3), None);
        assert_eq!(p.cluster(1, &[1, 2]), PROTOCOL);
    }
}
