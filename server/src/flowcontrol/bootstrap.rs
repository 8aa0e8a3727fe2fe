//! The mandatory and suggested FlowSchemas and PriorityLevelConfigurations kube-apiserver keeps
//! on every cluster, read from `bootstrap-configuration.yaml`. Missing ones are created; an
//! existing one whose `apf.kubernetes.io/autoupdate-spec` annotation is `"true"` gets the
//! expected spec back, one whose annotation says otherwise is left as its owner made it.

use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::Value;

use crate::controllers::request;
use machinery::error::{ApiError, ApiResult};
use crate::loopback::Client;
use machinery::prepare::FieldValidation;
use crate::poststart::ensure;
use machinery::registry;
use access::request::Verb;

const GROUP: &str = "flowcontrol.apiserver.k8s.io";
const AUTOUPDATE: &str = "apf.kubernetes.io/autoupdate-spec";

/// The objects, in the file's order (priority levels before the schemas that name them).
pub fn objects() -> &'static [Value] {
    static OBJECTS: OnceLock<Vec<Value>> = OnceLock::new();
    OBJECTS.get_or_init(|| {
        serde_yaml::Deserializer::from_str(include_str!("bootstrap-configuration.yaml"))
            .map(|d| Value::deserialize(d).expect("the bootstrap configuration is valid YAML"))
            .filter(|v| !v.is_null())
            .collect()
    })
}

/// Creates the missing objects and restores the spec of those that ask for it.
pub async fn reconcile(client: &Client) -> ApiResult<()> {
    for expected in objects() {
        let kind = expected["kind"].as_str().unwrap_or_default();
        let info = registry::lookup_kind(GROUP, "v1", kind).ok_or_else(|| ApiError::internal(format!("bootstrap configuration has an unknown kind {kind}")))?;
        let name = expected["metadata"]["name"].as_str().unwrap_or_default();
        ensure(client, GROUP, "v1", info.resource, None, expected.clone()).await?;
        let restore = |current: &Value| -> ApiResult<Value> {
            let mut new = current.clone();
            if current["metadata"]["annotations"][AUTOUPDATE] == "true" && current["spec"] != expected["spec"] {
                new["spec"] = expected["spec"].clone();
            }
            Ok(new)
        };
        match client.update(&request(info, None, name, Verb::Update), FieldValidation::Ignore, restore).await {
            Ok(()) | Err(ApiError::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_schema_names_a_level_of_the_file() {
        let levels: Vec<&str> = objects()
            .iter()
            .filter(|o| o["kind"] == "PriorityLevelConfiguration")
            .map(|o| o["metadata"]["name"].as_str().unwrap())
            .collect();
        for name in ["exempt", "catch-all", "system", "node-high", "leader-election", "workload-high", "workload-low", "global-default"] {
            assert!(levels.contains(&name), "{name}");
        }
        for fs in objects().iter().filter(|o| o["kind"] == "FlowSchema") {
            let level = fs["spec"]["priorityLevelConfiguration"]["name"].as_str().unwrap();
            assert!(levels.contains(&level), "{} names {level}", fs["metadata"]["name"]);
            assert_eq!(fs["metadata"]["annotations"][AUTOUPDATE], "true");
        }
    }
}
