//! MutatingAdmissionPolicy (`admissionregistration.k8s.io/v1beta1` as in Kubernetes 1.34, and
//! `v1` as in 1.36, behind the feature gate of the same name): every write a binding's policy
//! selects is changed by the policy's mutations in order, each seeing the object as the ones
//! before left it: an `Object{...}` apply configuration merged as server-side apply merges, or a
//! list of `JSONPatch{...}` operations. Policies with `reinvocationPolicy: IfNeeded` run once
//! more when a later policy changed the object after them.

use serde_json::Value;


use crate::Replicated;
use super::compile::{Mutation, PatchType};
use super::{bindings, conditions_and_variables, refs, Policies, Policy, Selected};
use crate::{matching, Mutating, Request};
use access::Auth;
use machinery::error::{ApiError, ApiResult, Refusal};
use super::authorizer::Authorizer;
use machinery::patch::{self, PatchKind};

pub struct MutatingPolicies {
    policies: Policies,
}

impl MutatingPolicies {
    pub fn new(state: Replicated, auth: Auth) -> MutatingPolicies {
        MutatingPolicies {
            policies: Policies::new(
                state,
                auth,
                "/registry/admissionregistration.k8s.io/mutatingadmissionpolicies/",
                crate::configuration::MUTATING_POLICY_BINDINGS,
            ),
        }
    }

    /// Runs one binding's policy on `object`, once per parameter object.
    async fn run(&self, r: &Request<'_>, s: &Selected, name: &str, namespace: Option<&Value>, object: &mut Value) -> ApiResult<()> {
        let policy = &s.policy;
        let refuse = |message: String| -> ApiError {
            let cause = format!("MutatingAdmissionPolicy '{}' with binding '{}' denied request: {message}", policy.name, s.name);
            let info = r.req.info;
            let qualified = if info.group.is_empty() { info.resource.to_string() } else { format!("{}.{}", info.resource, info.group) };
            ApiError::Denied {
                reason: "Invalid",
                message: format!("{qualified} \"{name}\" is forbidden: {cause}"),
                refusal: Box::new(Refusal { group: info.group.to_string(), resource: info.resource.to_string(), name: name.to_string(), cause }),
            }
        };
        let params: Vec<Value> = match self.policies.params(s, r.req.namespace.as_deref())? {
            None => vec![Value::Null],
            Some(found) if found.is_empty() => {
                if s.binding["spec"]["paramRef"]["parameterNotFoundAction"].as_str() == Some("Allow") {
                    return Ok(());
                }
                return Err(refuse("no params found for policy binding with `Deny` parameterNotFoundAction".into()));
            }
            Some(found) => found,
        };
        for param in params {
            let (vars, authorizer) = bindings(r, name, object.clone(), param, namespace);
            let result = self.policies.with_authorizer(&authorizer, || mutate(policy, vars.clone(), &authorizer)).await;
            match result {
                Ok(Some(mutated)) => *object = mutated,
                Ok(None) => {}
                Err(_) if !policy.fail_closed => {}
                Err(e) => return Err(refuse(e)),
            }
        }
        Ok(())
    }
}

/// The object after every mutation of `policy`, or `None` when its conditions leave it alone.
fn mutate(policy: &Policy, mut vars: Vec<(&'static str, Value)>, authz: &Authorizer) -> Result<Option<Value>, String> {
    if !conditions_and_variables(policy, &mut vars, authz)? {
        return Ok(None);
    }
    for mutation in &policy.mutations {
        let current = vars.iter().find(|(k, _)| *k == "object").map(|(_, v)| v.clone()).unwrap_or(Value::Null);
        let changed = apply(mutation, &current, &refs(&vars), authz)?;
        if let Some((_, v)) = vars.iter_mut().find(|(k, _)| *k == "object") {
            *v = changed;
        }
    }
    Ok(vars.into_iter().find(|(k, _)| *k == "object").map(|(_, v)| v))
}

/// One mutation's result applied to `current`.
fn apply(mutation: &Mutation, current: &Value, vars: &[(&'static str, &Value)], authz: &Authorizer) -> Result<Value, String> {
    let expression = mutation.expression.as_ref().map_err(Clone::clone)?;
    let result = expression.eval_with(vars, Some(authz)).map_err(|e| format!("expression '{}' resulted in error: {e}", expression.source))?;
    let result = machinery::expr::to_json(&result);
    let (kind, well_formed) = match mutation.patch_type {
        PatchType::ApplyConfiguration => (PatchKind::Apply, result.is_object()),
        PatchType::JsonPatch => (PatchKind::Json, result.is_array()),
    };
    if !well_formed {
        let want = if kind == PatchKind::Apply { "an Object" } else { "a list of JSONPatch" };
        return Err(format!("expression '{}' must evaluate to {want}", expression.source));
    }
    let body = serde_json::to_vec(&result).map_err(|e| e.to_string())?;
    patch::apply(kind, current, &body).map_err(|e| format!("mutation failed: {e}"))
}

#[async_trait::async_trait]
impl Mutating for MutatingPolicies {
    fn name(&self) -> &'static str {
        "MutatingAdmissionPolicy"
    }

    async fn admit(&self, r: &Request<'_>, object: &mut Value) -> ApiResult<()> {
        let namespace = self.policies.namespace_object(r);
        // Selection looks at the object being admitted (its labels for object selectors).
        let view = Request { object: Some(&*object), ..*r };
        let selected = self.policies.selected(&view, namespace.as_deref())?;
        if selected.is_empty() {
            return Ok(());
        }
        let name = matching::name_of(&view);
        let mut after = Vec::with_capacity(selected.len());
        for s in &selected {
            self.run(r, s, &name, namespace.as_deref(), object).await?;
            after.push(object.clone());
        }
        // Once more for a policy that asks for it, if a later one changed the object.
        for (s, seen) in selected.iter().zip(after) {
            if s.policy.reinvoke && seen != *object {
                self.run(r, s, &name, namespace.as_deref(), object).await?;
            }
        }
        Ok(())
    }
}
