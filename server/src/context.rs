//! What the post-start hooks and the controllers receive from the node they run on: its store
//! (for leadership and its own identity), the shared informers they read through, the settings,
//! and the few subsystems whose state they publish or repair. The request chain's stages
//! (authorization, admission, audit, metrics) are not here: those are reached only as a client,
//! through [`crate::loopback`].

use std::sync::Arc;

use raft_store::Store;

use access::authn::Authenticator;
use access::serviceaccount::Tokens;
use serving::context::{Ctx, Settings};
use serving::ipalloc::ServiceIps;

use crate::controllers::informer::Informers;

/// Shared by every hook and controller on a node; cheap to clone.
#[derive(Clone)]
pub struct Context {
    pub store: Store,
    pub informers: Informers,
    pub settings: Arc<Settings>,
    /// The authenticating proxy's settings, published for extension servers.
    pub authn: Arc<Authenticator>,
    /// Signs the legacy service-account token Secrets.
    pub tokens: Arc<Tokens>,
    /// The Service IP ranges, and the allocations the repair controller mends.
    pub ips: Arc<ServiceIps>,
}

impl Context {
    /// The parts of the serving layer's state the hooks and controllers use.
    pub fn new(ctx: &Ctx) -> Context {
        Context {
            store: ctx.store.clone(),
            informers: Informers::new(ctx.store.cache().clone()),
            settings: ctx.settings.clone(),
            authn: ctx.filters.authn.clone(),
            tokens: ctx.tokens.clone(),
            ips: ctx.writes.ips.clone(),
        }
    }
}
