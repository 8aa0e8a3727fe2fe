//! The `Webhook` mode: asks an outside service with a `SubjectAccessReview` (v1 or v1beta1),
//! caches its answers (allowed and refused for their own TTLs), and decides by the failure
//! policy when it cannot get one. `matchConditions` choose which requests are sent.

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Value};

use super::config::{Connection, FailurePolicy, WebhookSettings};
use super::match_conditions::MatchConditions;
use super::{Authorizer, Decision, UserRules, Verdict};
use crate::attributes::Attributes;
use crate::user::UserInfo;
use super::metrics::AuthorizationMetrics;
use machinery::webhook::expiring::Expiring;
use machinery::webhook::{kubeconfig, CallError, Endpoint};

/// Answers kept at most; when full, expired ones are dropped, then all.
const CACHE_ENTRIES: usize = 8192;
/// Requests whose names are this long are not cached (Kubernetes' bound).
const MAX_CACHED_ATTRIBUTES: usize = 10_000;
/// Tries for an answer when the webhook fails in a way that may pass (reset, 429, 5xx).
const ATTEMPTS: u32 = 5;
const FIRST_BACKOFF: Duration = Duration::from_millis(500);

#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
struct ReviewStatus {
    #[serde(default)]
    allowed: bool,
    #[serde(default)]
    denied: bool,
    #[serde(default)]
    reason: String,
}

#[derive(Deserialize)]
struct Review {
    #[serde(default)]
    status: ReviewStatus,
}

pub struct Webhook {
    name: String,
    endpoint: Endpoint,
    settings: WebhookSettings,
    conditions: MatchConditions,
    cache: Expiring<String, ReviewStatus>,
    metrics: Arc<dyn AuthorizationMetrics>,
}

impl Webhook {
    pub fn new(name: &str, settings: &WebhookSettings, metrics: &Arc<dyn AuthorizationMetrics>) -> Result<Webhook, String> {
        let endpoint = match &settings.connection {
            Connection::KubeConfigFile(path) => kubeconfig::load(path)?,
            Connection::InClusterConfig => kubeconfig::in_cluster()?,
        };
        Ok(Webhook {
            name: name.to_string(),
            endpoint,
            settings: settings.clone(),
            conditions: MatchConditions::compile(&settings.match_conditions)?,
            cache: Expiring::new(CACHE_ENTRIES),
            metrics: metrics.clone(),
        })
    }

    fn on_error(&self, error: String) -> Verdict {
        let decision = match self.settings.failure_policy {
            FailurePolicy::NoOpinion => Decision::NoOpinion,
            FailurePolicy::Deny => Decision::Deny,
        };
        Verdict { decision, reason: String::new(), error: Some(error) }
    }

    fn remember(&self, key: String, status: &ReviewStatus) {
        let ttl = if status.allowed { self.settings.authorized_ttl } else { self.settings.unauthorized_ttl };
        if key.len() <= MAX_CACHED_ATTRIBUTES {
            self.cache.insert(key, status.clone(), ttl);
        }
    }

    /// Sends the review, trying again (with backoff) on failures that may pass. A failure
    /// is given with how the metrics count it (`error` or `timeout`).
    async fn ask(&self, spec: &Value) -> Result<ReviewStatus, (&'static str, String)> {
        let body = json!({
            "apiVersion": format!("authorization.k8s.io/{}", self.settings.sar_version),
            "kind": "SubjectAccessReview",
            "spec": spec,
        });
        let body = serde_json::to_vec(&body).map_err(|e| ("error", e.to_string()))?;
        let mut backoff = FIRST_BACKOFF;
        let mut attempt = 1;
        loop {
            let (label, message, retry) = match self.endpoint.post_json(body.clone(), self.settings.timeout).await {
                Ok((status, answer)) if status.is_success() => {
                    self.metrics.authorization_webhook_evaluation(&self.name, "success");
                    return serde_json::from_slice::<Review>(&answer)
                        .map(|r| r.status)
                        .map_err(|e| ("error", format!("decoding the webhook's SubjectAccessReview: {e}")));
                }
                Ok((status, answer)) => {
                    let code = status.as_u16();
                    let result = if code == 504 { "timeout" } else { "error" };
                    self.metrics.authorization_webhook_evaluation(&self.name, result);
                    let text = String::from_utf8_lossy(&answer[..answer.len().min(512)]).into_owned();
                    (result, format!("the webhook answered {code}: {text}"), code == 429 || code >= 500)
                }
                Err(e @ CallError::Timeout(_)) => {
                    self.metrics.authorization_webhook_evaluation(&self.name, "timeout");
                    ("timeout", e.to_string(), false)
                }
                Err(e @ CallError::Transport(_)) => {
                    self.metrics.authorization_webhook_evaluation(&self.name, "error");
                    let reset = e.to_string().contains("reset");
                    ("error", e.to_string(), reset)
                }
            };
            if !retry || attempt >= ATTEMPTS {
                return Err((label, message));
            }
            attempt += 1;
            tokio::time::sleep(backoff).await;
            backoff = backoff.mul_f32(1.5);
        }
    }
}

/// The SubjectAccessReview spec for a request, in `version`'s shape (v1beta1 calls the groups
/// `group`).
pub fn review_spec(attrs: &Attributes, version: &str) -> Value {
    let mut spec = json!({
        "user": attrs.user.name,
        "uid": attrs.user.uid,
        "extra": attrs.user.extra,
    });
    let groups_field = if version == "v1beta1" { "group" } else { "groups" };
    spec[groups_field] = json!(attrs.user.groups);
    if attrs.resource_request {
        let mut ra = json!({
            "namespace": attrs.namespace,
            "verb": attrs.verb,
            "group": attrs.api_group,
            "version": attrs.api_version,
            "resource": attrs.resource,
            "subresource": attrs.subresource,
            "name": attrs.name,
        });
        if let Some(s) = attrs.field_selector.as_ref().filter(|s| !s.is_empty()) {
            ra["fieldSelector"] = json!({ "rawSelector": s });
        }
        if let Some(s) = attrs.label_selector.as_ref().filter(|s| !s.is_empty()) {
            ra["labelSelector"] = json!({ "rawSelector": s });
        }
        spec["resourceAttributes"] = ra;
    } else {
        spec["nonResourceAttributes"] = json!({ "path": attrs.path, "verb": attrs.verb });
    }
    spec
}

#[async_trait::async_trait]
impl Authorizer for Webhook {
    fn mode(&self) -> &'static str {
        "Webhook"
    }

    async fn authorize(&self, attrs: &Attributes) -> Verdict {
        match self.conditions.matches(&review_spec(attrs, "v1")) {
            Ok(true) => {}
            Ok(false) => return Verdict::no_opinion(""),
            Err(e) => {
                self.metrics.authorization_match_condition_error(&self.name);
                return self.on_error(e);
            }
        }
        let spec = review_spec(attrs, &self.settings.sar_version);
        let key = spec.to_string();
        let status = match self.cache.get(&key) {
            Some(status) => status,
            None => match self.ask(&spec).await {
                Ok(status) => {
                    self.remember(key, &status);
                    status
                }
                Err((label, e)) => {
                    tracing::error!(webhook = %self.name, url = %self.endpoint.url(), error = %e, "authorization webhook failed");
                    if self.settings.failure_policy == FailurePolicy::NoOpinion {
                        self.metrics.authorization_webhook_fail_open(&self.name, label);
                    }
                    return self.on_error(format!("authorization webhook {:?}: {e}", self.name));
                }
            },
        };
        match (status.allowed, status.denied) {
            (true, true) => Verdict {
                decision: Decision::Deny,
                reason: status.reason,
                error: Some("webhook subject access review returned both allow and deny response".into()),
            },
            (_, true) => Verdict::deny(status.reason),
            (true, _) => Verdict::allow(status.reason),
            _ => Verdict::no_opinion(status.reason),
        }
    }

    fn rules_for(&self, _: &UserInfo, _: &str) -> UserRules {
        UserRules { incomplete: true, errors: vec!["webhook authorizer does not support user rule resolution".into()], ..Default::default() }
    }
}
