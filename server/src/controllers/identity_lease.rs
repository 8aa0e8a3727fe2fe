//! This replica's identity Lease, as every kube-apiserver keeps one: `kube-system/apiserver-…`,
//! labelled `apiserver.kubernetes.io/identity: kube-apiserver`, renewed every 10 seconds while
//! the replica runs (clients count the API servers of a cluster by these leases).

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::context::Context;
use crate::loopback::Client;
use machinery::error::{ApiError, ApiResult};
use machinery::patch::PatchKind;

const RENEW_EVERY: Duration = Duration::from_secs(10);
const LEASE_SECONDS: i32 = 3600;

/// The lease name and holder identity of replica `node_id` of the cluster at `address`.
fn identity(node_id: u64, address: &str) -> (String, String) {
    let hash = format!("{:x}", Sha256::digest(format!("{address}/{node_id}")));
    let name = format!("apiserver-{}", &hash[..26]);
    (name.clone(), format!("{name}_{}", uuid::Uuid::new_v4()))
}

async fn renew(client: &Client, name: &str, holder: &str) -> ApiResult<()> {
    let leases = client.api::<Lease>(Some("kube-system"))?;
    let now = jiff::Timestamp::now();
    let renewal = json!({"spec": {"holderIdentity": holder, "renewTime": MicroTime(now)}});
    match leases.patch(name, PatchKind::Merge, renewal).await {
        Err(ApiError::NotFound { .. }) => {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(name.to_string()),
                    labels: Some([("apiserver.kubernetes.io/identity".to_string(), "kube-apiserver".to_string())].into()),
                    ..Default::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(holder.to_string()),
                    lease_duration_seconds: Some(LEASE_SECONDS),
                    acquire_time: Some(MicroTime(now)),
                    renew_time: Some(MicroTime(now)),
                    ..Default::default()
                }),
            };
            leases.ensure(&lease).await
        }
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
