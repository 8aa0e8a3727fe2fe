//! ResourceQuota, the last validating admission step, as kube-apiserver has it: a create (or an
//! update that can change usage) of a namespaced object in a namespace with ResourceQuotas is
//! checked against each quota that counts it ([`check`]), and refused (403) past a quota's
//! `hard`; otherwise the quotas are charged, their `status.used` written before the object is
//! stored, so that concurrent writes can never together exceed `hard`. A dry run is checked and
//! not charged. Deletions are not admitted here: the quota controller gives their usage back.
//!
//! The charge is a compare-and-set transaction on the store, conditioned on each quota's
//! revision as this write read it (one transaction for all the quotas a write changes); when
//! another write got there first, the check runs again on the quota the failed transaction
//! returns. kube-apiserver writes the status through its loopback client; a transaction here
//! needs no client inside the admission stage (which the loopback client itself passes
//! through), takes one Raft round, and cannot half-charge a write that several quotas count.
//! Writes in one namespace are charged one at a time on each replica, as kube-apiserver queues
//! them per namespace, so that they do not all contend for the same revision.
//!
//! The quotas are read from the index the apply path keeps ([`crate::by_namespace`]); what
//! counts what is in [`evaluators`], shared with the quota controller through [`usage`].

pub mod check;
pub mod claims;
pub mod evaluators;
pub mod limited;
pub mod pods;
pub mod scopes;
pub mod services;
pub mod usage;

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

use raft_store::{Action, Cond, Op, Store, Txn, TxnResult};
use tokio::sync::Mutex;

use crate::by_namespace::ByNamespace;
use crate::resource_list::write;
use crate::{Operation, Request, Validating};
use check::{Quota, Refusal, Write};
use evaluators::Evaluator;
use limited::Limited;
use machinery::error::{ApiError, ApiResult};

/// Where ResourceQuotas are stored.
pub const PREFIX: &str = "/registry/resourcequotas/";

/// How many times a charge is tried again after losing to another write.
const RETRIES: usize = 16;

/// Locks namespaces are spread over (writes of two namespaces rarely share one).
const STRIPES: usize = 64;

pub struct ResourceQuota {
    store: Store,
    quotas: Arc<ByNamespace>,
    /// `limitedResources` of the plugin's configuration.
    limited: Vec<Limited>,
    stripes: [Mutex<()>; STRIPES],
}

impl ResourceQuota {
    /// The plugin, with its configuration (a `ResourceQuotaConfiguration`) if any.
    pub fn new(store: Store, quotas: Arc<ByNamespace>, config: Option<&serde_json::Value>) -> Result<ResourceQuota, String> {
        Ok(ResourceQuota { store, quotas, limited: limited::parse(config)?, stripes: std::array::from_fn(|_| Mutex::new(())) })
    }

    fn stripe(&self, namespace: &str) -> &Mutex<()> {
        let mut h = DefaultHasher::new();
        namespace.hash(&mut h);
        &self.stripes[h.finish() as usize % STRIPES]
    }
}

/// The quota written with its new usage.
fn charged(quota: &Quota, used: &crate::resource_list::ResourceList) -> ApiResult<Op> {
    let mut object = (*quota.object).clone();
    object["status"]["used"] = write(used);
    let meta = &object["metadata"];
    let key = format!("{PREFIX}{}/{}", meta["namespace"].as_str().unwrap_or_default(), quota.name());
    Ok(Op { key, cond: Cond::Rev(quota.rev), action: Action::Put(serde_json::to_vec(&object).map_err(ApiError::internal)?.into()) })
}

#[async_trait::async_trait]
impl Validating for ResourceQuota {
    fn name(&self) -> &'static str {
        "ResourceQuota"
    }

    async fn validate(&self, r: &Request<'_>) -> ApiResult<()> {
        let info = r.req.info;
        let (Some(namespace), Some(object)) = (r.namespace(), r.object) else { return Ok(()) };
        if r.operation == Operation::Delete {
            return Ok(());
        }
        let Some(evaluator) = Evaluator::of(info.group, info.resource) else { return Ok(()) };
        let subresource = r.req.subresource.as_deref();
        if !evaluator.handles(r.operation, subresource, object, r.old) {
            return Ok(());
        }
        let mut quotas: Vec<Quota> = self.quotas.list(namespace).into_iter().map(|s| Quota { rev: s.rev, object: s.value }).collect();
        if quotas.is_empty() && self.limited.is_empty() {
            return Ok(());
        }
        let write = Write { evaluator: &evaluator, resource: (info.group, info.resource), limited: &self.limited, operation: r.operation, subresource, object, old: r.old };
        let refuse = |refusal| match refusal {
            Refusal::Forbidden(message) => r.forbidden(message),
            Refusal::Unscoped(message) => ApiError::plain(message),
        };
        let _turn = self.stripe(namespace).lock().await;
        let mut lost_to = String::new();
        for _ in 0..RETRIES {
            let changes = check::check(&quotas, &write).map_err(refuse)?;
            if changes.is_empty() || r.dry_run {
                return Ok(());
            }
            let ops = changes.iter().map(|(i, used)| charged(&quotas[*i], used)).collect::<ApiResult<Vec<_>>>()?;
            match self.store.write(Txn::new(ops)).await? {
                TxnResult::Ok { .. } => return Ok(()),
                TxnResult::Failed { op, current } => {
                    let i = changes[op].0;
                    lost_to = quotas[i].name().to_string();
                    match current.and_then(|o| Some(Quota { rev: o.rev, object: Arc::new(serde_json::from_slice(&o.data).ok()?) })) {
                        Some(now) => quotas[i] = now,
                        None => {
                            quotas.remove(i);
                        }
                    }
                }
                TxnResult::None => return Err(ApiError::internal("unexpected entry result")),
            }
        }
        Err(ApiError::Conflict {
            group: String::new(),
            resource: "resourcequotas".into(),
            name: lost_to.clone(),
            message: format!("Operation cannot be fulfilled on resourcequotas \"{lost_to}\": the object has been modified; please apply your changes to the latest version and try again"),
        })
    }
}
