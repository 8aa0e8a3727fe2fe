//! The Service node port repair controller (kube-apiserver's `start-service-nodeport-repair`), on
//! the Raft leader: every node port a Service holds has its reservation, and a reservation no
//! Service holds in three passes running (as Kubernetes counts leaks, so that a write in flight
//! is never mistaken for one) is released. A Service and its reservations are written in one transaction,
//! so they drift apart only through data written before this server reserved them or by hand;
//! each repair is one transaction conditioned on the Service as it was read, so a Service
//! changed meanwhile is looked at again at the next pass. A port two Services hold is logged,
//! as Kubernetes does: one of them must be recreated.
//!
//! Every Service is checked when leadership begins and every three minutes, as Kubernetes does;
//! Service changes alone start no pass.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::Duration;

use bytes::Bytes;
use raft_store::{Action, Cond, Event, Object, Op, Txn, TxnResult};
use serde_json::{json, Value};

use crate::context::Context;
use crate::controllers::leading::LeaderController;
use machinery::error::{ApiError, ApiResult};
use machinery::registry::{self, ResourceInfo};
use serving::nodeports::{self, NodePorts};

/// How often every Service is checked.
const RECHECK: Duration = Duration::from_secs(180);
/// In how many passes running a reservation must be held by no Service before it is released.
const LEAK_PASSES: u32 = 3;

fn services() -> &'static ResourceInfo {
    registry::lookup("", "v1", "services").expect("services are served")
}

/// The condition that the Service at `key` (as read at `stored`) is still what it was.
fn unchanged(key: &str, stored: Option<&Object>) -> Op {
    let cond = stored.map_or(Cond::Absent, |o| Cond::Rev(o.rev));
    Op { key: key.to_string(), cond, action: Action::Check }
}

/// The repair, with how many passes running each unheld reservation has been seen.
#[derive(Default)]
pub struct NodePortRepair {
    leaks: Mutex<HashMap<u16, u32>>,
}

#[async_trait::async_trait]
impl LeaderController for NodePortRepair {
    fn name(&self) -> &'static str {
        "service-nodeport-repair"
    }

    fn watches(&self) -> Vec<String> {
        vec![services().key_prefix()]
    }

    /// Passes run on the recheck only.
    async fn changed(&self, _: &Context, _: &Event) -> ApiResult<bool> {
        Ok(false)
    }

    fn recheck(&self) -> Option<Duration> {
        Some(RECHECK)
    }

    async fn sync(&self, ctx: &Context) -> ApiResult<()> {
        let informer = ctx.informers.informer(&services().key_prefix()).await;
        // Each port by the Services holding it (their keys and as read).
        let mut holders: BTreeMap<u16, Vec<(String, Object)>> = BTreeMap::new();
        for stored in informer.list() {
            let service = machinery::stored::parse(&stored)?;
            let key = services().key(service["metadata"]["namespace"].as_str(), service["metadata"]["name"].as_str().unwrap_or_default());
            for port in nodeports::ports_of(&service) {
                holders.entry(port).or_default().push((key.clone(), stored.clone()));
            }
        }
        let (_, reservations) = ctx.store.cache().entries(nodeports::PREFIX);
        let reserved: BTreeMap<u16, Object> =
            reservations.into_iter().filter_map(|(key, o)| key.strip_prefix(nodeports::PREFIX).and_then(|p| p.parse().ok()).map(|p| (p, o))).collect();
        for (port, holding) in &holders {
            if holding.len() > 1 {
                let names: Vec<&str> = holding.iter().map(|(k, _)| k.as_str()).collect();
                tracing::warn!(port, services = ?names, "node port held by several Services: recreate all but one");
            }
            if reserved.contains_key(port) {
                continue;
            }
            let (key, stored) = &holding[0];
            let service = machinery::stored::parse(stored)?;
            let owner = json!({"namespace": service["metadata"]["namespace"], "name": service["metadata"]["name"]});
            let reservation = Bytes::from(serde_json::to_vec(&owner).map_err(ApiError::internal)?);
            let txn = Txn::new(vec![Op { key: NodePorts::key(*port), cond: Cond::Absent, action: Action::Put(reservation) }, unchanged(key, Some(stored))]);
            if let TxnResult::Ok { .. } = ctx.store.write(txn).await? {
                tracing::info!(port, service = %key, "node port had no reservation: restored");
            }
        }
        let unheld: Vec<(&u16, &Object)> = reserved.iter().filter(|(port, _)| !holders.contains_key(port)).collect();
        let due: Vec<(&u16, &Object)> = {
            let mut leaks = self.leaks.lock().unwrap_or_else(|e| e.into_inner());
            leaks.retain(|port, _| unheld.iter().any(|(p, _)| *p == port));
            unheld.into_iter().filter(|(port, _)| {
                let seen = leaks.entry(**port).or_insert(0);
                *seen += 1;
                *seen >= LEAK_PASSES
            }).collect()
        };
        for (port, stored) in due {
            // Conditioned on the Service it names, which a write may be giving the port now.
            let owner: Value = serde_json::from_slice(&stored.data).unwrap_or_default();
            let key = services().key(owner["namespace"].as_str(), owner["name"].as_str().unwrap_or_default());
            let current = informer.get(&key);
            let txn = Txn::new(vec![Op { key: NodePorts::key(*port), cond: Cond::Rev(stored.rev), action: Action::Delete }, unchanged(&key, current.as_ref())]);
            if let TxnResult::Ok { .. } = ctx.store.write(txn).await? {
                tracing::info!(port, "node port reserved for no Service: released");
                self.leaks.lock().unwrap_or_else(|e| e.into_inner()).remove(port);
            }
        }
        Ok(())
    }
}
