//! The built-in controllers a standalone server needs, one file each, and the runner that starts
//! them: after the post-start hooks ([`crate::poststart`]), on the Raft leader only (each through
//! [`leading::run`], which starts and stops it as leadership moves), the namespace controller,
//! ClusterRole aggregation, the FlowSchema status, the service-account and bootstrap token
//! controllers, the garbage collector, the end of terminating pods, the Service IP repair, the
//! CRD and APIService status controllers and the admission policy type check; on every node,
//! its identity Lease.

pub mod apiservice_availability;
pub mod bootstrap_tokens;
pub mod cluster_role_aggregation;
pub mod crd;
pub mod flowschema_status;
pub mod gc;
pub mod identity_lease;
pub mod ip_repair;
pub mod leading;
pub mod namespace;
pub mod pod_gc;
pub mod policy_type_check;
pub mod service_accounts;

use bootstrap_tokens::BootstrapTokenControllers;
use cluster_role_aggregation::AggregationController;
use gc::GarbageCollector;
use ip_repair::IpRepair;
use pod_gc::PodGc;
use service_accounts::ServiceAccountController;

use crate::context::Ctx;
use access::request::{ResourceRequest, Verb};
use machinery::registry;

/// Namespaces every cluster has from the start.
pub const DEFAULT_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public", "kube-node-lease"];

/// A request as the controllers make it, as the loopback user.
pub(crate) fn request(info: &'static registry::ResourceInfo, namespace: Option<&str>, name: &str, verb: Verb) -> ResourceRequest {
    ResourceRequest {
        info,
        namespace: namespace.map(str::to_string),
        name: (!name.is_empty()).then(|| name.to_string()),
        subresource: None,
        verb,
        user: access::UserInfo::loopback(),
    }
}

/// Runs every controller: the post-start hooks (each retried until it succeeds), then the
/// namespace controller; the leader-only controllers while this node leads; the identity Lease
/// and the FlowSchema status.
pub async fn run(ctx: Ctx) {
    tokio::join!(
        leading::run(ctx.clone(), AggregationController),
        flowschema_status::run(ctx.clone()),
        identity_lease::run(ctx.clone()),
        leading::run(ctx.clone(), ServiceAccountController),
        leading::run(ctx.clone(), GarbageCollector::default()),
        leading::run(ctx.clone(), PodGc::default()),
        leading::run(ctx.clone(), IpRepair),
        leading::run(ctx.clone(), crd::CrdController),
        leading::run(ctx.clone(), policy_type_check::TypeCheckController),
        leading::run(ctx.clone(), apiservice_availability::AvailabilityController),
        bootstrap_token_controllers(ctx.clone()),
        bootstrap_then_namespaces(ctx)
    );
}

/// The token cleaner and signer, when bootstrap tokens are on.
async fn bootstrap_token_controllers(ctx: Ctx) {
    if ctx.settings.bootstrap_tokens {
        leading::run(ctx, BootstrapTokenControllers).await;
    }
}

/// The post-start hooks, then the namespace controller.
async fn bootstrap_then_namespaces(ctx: Ctx) {
    crate::poststart::run(&ctx).await;
    namespace::run(ctx).await;
}

