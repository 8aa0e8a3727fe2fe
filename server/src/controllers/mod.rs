//! The built-in controllers a standalone server needs, one file each, and the runner that starts
//! them: after the post-start hooks ([`crate::poststart`]), on the Raft leader only (each through
//! [`leading::run`], which starts and stops it as leadership moves), the namespace controller,
//! ClusterRole aggregation, the FlowSchema status, the service-account and bootstrap token
//! controllers, the garbage collector, the end of terminating pods, the Service IP and node port repairs, the
//! CRD and APIService status controllers, the admission policy type check and the resource
//! quota controller; on every node, its identity Lease.

pub mod apiservice_availability;
pub mod bootstrap_tokens;
pub mod cluster_role_aggregation;
pub mod crd;
pub mod flowschema_status;
pub mod gc;
pub mod identity_lease;
pub mod informer;
pub mod ip_repair;
pub mod leading;
pub mod namespace;
pub mod nodeport_repair;
pub mod pod_gc;
pub mod policy_type_check;
pub mod resource_quota;
pub mod service_accounts;

use bootstrap_tokens::BootstrapTokenControllers;
use cluster_role_aggregation::AggregationController;
use gc::GarbageCollector;
use ip_repair::IpRepair;
use pod_gc::PodGc;
use service_accounts::ServiceAccountController;

use access::authn::loopback::Loopback;

use crate::context::Context;
use crate::loopback::Client;

/// How often the runner looks whether the default RBAC policy is written.
const HOOK_POLL: std::time::Duration = std::time::Duration::from_millis(20);


/// Runs the post-start hooks (each retried until it succeeds) and every controller, each
/// writing through `server` (the loopback client) as its own identity: the leader-only
/// controllers while this node leads, the namespace controller, the identity Lease and the
/// FlowSchema status. The controllers kube-controller-manager runs act as its service accounts
/// (`system:serviceaccount:kube-system:NAME`, which the default policy binds to
/// `system:controller:NAME`); those kube-apiserver runs itself act as `system:apiserver`. They
/// start once the hook that writes the default RBAC policy, which authorizes them, is done,
/// while the later hooks go on.
pub async fn run(ctx: Context, server: Client) {
    let controller = |name: &str| server.as_identity(Loopback::controller(name));
    let service_accounts = service_accounts::Clients {
        accounts: controller("service-account-controller"),
        root_ca: controller("root-ca-cert-publisher"),
        tokens: server.clone(),
    };
    let controllers = async {
        while !ctx.settings.hooks.is_done(serving::hooks::RBAC_HOOK) {
            tokio::time::sleep(HOOK_POLL).await;
        }
        tokio::join!(
            leading::run(ctx.clone(), AggregationController { client: controller("clusterrole-aggregation-controller") }),
            flowschema_status::run(ctx.clone(), server.clone()),
            identity_lease::run(ctx.clone(), server.clone()),
            leading::run(ctx.clone(), ServiceAccountController { clients: service_accounts }),
            leading::run(ctx.clone(), GarbageCollector::new(controller("generic-garbage-collector"))),
            leading::run(ctx.clone(), PodGc::new(controller("pod-garbage-collector"))),
            leading::run(ctx.clone(), IpRepair { client: server.clone() }),
            leading::run(ctx.clone(), nodeport_repair::NodePortRepair::default()),
            leading::run(ctx.clone(), crd::CrdController { client: server.clone() }),
            leading::run(ctx.clone(), policy_type_check::TypeCheckController { client: controller("validatingadmissionpolicy-status-controller") }),
            leading::run(ctx.clone(), apiservice_availability::AvailabilityController { client: server.clone() }),
            bootstrap_token_controllers(ctx.clone(), controller("token-cleaner"), controller("bootstrap-signer")),
            quota_controller(ctx.clone(), controller("resourcequota-controller")),
            namespace::run(ctx.clone(), controller("namespace-controller"))
        );
    };
    tokio::join!(crate::poststart::run(&ctx, &server), controllers);
}

/// The resource quota controller, unless `--controllers` turns it off (kube-controller-manager
/// runs it instead).
async fn quota_controller(ctx: Context, client: Client) {
    if ctx.settings.controller_enabled("resourcequota") {
        leading::run(ctx, resource_quota::QuotaController::new(client)).await;
    }
}

/// The token cleaner and signer, when bootstrap tokens are on.
async fn bootstrap_token_controllers(ctx: Context, cleaner: Client, signer: Client) {
    if ctx.settings.bootstrap_tokens {
        leading::run(ctx, BootstrapTokenControllers { cleaner, signer }).await;
    }
}

