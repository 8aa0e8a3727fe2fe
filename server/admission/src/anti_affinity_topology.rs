//! LimitPodHardAntiAffinityTopology: a pod's required anti-affinity terms may only spread it
//! across hosts (`kubernetes.io/hostname`), so that one pod cannot keep a whole zone to itself.

use crate::{Request, Validating};
use machinery::error::ApiResult;

const HOSTNAME: &str = "kubernetes.io/hostname";

pub struct LimitPodHardAntiAffinityTopology;

#[async_trait::async_trait]
impl Validating for LimitPodHardAntiAffinityTopology {
    fn name(&self) -> &'static str {
        "LimitPodHardAntiAffinityTopology"
    }

    async fn validate(&self, r: &Request<'_>) -> ApiResult<()> {
        let Some(pod) = r.object.filter(|_| r.concerns("", "pods")) else { return Ok(()) };
        let terms = pod["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"].as_array();
        for term in terms.into_iter().flatten() {
            let key = term["topologyKey"].as_str().unwrap_or_default();
            if key != HOSTNAME {
                return Err(r.forbidden(format!("affinity.PodAntiAffinity.RequiredDuringScheduling has TopologyKey {key} but only key {HOSTNAME} is allowed")));
            }
        }
        Ok(())
    }
}
