//! API Priority and Fairness: the FlowSchemas and PriorityLevelConfigurations every cluster has
//! ([`bootstrap`]), the classification of every request by them ([`classify`]), the queues each
//! priority level keeps ([`dispatch`]), and the schema status the leader keeps
//! (`controllers::flowschema_status`).
//! With APF off (`--enable-priority-and-fairness=false`) the older max-in-flight limits apply
//! instead ([`inflight`]).

pub mod bootstrap;
pub mod classify;
pub mod dispatch;
pub mod inflight;
mod rules;

use std::time::{Duration, Instant};

pub use classify::{Classification, FlowControl};

use access::Attributes;
use machinery::error::ApiError;
use crate::metrics::{Executing, Metrics};

/// Kubernetes' answer to a request its priority level has no room for.
const TOO_MANY: &str = "Too many requests, please try again later.";

/// Longest a request may wait in a queue: a quarter of its deadline, at most a minute.
fn wait_limit(deadline: Duration) -> Duration {
    (deadline / 4).min(Duration::from_secs(60))
}

/// What a request holds while it runs; dropping it frees the seat, and the request is no longer
/// counted as executing.
#[derive(Default)]
pub struct Seat {
    /// A seat at a priority level.
    _queued: Option<dispatch::Permit>,
    /// A max-in-flight slot.
    _in_flight: Option<tokio::sync::OwnedSemaphorePermit>,
    _executing: Option<Executing>,
}

impl FlowControl {
    /// Waits for the request's turn at its priority level (or, with APF off, for a free
    /// max-in-flight slot); 429 when it gets none.
    pub async fn admit(&self, flow: Option<&Classification>, attrs: &Attributes, deadline: Duration, metrics: &Metrics) -> Result<Seat, ApiError> {
        let mutating = inflight::MUTATING.contains(&attrs.verb.as_str());
        let Some(c) = flow else {
            return match &self.inflight {
                Some(limits) => match limits.admit(attrs) {
                    Some(Some(permit)) => Ok(Seat { _in_flight: Some(permit), _executing: Some(metrics.requests.executing(mutating)), ..Default::default() }),
                    Some(None) => Ok(Seat::default()),
                    None => Err(ApiError::TooManyRequests(TOO_MANY.into())),
                },
                None => Ok(Seat::default()),
            };
        };
        let info = dispatch::RequestInfo {
            flow_schema: c.flow_schema.clone(),
            distinguisher: c.distinguisher.clone(),
            user: attrs.user.name.clone(),
            verb: attrs.verb.clone(),
            path: attrs.path.clone(),
            namespace: attrs.namespace.clone(),
            name: attrs.name.clone(),
            api_version: if attrs.api_group.is_empty() { attrs.api_version.clone() } else { format!("{}/{}", attrs.api_group, attrs.api_version) },
            resource: attrs.resource.clone(),
            subresource: attrs.subresource.clone(),
        };
        let queued = Instant::now();
        match self.dispatcher.admit(&c.priority_level, c.level, info, wait_limit(deadline)).await {
            Ok(permit) => {
                metrics.flowcontrol_dispatched(&c.flow_schema, &c.priority_level, queued.elapsed());
                Ok(Seat { _queued: Some(permit), _executing: Some(metrics.requests.executing(mutating)), ..Default::default() })
            }
            Err(rejection) => {
                metrics.flowcontrol_rejected(&c.flow_schema, &c.priority_level, rejection.reason(), queued.elapsed());
                Err(ApiError::TooManyRequests(TOO_MANY.into()))
            }
        }
    }
}
