//! ImagePolicyWebhook: the images of a pod being created or updated (and of its ephemeral
//! containers) are reviewed by a webhook named in the plugin's configuration, which answers an
//! `ImageReview` (`imagepolicy.k8s.io/v1alpha1`) allowing or refusing them. Answers are kept for
//! `allowTTL`/`denyTTL`; a webhook that cannot be reached refuses the pod unless `defaultAllow`,
//! which admits it marked (`alpha.image-policy.k8s.io/failed-open`).

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::audit_annotations::annotate;
use crate::{Operation, Request, Validating};
use machinery::error::ApiResult;
use machinery::go_duration::format_nanos;
use machinery::webhook::expiring::Expiring;
use machinery::webhook::{kubeconfig, CallError, Endpoint};

/// The prefix of the audit annotations the plugin adds.
const AUDIT_PREFIX: &str = "imagepolicywebhook.image-policy.k8s.io/";
/// The pod annotation of a pod admitted although the webhook could not be asked.
const FAILED_OPEN: &str = "alpha.image-policy.k8s.io/failed-open";
/// Answers kept, as Kubernetes keeps them.
const CACHE_ENTRIES: usize = 1024;
/// How many times a call that may pass is made.
const ATTEMPTS: u32 = 5;
/// How long one call may take.
const TIMEOUT: Duration = Duration::from_secs(30);
const SECOND: i128 = 1_000_000_000;

pub struct ImagePolicyWebhook {
    endpoint: Endpoint,
    answers: Expiring<String, Value>,
    allow_ttl: Duration,
    deny_ttl: Duration,
    retry_backoff: Duration,
    default_allow: bool,
}

/// One duration of the configuration, a number of `scale` nanoseconds: -1 turns it off, 0 (or
/// none) is the default, anything else must lie within `min` and `max`.
fn duration(config: &Value, field: &str, scale: i128, (min, max): (i128, i128), default: Duration) -> Result<Duration, String> {
    let value = match &config[field] {
        Value::Null => 0,
        v => v.as_i64().ok_or_else(|| format!("imagePolicy.{field}: {v} is not a whole number"))?,
    };
    match value {
        -1 => Ok(Duration::ZERO),
        0 => Ok(default),
        v if (min..=max).contains(&(v as i128 * scale)) => Ok(Duration::from_nanos((v as i128 * scale) as u64)),
        v => Err(format!("valid value is between {} and {}, got {}", format_nanos(min), format_nanos(max), format_nanos(v as i128 * scale))),
    }
}

impl ImagePolicyWebhook {
    /// The plugin as its configuration (`imagePolicy`: `kubeConfigFile`, `allowTTL` and
    /// `denyTTL` in seconds, `retryBackoff` in milliseconds, `defaultAllow`) describes it.
    pub fn new(config: Option<&Value>) -> Result<ImagePolicyWebhook, String> {
        let config = &config.ok_or("ImagePolicyWebhook: no config specified")?["imagePolicy"];
        let kubeconfig_file = config["kubeConfigFile"].as_str().unwrap_or_default();
        let endpoint = kubeconfig::load(Path::new(kubeconfig_file)).map_err(|e| format!("ImagePolicyWebhook: {e}"))?;
        let minutes = |m: i128| m * 60 * SECOND;
        Ok(ImagePolicyWebhook {
            endpoint,
            answers: Expiring::new(CACHE_ENTRIES),
            retry_backoff: duration(config, "retryBackoff", SECOND / 1000, (1, minutes(5)), Duration::from_millis(500))?,
            allow_ttl: duration(config, "allowTTL", SECOND, (SECOND, minutes(30)), Duration::from_secs(300))?,
            deny_ttl: duration(config, "denyTTL", SECOND, (SECOND, minutes(30)), Duration::from_secs(30))?,
            default_allow: config["defaultAllow"].as_bool().unwrap_or(false),
        })
    }

    /// The review's answer (its `status`), trying again with growing pauses on failures that
    /// may pass (a connection reset, 429, 5xx).
    async fn ask(&self, spec: &Value) -> Result<Value, String> {
        let body = json!({"apiVersion": "imagepolicy.k8s.io/v1alpha1", "kind": "ImageReview", "metadata": {"creationTimestamp": null}, "spec": spec, "status": {"allowed": false}});
        let body = serde_json::to_vec(&body).map_err(|e| e.to_string())?;
        let (mut pause, mut attempt) = (self.retry_backoff, 1);
        loop {
            let (message, again) = match self.endpoint.post_json(body.clone(), TIMEOUT).await {
                Ok((status, answer)) if status.is_success() => {
                    let review: Value = serde_json::from_slice(&answer).map_err(|e| format!("decoding the webhook's ImageReview: {e}"))?;
                    return Ok(review["status"].clone());
                }
                Ok((status, _)) => (format!("Error contacting webhook: {}", status.as_u16()), status.as_u16() == 429 || status.is_server_error()),
                Err(e @ CallError::Timeout(_)) => (e.to_string(), false),
                Err(e @ CallError::Transport(_)) => (e.to_string(), true),
            };
            if !again || attempt == ATTEMPTS {
                return Err(message);
            }
            attempt += 1;
            tokio::time::sleep(pause).await;
            pause = pause.mul_f32(1.5);
        }
    }
}

/// The review of `pod`'s images: its containers and init containers, or (through the
/// `ephemeralcontainers` subresource) its ephemeral containers; the pod's annotations of the
/// `*.image-policy.k8s.io/*` kind; its namespace.
fn review_spec(pod: &Value, ephemeral: bool, namespace: &str) -> Value {
    let lists: &[&str] = if ephemeral { &["ephemeralContainers"] } else { &["containers", "initContainers"] };
    let containers: Vec<Value> = lists.iter().flat_map(|l| pod["spec"][*l].as_array().into_iter().flatten()).map(|c| json!({"image": c["image"]})).collect();
    let annotations: Map<String, Value> = pod["metadata"]["annotations"].as_object().into_iter().flatten().filter(|(k, _)| k.contains(".image-policy.k8s.io/")).map(|(k, v)| (k.clone(), v.clone())).collect();
    let mut spec = Map::new();
    if !containers.is_empty() {
        spec.insert("containers".into(), Value::Array(containers));
    }
    if !annotations.is_empty() {
        spec.insert("annotations".into(), Value::Object(annotations));
    }
    if !namespace.is_empty() {
        spec.insert("namespace".into(), json!(namespace));
    }
    Value::Object(spec)
}

#[async_trait::async_trait]
impl Validating for ImagePolicyWebhook {
    fn name(&self) -> &'static str {
        "ImagePolicyWebhook"
    }

    async fn validate(&self, r: &Request<'_>) -> ApiResult<()> {
        let ephemeral = r.req.subresource.as_deref() == Some("ephemeralcontainers");
        let pods = r.req.info.group.is_empty() && r.req.info.resource == "pods" && (r.req.subresource.is_none() || ephemeral);
        let (Some(pod), true, Operation::Create | Operation::Update) = (r.object, pods, r.operation) else { return Ok(()) };
        let spec = review_spec(pod, ephemeral, r.req.namespace.as_deref().unwrap_or_default());
        let key = spec.to_string();
        let status = match self.answers.get(&key) {
            Some(status) => status,
            None => match self.ask(&spec).await {
                Ok(status) => {
                    let ttl = if status["allowed"] == true { self.allow_ttl } else { self.deny_ttl };
                    self.answers.insert(key, status.clone(), ttl);
                    status
                }
                Err(_) if self.default_allow => {
                    annotate(format!("{AUDIT_PREFIX}failed-open"), "true");
                    r.annotate(FAILED_OPEN, "true");
                    return Ok(());
                }
                Err(e) => return Err(r.forbidden(e)),
            },
        };
        for (k, v) in status["auditAnnotations"].as_object().into_iter().flatten() {
            annotate(format!("{AUDIT_PREFIX}{k}"), v.as_str().unwrap_or_default());
        }
        match (status["allowed"] == true, status["reason"].as_str().unwrap_or_default()) {
            (true, _) => Ok(()),
            (false, "") => Err(r.forbidden("one or more images rejected by webhook backend")),
            (false, reason) => Err(r.forbidden(format!("image policy webhook backend denied one or more images: {reason}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_of_the_configuration() {
        let config = json!({"allowTTL": 50, "denyTTL": -1, "retryBackoff": 3000000});
        let range = (SECOND, 30 * 60 * SECOND);
        assert_eq!(duration(&config, "allowTTL", SECOND, range, Duration::from_secs(300)), Ok(Duration::from_secs(50)));
        assert_eq!(duration(&config, "denyTTL", SECOND, range, Duration::from_secs(30)), Ok(Duration::ZERO));
        assert_eq!(duration(&config, "missing", SECOND, range, Duration::from_secs(30)), Ok(Duration::from_secs(30)));
        assert_eq!(duration(&json!({"allowTTL": 3000}), "allowTTL", SECOND, range, Duration::ZERO), Err("valid value is between 1s and 30m0s, got 50m0s".into()));
        assert_eq!(duration(&config, "retryBackoff", SECOND / 1000, (1, 300 * SECOND), Duration::ZERO), Err("valid value is between 1ns and 5m0s, got 50m0s".into()));
    }

    #[test]
    fn the_review_names_images_annotations_and_namespace() {
        let pod = json!({"metadata": {"annotations": {"team.image-policy.k8s.io/ticket": "1", "other": "x"}},
            "spec": {"containers": [{"image": "a"}], "initContainers": [{"image": "b"}], "ephemeralContainers": [{"image": "c"}]}});
        assert_eq!(review_spec(&pod, false, "ns"), json!({"containers": [{"image": "a"}, {"image": "b"}], "annotations": {"team.image-policy.k8s.io/ticket": "1"}, "namespace": "ns"}));
        assert_eq!(review_spec(&pod, true, "ns")["containers"], json!([{"image": "c"}]));
    }
}
