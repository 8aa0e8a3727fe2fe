//! Admission webhooks: the MutatingWebhookConfigurations (in name order, each webhook in turn,
//! its JSON patch applied before the next) and then the ValidatingWebhookConfigurations this
//! replica has applied. A webhook is called when its rules, namespace and object selectors and
//! match conditions select the write; `failurePolicy` decides when it cannot be asked, and a
//! dry run reaches only webhooks without side effects.

mod call;

use std::time::Duration;

use serde_json::{json, Value};

use super::{matching, Mutating, Request, Validating};
use crate::configuration::{MUTATING_WEBHOOKS, VALIDATING_WEBHOOKS};
use crate::Replicated;
use machinery::error::{ApiError, ApiResult};
use machinery::expr::Expression;
use raft_store::trace::OpenTelemetrySpanExt;
use tracing::Instrument;

/// The webhooks of every configuration under `prefix`, in order.
fn webhooks(state: &Replicated, prefix: &str) -> ApiResult<Vec<Value>> {
    let configurations = state.configuration.under(prefix)?;
    Ok(configurations.iter().flat_map(|c| c["webhooks"].as_array().cloned().unwrap_or_default()).collect())
}

/// Whether the webhook is asked about this write, or the error that stops the write.
fn selects(state: &Replicated, webhook: &Value, r: &Request<'_>, object: Option<&Value>) -> Result<bool, String> {
    // Admission configuration is never sent to webhooks.
    if r.req.info.group == "admissionregistration.k8s.io" {
        return Ok(false);
    }
    let namespace = match r.req.namespace.as_deref() {
        Some(ns) if r.req.info.namespaced => state.namespaces.get(ns),
        _ => None,
    };
    let constraints = json!({
        "resourceRules": webhook["rules"],
        "namespaceSelector": webhook["namespaceSelector"],
        "objectSelector": webhook["objectSelector"],
    });
    let view = Request { req: r.req, operation: r.operation, object, old: r.old, dry_run: r.dry_run, warnings: r.warnings, annotations: r.annotations };
    if !matching::matches(&constraints, &view, namespace.as_deref()) {
        return Ok(false);
    }
    let request = call::admission_request(r, object, "");
    let null = Value::Null;
    let vars = [("object", object.unwrap_or(&null)), ("oldObject", r.old.unwrap_or(&null)), ("request", &request)];
    for condition in webhook["matchConditions"].as_array().into_iter().flatten() {
        let name = condition["name"].as_str().unwrap_or_default();
        let source = condition["expression"].as_str().unwrap_or_default();
        let expression = Expression::compile(source, &vars, Some("bool")).map_err(|e| format!("matchCondition {name:?}: {e}"))?;
        if !expression.eval_bool(&vars, None).map_err(|e| format!("matchCondition {name:?}: {e}"))? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Asks one webhook (of a mutating configuration, or of a validating one); `Ok(None)` when it
/// was not asked or its failure is ignored.
async fn ask(state: &Replicated, webhook: &Value, r: &Request<'_>, object: Option<&Value>, mutating: bool) -> ApiResult<Option<call::Answer>> {
    let name = webhook["name"].as_str().unwrap_or_default();
    let fail_closed = webhook["failurePolicy"].as_str() != Some("Ignore");
    let failed = |e: String| -> ApiResult<Option<call::Answer>> {
        tracing::warn!(webhook = name, error = %e, "admission webhook failed");
        if fail_closed {
            Err(ApiError::Internal(format!("Internal error occurred: failed calling webhook \"{name}\": failed to call webhook: {e}")))
        } else {
            Ok(None)
        }
    };
    match selects(state, webhook, r, object) {
        Ok(true) => {}
        Ok(false) => return Ok(None),
        Err(e) => return failed(e),
    }
    if r.dry_run && !matches!(webhook["sideEffects"].as_str(), Some("None") | Some("NoneOnDryRun")) {
        return Err(ApiError::bad_request(format!("admission webhook \"{name}\" does not support dry run")));
    }
    let endpoint = match machinery::webhook::client_config::endpoint(&state.store, &webhook["clientConfig"]) {
        Ok(e) => e,
        Err(e) => return failed(e),
    };
    let timeout = Duration::from_secs(webhook["timeoutSeconds"].as_u64().unwrap_or(10).clamp(1, 30));
    let request = call::admission_request(r, object, &uuid::Uuid::new_v4().to_string());
    // A span of the request's trace, named and described as kube-apiserver's.
    let span = raft_store::trace::child(if mutating { "Call mutating webhook" } else { "Call validating webhook" });
    span.set_attribute("webhook", name.to_string());
    span.set_attribute("resource", r.req.info.resource.to_string());
    span.set_attribute("operation", r.operation.as_str().to_string());
    match call::call(&endpoint, request, timeout).instrument(span).await {
        Ok(answer) => {
            // Kept whatever the webhook decided, under its name, as Kubernetes keeps them.
            for (key, value) in &answer.audit_annotations {
                crate::audit_annotations::annotate(format!("{name}/{key}"), value.clone());
            }
            if !answer.allowed {
                return Err(refusal(name, &answer.status));
            }
            for w in &answer.warnings {
                r.warn(w.clone());
            }
            Ok(Some(answer))
        }
        Err(e) => failed(e),
    }
}

/// A webhook's refusal as Kubernetes passes it on: its code (400 at least), reason and message.
fn refusal(name: &str, status: &Value) -> ApiError {
    let denied_by = format!("admission webhook \"{name}\" denied the request");
    let message = match (status["message"].as_str().filter(|m| !m.is_empty()), status["reason"].as_str().filter(|r| !r.is_empty())) {
        (Some(m), _) => format!("{denied_by}: {m}"),
        (None, Some(reason)) => format!("{denied_by}: {reason}"),
        (None, None) => format!("{denied_by} without explanation"),
    };
    let code = status["code"].as_u64().filter(|c| (400..600).contains(c)).unwrap_or(400) as u16;
    ApiError::Passed { code, reason: status["reason"].as_str().unwrap_or_default().to_string(), message }
}

/// The mutating webhooks.
pub struct MutatingWebhooks(pub Replicated);

#[async_trait::async_trait]
impl Mutating for MutatingWebhooks {
    fn name(&self) -> &'static str {
        "MutatingAdmissionWebhook"
    }

    async fn admit(&self, r: &Request<'_>, object: &mut Value) -> ApiResult<()> {
        let _phase = crate::webhook_time::Phase::start();
        let all = webhooks(&self.0, MUTATING_WEBHOOKS)?;
        let mut reinvoke = Vec::new();
        let mut changed = false;
        for (i, webhook) in all.iter().enumerate() {
            if let Some(answer) = ask(&self.0, webhook, r, Some(object), true).await? {
                if let Some(patch) = answer.patch {
                    *object = machinery::patch::apply(machinery::patch::PatchKind::Json, object, &patch)?;
                    changed = true;
                    // Earlier webhooks that asked to see later changes are called once more.
                    reinvoke.extend(all[..i].iter().filter(|w| w["reinvocationPolicy"] == "IfNeeded").cloned());
                }
            }
        }
        for webhook in &reinvoke {
            if let Some(patch) = ask(&self.0, webhook, r, Some(object), true).await?.and_then(|a| a.patch) {
                *object = machinery::patch::apply(machinery::patch::PatchKind::Json, object, &patch)?;
            }
        }
        if changed {
            // What the webhooks made is decoded and defaulted like a client's object (and validated
            // with it after the mutating phase).
            *object = machinery::prepare::decode(r.req.info, object.clone(), machinery::prepare::FieldValidation::Ignore, &[], &mut Vec::new())?;
        }
        Ok(())
    }
}

/// The validating webhooks.
pub struct ValidatingWebhooks(pub Replicated);

#[async_trait::async_trait]
impl Validating for ValidatingWebhooks {
    fn name(&self) -> &'static str {
        "ValidatingAdmissionWebhook"
    }

    async fn validate(&self, r: &Request<'_>) -> ApiResult<()> {
        let _phase = crate::webhook_time::Phase::start();
        for webhook in webhooks(&self.0, VALIDATING_WEBHOOKS)? {
            ask(&self.0, &webhook, r, r.object, false).await?;
        }
        Ok(())
    }
}
