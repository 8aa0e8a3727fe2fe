//! The Service IP repair controller (kube-apiserver's `start-service-ip-repair-controllers`), on
//! the Raft leader: every cluster IP a Service holds has its IPAddress, and an IPAddress the
//! allocator made whose Service no longer holds its IP is released. A Service and its
//! IPAddress are written in one transaction, so they drift apart only when someone deletes an
//! IPAddress or makes one by hand; each repair is one transaction conditioned on the Service as
//! it was read, so a Service changed meanwhile is looked at again instead.
//!
//! IPAddress changes are followed through the shared informers; every Service is checked when
//! leadership begins and every three minutes, as Kubernetes does.

use std::time::Duration;

use bytes::Bytes;
use raft_store::{Action, Cond, Event, EventType, Object, Op, Txn, TxnResult};
use serde_json::Value;

use crate::context::Context;
use machinery::error::{ApiError, ApiResult};
use crate::loopback::Client;
use serving::ipalloc::ServiceIps;
use crate::controllers::leading::LeaderController;
use machinery::registry::{self, ResourceInfo};

/// The label the allocator puts on the IPAddresses it makes; others are never released here.
const MANAGED_BY: (&str, &str) = ("ipaddress.kubernetes.io/managed-by", "ipallocator.k8s.io");
/// How often every Service is checked.
const RECHECK: Duration = Duration::from_secs(180);

fn services() -> &'static ResourceInfo {
    registry::lookup("", "v1", "services").expect("services are served")
}

fn ip_addresses() -> &'static ResourceInfo {
    registry::lookup("networking.k8s.io", "v1", "ipaddresses").expect("ipaddresses are served")
}

pub struct IpRepair {
    pub client: Client,
}

/// The cluster IPs a Service holds.
fn held(service: &Value) -> Vec<&str> {
    service["spec"]["clusterIPs"].as_array().into_iter().flatten().filter_map(Value::as_str).filter(|ip| !ip.is_empty() && *ip != "None").collect()
}

/// The Service an IPAddress names as its parent: its storage key.
fn parent_key(ip_address: &Value) -> Option<String> {
    let parent = &ip_address["spec"]["parentRef"];
    if parent["resource"] != "services" || parent["group"].as_str().is_some_and(|g| !g.is_empty()) {
        return None;
    }
    Some(services().key(parent["namespace"].as_str(), parent["name"].as_str()?))
}

/// The condition that `service` (as read at `stored`) is still what it was.
fn unchanged(key: &str, stored: Option<&Object>) -> Op {
    let cond = stored.map_or(Cond::Absent, |o| Cond::Rev(o.rev));
    Op { key: key.to_string(), cond, action: Action::Check }
}

impl IpRepair {
    /// Gives `ip`, which the Service at `key` holds, back its IPAddress if it has none.
    async fn restore(&self, ctx: &Context, key: &str, stored: &Object, service: &Value, ip: &str) -> ApiResult<()> {
        let ip_key = ServiceIps::key(ip);
        if ctx.informers.informer(&ip_addresses().key_prefix()).await.get(&ip_key).is_some() {
            return Ok(());
        }
        let namespace = service["metadata"]["namespace"].as_str().unwrap_or_default();
        let name = service["metadata"]["name"].as_str().unwrap_or_default();
        let reservation = Bytes::from(serde_json::to_vec(&ServiceIps::reservation(ip, namespace, name)).map_err(ApiError::internal)?);
        let txn = Txn::new(vec![Op { key: ip_key, cond: Cond::Absent, action: Action::Put(reservation) }, unchanged(key, Some(stored))]);
        if let TxnResult::Ok { .. } = ctx.store.write(txn).await? {
            tracing::info!(ip, service = %format!("{namespace}/{name}"), "cluster IP had no IPAddress: restored");
        }
        Ok(())
    }

    /// Releases the IPAddress at `ip_key` if the allocator made it and its Service does not
    /// hold its IP.
    async fn release_if_leaked(&self, ctx: &Context, ip_key: &str, stored: &Object) -> ApiResult<()> {
        let ip_address = machinery::stored::parse(stored)?;
        if ip_address["metadata"]["labels"][MANAGED_BY.0] != MANAGED_BY.1 {
            return Ok(());
        }
        let ip = ip_address["metadata"]["name"].as_str().unwrap_or_default();
        let parent = parent_key(&ip_address);
        let service = match &parent {
            Some(key) => ctx.informers.informer(&services().key_prefix()).await.get(key),
            None => None,
        };
        if let Some(s) = &service {
            if held(&machinery::stored::parse(s)?).contains(&ip) {
                return Ok(());
            }
        }
        let mut ops = vec![Op { key: ip_key.to_string(), cond: Cond::Rev(stored.rev), action: Action::Delete }];
        ops.extend(parent.map(|key| unchanged(&key, service.as_ref())));
        if let TxnResult::Ok { .. } = ctx.store.write(Txn::new(ops)).await? {
            tracing::info!(ip, "IPAddress held by no Service: released");
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl LeaderController for IpRepair {
    fn name(&self) -> &'static str {
        "service-ip-repair"
    }

    fn watches(&self) -> Vec<String> {
        vec![ip_addresses().key_prefix()]
    }

    fn recheck(&self) -> Option<Duration> {
        Some(RECHECK)
    }

    async fn sync(&self, ctx: &Context) -> ApiResult<()> {
        for stored in ctx.informers.informer(&services().key_prefix()).await.list() {
            let service = machinery::stored::parse(&stored)?;
            let key = services().key(service["metadata"]["namespace"].as_str(), service["metadata"]["name"].as_str().unwrap_or_default());
            for ip in held(&service) {
                self.restore(ctx, &key, &stored, &service, ip).await?;
            }
        }
        let prefix = ip_addresses().key_prefix();
        for stored in ctx.informers.informer(&prefix).await.list() {
            let name = machinery::stored::parse(&stored)?["metadata"]["name"].as_str().unwrap_or_default().to_string();
            self.release_if_leaked(ctx, &format!("{prefix}{name}"), &stored).await?;
        }
        Ok(())
    }

    async fn changed(&self, ctx: &Context, event: &Event) -> ApiResult<bool> {
        if event.kind != EventType::Deleted {
            self.release_if_leaked(ctx, &event.key, &event.object).await?;
            return Ok(false);
        }
        // A deleted IPAddress whose Service still holds the IP comes back.
        let Some(key) = parent_key(&machinery::stored::parse(&event.object)?) else { return Ok(false) };
        let ip = event.key.strip_prefix(&ip_addresses().key_prefix()).unwrap_or_default();
        if let Some(stored) = ctx.informers.informer(&services().key_prefix()).await.get(&key) {
            let service = machinery::stored::parse(&stored)?;
            if held(&service).contains(&ip) {
                self.restore(ctx, &key, &stored, &service, ip).await?;
            }
        }
        Ok(false)
    }
}
