//! Admission policies: ValidatingAdmissionPolicy and (behind its feature gate)
//! MutatingAdmissionPolicy, evaluated on every replica from the policies and bindings it has
//! applied. What both share lives here: policies compiled once per version, the bindings that
//! select a request, their parameter objects, the variables every expression sees (`object`,
//! `oldObject`, `request`, `params`, `namespaceObject`, `variables`, `authorizer`), and the
//! rounds of authorizer checks an evaluation asks for.

pub mod authorizer;
mod compile;
pub mod mutating;
pub mod validating;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use raft_store::Store;
use serde_json::{json, Value};

pub use mutating::MutatingPolicies;
pub use validating::ValidatingPolicies;

use super::{matching, Operation, Request};
use crate::configuration::Configuration;
use crate::namespaces::Namespaces;
use crate::Replicated;
use access::authz::Outcome as AuthzOutcome;
use access::Auth;
use machinery::error::{ApiError, ApiResult};
use self::authorizer::{Authorizer, Decision, RequestResource};
use machinery::registry;
use compile::Policy;

const GROUP: &str = "admissionregistration.k8s.io";

/// How many times a policy is evaluated again for the authorizer checks it asked for.
const AUTHORIZER_ROUNDS: usize = 8;

/// The policies and bindings of one kind of policy, read from the replicated state.
struct Policies {
    store: Store,
    auth: Auth,
    /// Namespaces as applied, for namespace selectors and the `namespaceObject` variable.
    namespaces: Arc<Namespaces>,
    /// The bindings as applied.
    configuration: Arc<Configuration>,
    policies: &'static str,
    bindings: &'static str,
    /// Compiled policies by name, with the revision they were compiled at.
    compiled: Mutex<HashMap<String, (u64, Arc<Policy>)>>,
}

/// A binding that selects a request, with its policy.
struct Selected {
    policy: Arc<Policy>,
    binding: Arc<Value>,
    name: String,
}

impl Policies {
    /// `policies` and `bindings` are the storage key prefixes of the two kinds.
    fn new(state: Replicated, auth: Auth, policies: &'static str, bindings: &'static str) -> Policies {
        let Replicated { store, namespaces, configuration, .. } = state;
        Policies { store, auth, namespaces, configuration, policies, bindings, compiled: Mutex::new(HashMap::new()) }
    }

    fn policy(&self, name: &str) -> ApiResult<Option<Arc<Policy>>> {
        let Some(obj) = self.store.cache().get(&format!("{}{name}", self.policies), None)? else { return Ok(None) };
        let mut compiled = self.compiled.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((rev, p)) = compiled.get(name) {
            if *rev == obj.rev {
                return Ok(Some(p.clone()));
            }
        }
        let value: Value = serde_json::from_slice(&obj.data).map_err(ApiError::internal)?;
        let policy = Arc::new(Policy::compile(&value));
        compiled.insert(name.to_string(), (obj.rev, policy.clone()));
        Ok(Some(policy))
    }

    fn get(&self, key: &str) -> ApiResult<Option<Value>> {
        match self.store.cache().get(key, None)? {
            Some(o) => serde_json::from_slice(&o.data).map(Some).map_err(ApiError::internal),
            None => Ok(None),
        }
    }

    /// The namespace object of a namespaced request.
    fn namespace_object(&self, r: &Request<'_>) -> Option<Arc<Value>> {
        match r.req.namespace.as_deref() {
            Some(ns) if r.req.info.namespaced => self.namespaces.get(ns),
            _ => None,
        }
    }

    /// The bindings, in name order, whose policy's constraints and own resources select `r`.
    fn selected(&self, r: &Request<'_>, namespace: Option<&Value>) -> ApiResult<Vec<Selected>> {
        // Policies do not apply to the admission configuration itself.
        if r.req.info.group == GROUP {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for binding in self.configuration.under(self.bindings)? {
            let spec = &binding["spec"];
            let Some(policy) = self.policy(spec["policyName"].as_str().unwrap_or_default())? else { continue };
            if !matching::matches(&policy.constraints, r, namespace) {
                continue;
            }
            let resources = &spec["matchResources"];
            if resources.is_object() {
                let has_rules = resources["resourceRules"].as_array().is_some_and(|a| !a.is_empty());
                let selected =
                    if has_rules { matching::matches(resources, r, namespace) } else { matching::selectors_match(resources, r, namespace) };
                if !selected {
                    continue;
                }
            }
            let name = binding["metadata"]["name"].as_str().unwrap_or_default().to_string();
            out.push(Selected { policy, binding, name });
        }
        Ok(out)
    }

    /// The parameter objects a binding names for a policy: `None` for a policy without
    /// parameters, else the objects found (possibly none).
    fn params(&self, selected: &Selected, namespace: Option<&str>) -> ApiResult<Option<Vec<Value>>> {
        let Some((api_version, kind)) = &selected.policy.param_kind else { return Ok(None) };
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let Some(info) = registry::lookup_kind(group, version, kind) else { return Ok(Some(Vec::new())) };
        let reference = &selected.binding["spec"]["paramRef"];
        let ns = reference["namespace"].as_str().filter(|n| !n.is_empty()).or(if info.namespaced { namespace } else { None });
        if let Some(name) = reference["name"].as_str().filter(|n| !n.is_empty()) {
            return Ok(Some(self.get(&info.key(ns, name))?.into_iter().collect()));
        }
        let listed = self.store.cache().list(&info.list_prefix(ns), None, None, None, &|_| true)?;
        let mut found = Vec::new();
        for o in listed.items {
            let v: Value = serde_json::from_slice(&o.data).map_err(ApiError::internal)?;
            if machinery::selector::label_selector_matches(&reference["selector"], v["metadata"]["labels"].as_object()) {
                found.push(v);
            }
        }
        Ok(Some(found))
    }

    /// Runs `evaluate` until it asks the authorizer nothing new, authorizing what it asked for
    /// between rounds.
    async fn with_authorizer<T>(&self, authorizer: &Authorizer, mut evaluate: impl FnMut() -> Result<T, String>) -> Result<T, String> {
        for _ in 0..AUTHORIZER_ROUNDS {
            let outcome = evaluate();
            let pending = authorizer.take_pending();
            if pending.is_empty() {
                return outcome;
            }
            for attrs in pending {
                let decision = match self.auth.chain.authorize(&attrs).await {
                    AuthzOutcome::Decided(v) => Decision { allowed: v.allowed(), reason: v.reason, error: None },
                    AuthzOutcome::Failed(e) => Decision { allowed: false, reason: String::new(), error: Some(e) },
                };
                authorizer.record(attrs, decision);
            }
        }
        Err("too many authorizer checks".into())
    }
}

/// The admission request as policies see it (`request`).
fn request_value(r: &Request<'_>, name: &str) -> Value {
    let info = r.req.info;
    let kind = json!({"group": info.group, "version": info.version, "kind": info.kind});
    let resource = json!({"group": info.group, "version": info.version, "resource": info.resource});
    let user = &r.req.user;
    json!({
        "kind": kind, "resource": resource, "requestKind": kind, "requestResource": resource,
        "subResource": r.req.subresource.clone().unwrap_or_default(),
        "name": name, "namespace": r.req.namespace.clone().unwrap_or_default(),
        "operation": r.operation.as_str(),
        "userInfo": {"username": user.name, "uid": user.uid, "groups": user.groups, "extra": user.extra},
        "dryRun": r.dry_run,
    })
}

/// The variables of one evaluation, and the authorizer its expressions ask.
fn bindings(r: &Request<'_>, name: &str, object: Value, param: Value, namespace: Option<&Value>) -> (Vec<(&'static str, Value)>, Authorizer) {
    let info = r.req.info;
    let request = RequestResource {
        group: info.group,
        resource: info.resource,
        subresource: r.req.subresource.as_deref().unwrap_or_default(),
        namespace: r.req.namespace.as_deref().unwrap_or_default(),
        name,
    };
    let vars = vec![
        ("authorizer", Authorizer::value(&request)),
        ("object", if r.operation == Operation::Delete { Value::Null } else { object }),
        ("oldObject", r.old.cloned().unwrap_or(Value::Null)),
        ("params", param),
        ("namespaceObject", namespace.cloned().unwrap_or(Value::Null)),
        ("request", request_value(r, name)),
    ];
    (vars, Authorizer::new((*r.req.user).clone()))
}

/// `vars` as the expressions take them.
fn refs<'a>(vars: &'a [(&'static str, Value)]) -> Vec<(&'static str, &'a Value)> {
    vars.iter().map(|(k, v)| (*k, v)).collect()
}

/// Evaluates a policy's match conditions (false: the policy does not apply) and then its
/// variables into `vars` as `variables`.
fn conditions_and_variables(policy: &Policy, vars: &mut Vec<(&'static str, Value)>, authz: &Authorizer) -> Result<bool, String> {
    for (name, condition) in &policy.conditions {
        let condition = condition.as_ref().map_err(|e| format!("matchCondition '{name}': {e}"))?;
        if !condition.eval_bool(&refs(vars), Some(authz)).map_err(|e| format!("failed to evaluate matchCondition '{name}': {e}"))? {
            return Ok(false);
        }
    }
    // Variables in order, each seeing those before it.
    vars.retain(|(k, _)| *k != "variables");
    vars.push(("variables", Value::Object(serde_json::Map::new())));
    for (name, expression) in &policy.variables {
        let expression = expression.as_ref().map_err(|e| format!("variable '{name}': {e}"))?;
        let value = expression.eval_with(&refs(vars), Some(authz)).map_err(|e| format!("variable '{name}' resulted in error: {e}"))?;
        if let Some((_, Value::Object(variables))) = vars.last_mut() {
            variables.insert(name.clone(), machinery::expr::to_json(&value));
        }
    }
    Ok(true)
}
