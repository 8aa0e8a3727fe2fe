//! DefaultTolerationSeconds: a pod that does not tolerate the `not-ready` and `unreachable`
//! NoExecute taints gets tolerations of them for `--default-not-ready-toleration-seconds` and
//! `--default-unreachable-toleration-seconds` (300 each), so that its node's loss evicts it
//! after five minutes rather than at once.

use serde_json::{json, Value};

use crate::{Mutating, Request};
use machinery::error::ApiResult;

pub const NOT_READY: &str = "node.kubernetes.io/not-ready";
pub const UNREACHABLE: &str = "node.kubernetes.io/unreachable";

pub struct DefaultTolerationSeconds {
    pub not_ready: i64,
    pub unreachable: i64,
}

#[async_trait::async_trait]
impl Mutating for DefaultTolerationSeconds {
    fn name(&self) -> &'static str {
        "DefaultTolerationSeconds"
    }

    async fn admit(&self, r: &Request<'_>, pod: &mut Value) -> ApiResult<()> {
        if !r.concerns("", "pods") || !pod["spec"].is_object() {
            return Ok(());
        }
        // A toleration without a key tolerates every taint; one without an effect, every effect.
        let tolerates = |pod: &Value, key: &str| {
            pod["spec"]["tolerations"].as_array().into_iter().flatten().any(|t| {
                let (k, effect) = (t["key"].as_str().unwrap_or_default(), t["effect"].as_str().unwrap_or_default());
                (k.is_empty() || k == key) && (effect.is_empty() || effect == "NoExecute")
            })
        };
        for (key, seconds) in [(NOT_READY, self.not_ready), (UNREACHABLE, self.unreachable)] {
            if !tolerates(pod, key) {
                crate::push(&mut pod["spec"]["tolerations"], json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds}));
            }
        }
        Ok(())
    }
}
