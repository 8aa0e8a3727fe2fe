//! ValidatingAdmissionPolicy: every write a binding's policy selects is checked with the
//! policy's CEL validations (`object`, `oldObject`, `request`, `params`, `namespaceObject`,
//! `variables`, `authorizer`), on every replica, from the policies and bindings this replica has applied.
//! Policies are compiled once per version; a refusal is Kubernetes' error for it, with the
//! validation's reason and message.

mod compile;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use raft_store::Store;
use serde_json::{json, Value};

use super::{matching, Operation, Request, Validating};
use crate::auth::authz::Outcome as AuthzOutcome;
use crate::auth::Auth;
use crate::error::{ApiError, ApiResult, Refusal};
use crate::expr::authorizer::{Authorizer, Decision, RequestResource};
use crate::registry;
use compile::Policy;

const GROUP: &str = "admissionregistration.k8s.io";
const POLICIES: &str = "/registry/admissionregistration.k8s.io/validatingadmissionpolicies/";
const BINDINGS: &str = "/registry/admissionregistration.k8s.io/validatingadmissionpolicybindings/";

/// How many times a policy is evaluated again for the authorizer checks it asked for.
const AUTHORIZER_ROUNDS: usize = 8;

pub struct ValidatingPolicies {
    pub store: Store,
    auth: Auth,
    /// Compiled policies by name, with the revision they were compiled at.
    compiled: Mutex<HashMap<String, (u64, Arc<Policy>)>>,
}

/// What one policy said about a write.
enum Outcome {
    Allowed,
    Refused { message: String, reason: &'static str },
}

impl ValidatingPolicies {
    pub fn new(store: Store, auth: Auth) -> ValidatingPolicies {
        ValidatingPolicies { store, auth, compiled: Mutex::new(HashMap::new()) }
    }

    fn policy(&self, name: &str) -> ApiResult<Option<Arc<Policy>>> {
        let Some(obj) = self.store.cache().get(&format!("{POLICIES}{name}"), None)? else { return Ok(None) };
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

    /// The parameter objects a binding names for a policy: `None` for a policy without
    /// parameters, else the objects found (possibly none).
    fn params(&self, policy: &Policy, binding: &Value, namespace: Option<&str>) -> ApiResult<Option<Vec<Value>>> {
        let Some((api_version, kind)) = &policy.param_kind else { return Ok(None) };
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let Some(info) = registry::lookup_kind(group, version, kind) else { return Ok(Some(Vec::new())) };
        let reference = &binding["spec"]["paramRef"];
        let ns = reference["namespace"].as_str().filter(|n| !n.is_empty()).or(if info.namespaced { namespace } else { None });
        if let Some(name) = reference["name"].as_str().filter(|n| !n.is_empty()) {
            return Ok(Some(self.get(&info.key(ns, name))?.into_iter().collect()));
        }
        let listed = self.store.cache().list(&info.list_prefix(ns), None, None, None, &|_| true)?;
        let mut found = Vec::new();
        for o in listed.items {
            let v: Value = serde_json::from_slice(&o.data).map_err(ApiError::internal)?;
            if crate::selector::label_selector_matches(&reference["selector"], v["metadata"]["labels"].as_object()) {
                found.push(v);
            }
        }
        Ok(Some(found))
    }

    /// Runs one policy's checks with one set of parameters bound, authorizing what its
    /// expressions ask the authorizer and evaluating again until they ask nothing new.
    async fn evaluate(&self, policy: &Policy, vars: Vec<(&'static str, Value)>, authorizer: &Authorizer) -> Result<Outcome, String> {
        for _ in 0..AUTHORIZER_ROUNDS {
            let outcome = ValidatingPolicies::evaluate_once(policy, vars.clone(), authorizer);
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

    fn evaluate_once(policy: &Policy, mut vars: Vec<(&'static str, Value)>, authorizer: &Authorizer) -> Result<Outcome, String> {
        let authz = Some(authorizer);
        fn refs<'a>(vars: &'a [(&'static str, Value)]) -> Vec<(&'static str, &'a Value)> {
            vars.iter().map(|(k, v)| (*k, v)).collect()
        }
        for (name, condition) in &policy.conditions {
            let condition = condition.as_ref().map_err(|e| format!("matchCondition '{name}': {e}"))?;
            if !condition.eval_bool(&refs(&vars), authz).map_err(|e| format!("failed to evaluate matchCondition '{name}': {e}"))? {
                return Ok(Outcome::Allowed);
            }
        }
        // Variables in order, each seeing those before it.
        vars.push(("variables", Value::Object(serde_json::Map::new())));
        for (name, expression) in &policy.variables {
            let expression = expression.as_ref().map_err(|e| format!("variable '{name}': {e}"))?;
            let value = expression.eval_with(&refs(&vars), authz).map_err(|e| format!("variable '{name}' resulted in error: {e}"))?;
            if let Some((_, Value::Object(variables))) = vars.last_mut() {
                variables.insert(name.clone(), crate::expr::to_json(&value));
            }
        }
        let bound = refs(&vars);
        for v in &policy.validations {
            let expression = v.expression.as_ref().map_err(Clone::clone)?;
            if expression.eval_bool(&bound, authz)? {
                continue;
            }
            let from_expression = v
                .message_expression
                .as_ref()
                .and_then(|m| m.as_ref().ok())
                .and_then(|m| m.eval_string(&bound, authz).ok())
                .filter(|m| !m.trim().is_empty());
            let message = from_expression.or_else(|| v.message.clone()).unwrap_or_else(|| format!("failed expression: {}", expression.source));
            return Ok(Outcome::Refused { message, reason: v.reason });
        }
        Ok(Outcome::Allowed)
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

#[async_trait::async_trait]
impl Validating for ValidatingPolicies {
    fn name(&self) -> &'static str {
        "ValidatingAdmissionPolicy"
    }

    async fn validate(&self, r: &Request<'_>) -> ApiResult<()> {
        // Policies do not apply to the admission configuration itself.
        if r.req.info.group == GROUP {
            return Ok(());
        }
        let bindings = self.store.cache().list(BINDINGS, None, None, None, &|_| true)?;
        if bindings.items.is_empty() {
            return Ok(());
        }
        let namespace = match r.req.namespace.as_deref() {
            Some(ns) if r.req.info.namespaced => self.get(&format!("/registry/namespaces/{ns}"))?,
            _ => None,
        };
        let name = matching::name_of(r);
        for item in bindings.items {
            let binding: Value = serde_json::from_slice(&item.data).map_err(ApiError::internal)?;
            let spec = &binding["spec"];
            let Some(policy) = self.policy(spec["policyName"].as_str().unwrap_or_default())? else { continue };
            if !matching::matches(&policy.constraints, r, namespace.as_ref()) {
                continue;
            }
            let binding_resources = &spec["matchResources"];
            if binding_resources.is_object() {
                let has_rules = binding_resources["resourceRules"].as_array().is_some_and(|a| !a.is_empty());
                let selected = if has_rules {
                    matching::matches(binding_resources, r, namespace.as_ref())
                } else {
                    matching::selectors_match(binding_resources, r, namespace.as_ref())
                };
                if !selected {
                    continue;
                }
            }
            let binding_name = binding["metadata"]["name"].as_str().unwrap_or_default();
            let actions: Vec<&str> = spec["validationActions"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            let deny = |message: String, reason: &'static str| -> ApiError {
                let cause = format!("ValidatingAdmissionPolicy '{}' with binding '{binding_name}' denied request: {message}", policy.name);
                let info = r.req.info;
                let qualified = if info.group.is_empty() { info.resource.to_string() } else { format!("{}.{}", info.resource, info.group) };
                ApiError::Denied {
                    reason,
                    message: format!("{qualified} \"{name}\" is forbidden: {cause}"),
                    refusal: Box::new(Refusal { group: info.group.to_string(), resource: info.resource.to_string(), name: name.clone(), cause }),
                }
            };
            let params: Vec<Value> = match self.params(&policy, &binding, r.req.namespace.as_deref())? {
                None => vec![Value::Null],
                Some(found) if found.is_empty() => {
                    if spec["paramRef"]["parameterNotFoundAction"].as_str() == Some("Allow") {
                        continue;
                    }
                    return Err(deny("no params found for policy binding with `Deny` parameterNotFoundAction".into(), "Invalid"));
                }
                Some(found) => found,
            };
            let info = r.req.info;
            let request = RequestResource {
                group: info.group,
                resource: info.resource,
                subresource: r.req.subresource.as_deref().unwrap_or_default(),
                namespace: r.req.namespace.as_deref().unwrap_or_default(),
                name: &name,
            };
            let authorizer = Authorizer::new((*r.req.user).clone());
            for param in params {
                let vars = vec![
                    ("authorizer", Authorizer::value(&request)),
                    ("object", if r.operation == Operation::Delete { Value::Null } else { r.object.cloned().unwrap_or(Value::Null) }),
                    ("oldObject", r.old.cloned().unwrap_or(Value::Null)),
                    ("params", param),
                    ("namespaceObject", namespace.clone().unwrap_or(Value::Null)),
                    ("request", request_value(r, &name)),
                ];
                let outcome = match self.evaluate(&policy, vars, &authorizer).await {
                    Ok(o) => o,
                    Err(_) if !policy.fail_closed => continue,
                    Err(e) => Outcome::Refused { message: e, reason: "Invalid" },
                };
                if let Outcome::Refused { message, reason } = outcome {
                    if actions.contains(&"Deny") {
                        return Err(deny(message, reason));
                    }
                    if actions.contains(&"Warn") {
                        r.warn(format!("Validation failed for ValidatingAdmissionPolicy '{}' with binding '{binding_name}': {message}", policy.name));
                    }
                    if actions.contains(&"Audit") {
                        tracing::info!(policy = %policy.name, binding = binding_name, %message, "admission policy violation audited");
                    }
                }
            }
        }
        Ok(())
    }
}
