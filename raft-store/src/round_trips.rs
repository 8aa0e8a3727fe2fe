//! Round trips to the other members, probed every five seconds on the peer channels as etcd
//! probes its peers, for `etcd_network_peer_round_trip_time_seconds`; each answer also says the
//! peer protocol the member speaks (`protocol`). A probe is one small call; a peer of an earlier
//! version that does not know it answers `Unimplemented`, which is a round trip all the same.
//! Probes that fail or time out are not counted, as in etcd.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use proto::raft::RaftPayload;

use crate::peer::Peers;
use crate::protocol;
use crate::timings::{TimingStats, Timings, BUCKETS};
use crate::types::{NodeId, Raft};
use openraft::async_runtime::WatchReceiver;

/// etcd's buckets: 0.1 ms doubling to about 3.3 s.
pub const RTT_BUCKETS: [f64; BUCKETS] =
    [0.0001, 0.0002, 0.0004, 0.0008, 0.0016, 0.0032, 0.0064, 0.0128, 0.0256, 0.0512, 0.1024, 0.2048, 0.4096, 0.8192, 1.6384, 3.2768];

/// How often each peer is probed, and how long a probe may take.
const EVERY: Duration = Duration::from_secs(5);
const WITHIN: Duration = Duration::from_secs(2);

/// The round trips measured to each current peer since this node started.
#[derive(Debug, Default)]
pub struct RoundTrips {
    by_peer: Mutex<BTreeMap<NodeId, Arc<Timings>>>,
}

impl RoundTrips {
    /// Each current peer's round trips, by node id.
    pub fn read(&self) -> Vec<(NodeId, TimingStats)> {
        self.by_peer.lock().unwrap_or_else(|e| e.into_inner()).iter().map(|(id, t)| (*id, t.read())).collect()
    }

    fn of(&self, peer: NodeId) -> Arc<Timings> {
        self.by_peer.lock().unwrap_or_else(|e| e.into_inner()).entry(peer).or_insert_with(|| Arc::new(Timings::new(RTT_BUCKETS))).clone()
    }

    /// Forgets the peers that are no longer members.
    fn keep(&self, members: &[NodeId]) {
        self.by_peer.lock().unwrap_or_else(|e| e.into_inner()).retain(|id, _| members.contains(id));
    }
}

/// Probes every member but `me`, every [`EVERY`], while `round_trips` has another owner (the
/// store).
pub(crate) fn start(round_trips: Arc<RoundTrips>, peers: Peers, raft: Raft, me: NodeId) {
    tokio::spawn(async move {
        let metrics = raft.metrics();
        let mut tick = tokio::time::interval(EVERY);
        // What the cluster was last seen to speak; this build's until a member says otherwise.
        let mut cluster_protocol = protocol::PROTOCOL;
        while Arc::strong_count(&round_trips) > 1 {
            tick.tick().await;
            let members: Vec<(NodeId, String)> = {
                let m = metrics.borrow_watched();
                m.membership_config.membership().nodes().map(|(id, node)| (*id, node.addr.clone())).collect()
            };
            let ids: Vec<NodeId> = members.iter().map(|(id, _)| *id).collect();
            round_trips.keep(&ids);
            peers.protocols.keep(&ids);
            // All peers at once: a slow or unreachable one delays no other's probe.
            let probes = members.into_iter().filter(|(id, _)| *id != me).filter_map(|(id, addr)| {
                let mut client = peers.client(id, &addr).ok()?;
                let round_trips = round_trips.clone();
                let protocols = peers.protocols.clone();
                Some(async move {
                    let started = Instant::now();
                    let spoken = match tokio::time::timeout(WITHIN, client.probe(RaftPayload::default())).await {
                        Ok(Ok(answer)) => Some(protocol::answered(&answer.into_inner().payload)),
                        Ok(Err(status)) if status.code() == tonic::Code::Unimplemented => Some(protocol::answered(&[])),
                        _ => None,
                    };
                    if let Some(spoken) = spoken {
                        round_trips.of(id).record(started.elapsed());
                        protocols.record(id, spoken);
                    }
                })
            });
            futures::future::join_all(probes).await;
            let now = peers.protocols.cluster(me, &ids);
            if now != cluster_protocol {
                tracing::info!(protocol = now, this_node = protocol::PROTOCOL, "the cluster speaks peer protocol {now}");
                cluster_protocol = now;
            }
        }
    });
}
