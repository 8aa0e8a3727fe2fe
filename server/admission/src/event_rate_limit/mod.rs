//! EventRateLimit, the validating admission plugin that limits how fast core `Event`s are
//! created and updated (events.k8s.io's are not limited, nor dry runs), as kube-apiserver 1.36
//! does: each configured limit keeps token buckets by its key (the whole server, the namespace,
//! the user, or the event's source and involved object); every limit takes its token, and an
//! event that finds any bucket empty is refused with 429 `TooManyRequests`. The buckets are this
//! process's own: each replica of a cluster limits the events it receives, as each
//! kube-apiserver of a highly available control plane does.

mod buckets;
mod configuration;

use std::sync::Mutex;
use std::time::Instant;

use serde_json::Value;

use access::authz::rbac::aggregate;
use machinery::error::{ApiError, ApiResult};

use crate::{Operation, Request, Validating};
use buckets::{Bucket, Lru};
use configuration::{Limit, LimitType};

/// The buckets of one limit: one for the server, or those of the recently seen keys.
enum Buckets {
    Single(Bucket),
    Keyed(Lru),
}

/// One configured limit and its buckets.
struct Enforcer {
    limit: Limit,
    buckets: Mutex<Buckets>,
}

impl Enforcer {
    fn new(limit: Limit, now: Instant) -> Enforcer {
        let buckets = match limit.limit_type {
            LimitType::Server => Buckets::Single(Bucket::new(limit.qps, limit.burst, now)),
            _ => Buckets::Keyed(Lru::new(limit.cache_size)),
        };
        Enforcer { limit, buckets: Mutex::new(buckets) }
    }

    /// Takes a token from the bucket of `key`; the refusal in the plugin's words when it is empty.
    fn accept(&self, key: &str, now: Instant) -> Result<(), String> {
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        let Limit { qps, burst, .. } = self.limit;
        let bucket = match &mut *buckets {
            Buckets::Single(bucket) => bucket,
            Buckets::Keyed(lru) => lru.get(key, || Bucket::new(qps, burst, now)),
        };
        match bucket.try_accept(now) {
            true => Ok(()),
            false => Err(format!("limit reached on type {} for key {key}", self.limit.limit_type.as_str())),
        }
    }
}

pub struct EventRateLimit {
    enforcers: Vec<Enforcer>,
}

impl EventRateLimit {
    /// The plugin with its configuration; a missing or invalid one is an error.
    pub fn new(config: Option<&Value>) -> Result<EventRateLimit, String> {
        let limits = configuration::load(config).map_err(|e| format!("couldn't init admission plugin \"EventRateLimit\": {e}"))?;
        let now = Instant::now();
        Ok(EventRateLimit { enforcers: limits.into_iter().map(|limit| Enforcer::new(limit, now)).collect() })
    }

    /// Every limit's verdict on one event at `now`, each taking its token; the refusal when any
    /// bucket was empty.
    fn admit(&self, r: &Request<'_>, event: &Value, now: Instant) -> ApiResult<()> {
        let refusals: Vec<String> = self.enforcers.iter().filter_map(|e| e.accept(&key(e.limit.limit_type, r, event), now).err()).collect();
        match refusals.is_empty() {
            true => Ok(()),
            false => Err(ApiError::LimitReached(aggregate(&refusals))),
        }
    }
}

/// The bucket key of a limit for an event: the involved object's fields run together for
/// `SourceAndObject`, as the Go plugin joins them.
fn key(limit_type: LimitType, r: &Request<'_>, event: &Value) -> String {
    match limit_type {
        LimitType::Server => String::new(),
        LimitType::Namespace => r.req.namespace.clone().unwrap_or_default(),
        LimitType::User => r.req.user.name.clone(),
        LimitType::SourceAndObject => {
            let (source, object) = (&event["source"], &event["involvedObject"]);
            let fields = [&source["component"], &source["host"], &object["kind"], &object["namespace"], &object["name"], &object["uid"], &object["apiVersion"]];
            fields.iter().filter_map(|v| v.as_str()).collect()
        }
    }
}

#[async_trait::async_trait]
impl Validating for EventRateLimit {
    fn name(&self) -> &'static str {
        "EventRateLimit"
    }

    async fn validate(&self, r: &Request<'_>) -> ApiResult<()> {
        let Some(event) = r.object.filter(|_| r.concerns("", "events") && r.operation != Operation::Delete && !r.dry_run) else { return Ok(()) };
        self.admit(r, event, Instant::now())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::Admission;
    use access::request::{ResourceRequest, Verb};
    use access::UserInfo;
    use machinery::registry;

    fn request(group: &str, version: &str, namespace: &str, user: &str) -> ResourceRequest {
        ResourceRequest {
            info: registry::lookup(group, version, "events").unwrap(),
            namespace: Some(namespace.into()),
            name: Some("e".into()),
            subresource: None,
            verb: Verb::Create,
            user: Arc::new(UserInfo { name: user.into(), ..Default::default() }),
        }
    }

    fn plugin(limits: Value) -> Admission {
        let config = json!({"apiVersion": "eventratelimit.admission.k8s.io/v1alpha1", "kind": "Configuration", "limits": limits});
        Admission::new(vec![], vec![Arc::new(EventRateLimit::new(Some(&config)).unwrap())])
    }

    async fn message(admission: &Admission, req: &ResourceRequest, operation: Operation, dry_run: bool) -> Option<String> {
        let mut event = json!({"source": {"component": "kubelet", "host": "n1"}, "involvedObject": {"kind": "Pod", "name": "p", "uid": "u1", "apiVersion": "v1"}});
        admission.validate(req, operation, Some(&mut event), None, dry_run).await.err().map(|e| e.status()["message"].as_str().unwrap().to_string())
    }

    #[tokio::test]
    async fn every_limit_takes_its_token_and_refusals_are_joined() {
        let admission = plugin(json!([{"type": "Namespace", "qps": 1, "burst": 2}, {"type": "User", "qps": 1, "burst": 3}]));
        let (a, b) = (request("", "v1", "a", "alice"), request("", "v1", "b", "alice"));
        assert_eq!(message(&admission, &a, Operation::Create, false).await, None);
        assert_eq!(message(&admission, &a, Operation::Update, false).await, None);
        assert_eq!(message(&admission, &a, Operation::Create, false).await.as_deref(), Some("Too many requests: limit reached on type Namespace for key a"));
        // The refused event took the user's third token.
        assert_eq!(
            message(&admission, &b, Operation::Create, false).await.as_deref(),
            Some("Too many requests: limit reached on type User for key alice")
        );
        assert_eq!(
            message(&admission, &a, Operation::Create, false).await.as_deref(),
            Some("Too many requests: [limit reached on type Namespace for key a, limit reached on type User for key alice]")
        );
        // Not limited: deletions, dry runs, events.k8s.io's events.
        assert_eq!(message(&admission, &a, Operation::Delete, false).await, None);
        assert_eq!(message(&admission, &a, Operation::Create, true).await, None);
        assert_eq!(message(&admission, &request("events.k8s.io", "v1", "a", "alice"), Operation::Create, false).await, None);
    }

    #[tokio::test]
    async fn source_and_object_keys_run_the_fields_together() {
        let admission = plugin(json!([{"type": "SourceAndObject", "qps": 1, "burst": 1}, {"type": "Server", "qps": 1, "burst": 5}]));
        let req = request("", "v1", "a", "alice");
        assert_eq!(message(&admission, &req, Operation::Create, false).await, None);
        assert_eq!(
            message(&admission, &req, Operation::Create, false).await.as_deref(),
            Some("Too many requests: limit reached on type SourceAndObject for key kubeletn1Podpu1v1")
        );
    }

    #[test]
    fn without_a_configuration_it_does_not_start() {
        assert_eq!(EventRateLimit::new(None).err().unwrap(), "couldn't init admission plugin \"EventRateLimit\": limits: Invalid value: null: must not be empty");
    }
}
