//! The mandatory and suggested FlowSchemas and PriorityLevelConfigurations kube-apiserver keeps
//! on every cluster, read from `bootstrap-configuration.yaml` (the server's
//! `priority-and-fairness-config-producer` post-start hook writes them). Missing ones are created; an
//! existing one whose `apf.kubernetes.io/autoupdate-spec` annotation is `"true"` gets the
//! expected spec back, one whose annotation says otherwise is left as its owner made it.

use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::Value;

/// The API group of the flow-control kinds.
pub const GROUP: &str = "flowcontrol.apiserver.k8s.io";
/// The annotation saying whether the server restores an object's spec.
pub const AUTOUPDATE: &str = "apf.kubernetes.io/autoupdate-spec";

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
