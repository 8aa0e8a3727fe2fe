//! This replica's identity Lease, as every kube-apiserver keeps one: `kube-system/apiserver-…`,
//! labelled `apiserver.kubernetes.io/identity: kube-apiserver`, renewed every 10 seconds while
//! the replica runs (clients count the API servers of a cluster by these leases).

use std::time::Duration;

use serde_json::json;
use sha2::{Digest, Sha256};

use crate::context::Context;
use crate::loopback::request;
use machinery::error::{ApiError, ApiResult};
use crate::loopback::Client;
use machinery::patch::PatchKind;
use machinery::registry;
use access::request::Verb;

const RENEW_EVERY: Duration = Duration::from_secs(10);
const LEASE_SECONDS: u64 = 3600;

/// The lease name and holder identity of replica `node_id` of the cluster at `address`.
fn identity(node_id: u64, address: &str) -> (String, String) {
    let hash = format!("{:x}", Sha256::digest(format!("{address}/{node_id}")));
    let name = format!("apiserver-{}", &hash[..26]);
    (name.clone(), format!("{name}_{}", uuid::Uuid::new_v4()))
}

fn now_micro() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

async fn renew(client: &Client, name: &str, holder: &str) -> ApiResult<()> {
    let info = registry::lookup("coordination.k8s.io", "v1", "leases").ok_or_else(|| ApiError::internal("leases are not served"))?;
    let lease = json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": name, "namespace": "kube-system", "labels": {"apiserver.kubernetes.io/identity": "kube-apiserver"}},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": LEASE_SECONDS, "acquireTime": now_micro(), "renewTime": now_micro()},
    });
    let renewal = json!({"spec": {"holderIdentity": holder, "renewTime": now_micro()}});
    match client.patch(&request(info, Some("kube-system"), name, Verb::Patch), PatchKind::Merge, renewal).await {
        Err(ApiError::NotFound { .. }) => crate::poststart::ensure(client, "coordination.k8s.io", "v1", "leases", Some("kube-system"), lease).await,
        other => other.map(|_| ()),
    }
}

/// Renews the lease until the process ends.
pub async fn run(ctx: Context, client: Client) {
    let (name, holder) = identity(ctx.store.node_id(), &ctx.settings.address);
    let mut tick = tokio::time::interval(RENEW_EVERY);
    loop {
        tick.tick().await;
        if let Err(e) = renew(&client, &name, &holder).await {
            tracing::debug!(error = %e, "renewing the identity lease failed");
        }
    }
}
