//! DenyServiceExternalIPs: no Service may take on an external IP it did not have (existing
//! ones may stay or go), as a guard against Services intercepting traffic to addresses they do
//! not own.

use std::collections::HashSet;

use serde_json::Value;

use crate::{Request, Validating};
use machinery::error::ApiResult;

pub struct DenyServiceExternalIPs;

fn external_ips(service: &Value) -> HashSet<&str> {
    service["spec"]["externalIPs"].as_array().into_iter().flatten().filter_map(Value::as_str).collect()
}

#[async_trait::async_trait]
impl Validating for DenyServiceExternalIPs {
    fn name(&self) -> &'static str {
        "DenyServiceExternalIPs"
    }

    async fn validate(&self, r: &Request<'_>) -> ApiResult<()> {
        let Some(service) = r.object.filter(|_| r.concerns("", "services")) else { return Ok(()) };
        let before = r.old.map(external_ips).unwrap_or_default();
        if external_ips(service).is_subset(&before) {
            return Ok(());
        }
        Err(r.forbidden("Use of external IPs is denied by admission control"))
    }
}
