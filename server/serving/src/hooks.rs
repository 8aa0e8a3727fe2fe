//! The post-start hooks a node runs once it serves (the writes themselves are the top crate's,
//! through its loopback client): their names, in order, and which are done on this node, as
//! `/readyz` reports them (`poststarthook/NAME`).

use std::collections::BTreeSet;
use std::sync::Mutex;

/// The hook that writes the default RBAC policy, which authorizes the controllers.
pub const RBAC_HOOK: &str = "rbac/bootstrap-roles";

/// The hooks, in the order they run.
pub const HOOKS: &[&str] = &[
    "start-system-namespaces-controller",
    "bootstrap-controller",
    "start-kubernetes-service-cidr-controller",
    "scheduling/bootstrap-system-priority-classes",
    RBAC_HOOK,
    "priority-and-fairness-config-producer",
    "start-cluster-authentication-info-controller",
    "start-legacy-token-tracking-controller",
    "kube-apiserver-autoregistration",
];

/// Which hooks have completed on this node.
#[derive(Debug, Default)]
pub struct Progress {
    done: Mutex<BTreeSet<&'static str>>,
}

impl Progress {
    pub fn mark(&self, hook: &'static str) {
        self.done.lock().unwrap_or_else(|e| e.into_inner()).insert(hook);
    }

    pub fn is_done(&self, hook: &str) -> bool {
        self.done.lock().unwrap_or_else(|e| e.into_inner()).contains(hook)
    }

    pub fn all_done(&self) -> bool {
        HOOKS.iter().all(|h| self.is_done(h))
    }
}
