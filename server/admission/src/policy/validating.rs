//! ValidatingAdmissionPolicy: every write a binding's policy selects is checked with the
//! policy's validations; a refusal is Kubernetes' error for it, with the validation's reason and
//! message, and the binding's actions decide between refusing, warning and auditing.

use serde_json::{json, Value};


use crate::Replicated;
use super::{bindings, conditions_and_variables, refs, Policies, Policy};
use crate::{matching, Request, Validating};
use access::Auth;
use machinery::error::{ApiError, ApiResult, Refusal};
use super::authorizer::Authorizer;

pub struct ValidatingPolicies {
    policies: Policies,
}

/// What one policy said about a write.
enum Outcome {
    Allowed,
    Refused { message: String, reason: &'static str },
}

impl ValidatingPolicies {
    pub fn new(state: Replicated, auth: Auth) -> ValidatingPolicies {
        ValidatingPolicies {
            policies: Policies::new(
                state,
                auth,
                "/registry/admissionregistration.k8s.io/validatingadmissionpolicies/",
                crate::configuration::VALIDATING_POLICY_BINDINGS,
            ),
        }
    }
}

/// Runs one policy's checks with one set of parameters bound; with the audit annotations its
/// expressions give (key and value; none when an expression gives null).
fn evaluate(policy: &Policy, mut vars: Vec<(&'static str, Value)>, authz: &Authorizer) -> Result<(Outcome, Vec<(String, String)>), String> {
    if !conditions_and_variables(policy, &mut vars, authz)? {
        return Ok((Outcome::Allowed, Vec::new()));
    }
    let bound = refs(&vars);
    let mut annotations = Vec::new();
    for (key, expression) in &policy.audit_annotations {
        let expression = expression.as_ref().map_err(|e| format!("auditAnnotations '{key}': {e}"))?;
        if let Some(value) = expression.eval_optional_string(&bound, Some(authz))?.filter(|v| !v.is_empty()) {
            annotations.push((format!("{}/{key}", policy.name), value));
        }
    }
    for v in &policy.validations {
        let expression = v.expression.as_ref().map_err(Clone::clone)?;
        if expression.eval_bool(&bound, Some(authz))? {
            continue;
        }
        let from_expression = v
            .message_expression
            .as_ref()
            .and_then(|m| m.as_ref().ok())
            .and_then(|m| m.eval_string(&bound, Some(authz)).ok())
            .filter(|m| !m.trim().is_empty());
        let message = from_expression.or_else(|| v.message.clone()).unwrap_or_else(|| format!("failed expression: {}", expression.source));
        return Ok((Outcome::Refused { message, reason: v.reason }, annotations));
    }
    Ok((Outcome::Allowed, annotations))
}

#[async_trait::async_trait]
impl Validating for ValidatingPolicies {
    fn name(&self) -> &'static str {
        "ValidatingAdmissionPolicy"
    }

    async fn validate(&self, r: &Request<'_>) -> ApiResult<()> {
        let namespace = self.policies.namespace_object(r);
        let selected = self.policies.selected(r, namespace.as_deref())?;
        if selected.is_empty() {
            return Ok(());
        }
        let name = matching::name_of(r);
        // Failures under the `Audit` action, for the request's audit event.
        let mut failures: Vec<Value> = Vec::new();
        for s in selected {
            let (policy, binding_name) = (&s.policy, s.name.as_str());
            let spec = &s.binding["spec"];
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
            let params: Vec<Value> = match self.policies.params(&s, r.req.namespace.as_deref())? {
                None => vec![Value::Null],
                Some(found) if found.is_empty() => {
                    if spec["paramRef"]["parameterNotFoundAction"].as_str() == Some("Allow") {
                        continue;
                    }
                    return Err(deny("no params found for policy binding with `Deny` parameterNotFoundAction".into(), "Invalid"));
                }
                Some(found) => found,
            };
            for param in params {
                let object = r.object.cloned().unwrap_or(Value::Null);
                let (vars, authorizer) = bindings(r, &name, object, param, namespace.as_deref());
                let outcome = match self.policies.with_authorizer(&authorizer, || evaluate(policy, vars.clone(), &authorizer)).await {
                    Ok((outcome, annotations)) => {
                        for (key, value) in annotations {
                            crate::audit_annotations::annotate(key, value);
                        }
                        outcome
                    }
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
                        failures.push(json!({"message": message, "policy": policy.name, "binding": binding_name, "validationActions": actions}));
                    }
                }
            }
        }
        if !failures.is_empty() {
            crate::audit_annotations::annotate(crate::audit_annotations::VALIDATION_FAILURE, Value::Array(failures).to_string());
        }
        Ok(())
    }
}
