//! Ingresses: the status a new one starts with, and kubectl's columns.

use serde_json::{json, Value};

use crate::registry::kinds::fields::{age, col, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is created and printed.
pub const STRATEGY: Strategy = Strategy { columns: COLUMNS, cells, initial_status: Some(|| json!({"loadBalancer": {}})), ..Strategy::NONE };

pub const COLUMNS: &[Column] = &[col("Class", "string", 0), col("Hosts", "string", 0), col("Address", "string", 0), col("Ports", "string", 0), AGE];

/// Hosts of the rules (`*` when none names one), the load balancer's addresses, and the ports
/// served: 80, and 443 when there is TLS.
pub fn cells(obj: &Value) -> Vec<Value> {
    let spec = &obj["spec"];
    let hosts: Vec<&str> = spec["rules"].as_array().into_iter().flatten().filter_map(|r| r["host"].as_str()).collect();
    let addresses: Vec<&str> = obj["status"]["loadBalancer"]["ingress"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["ip"].as_str().or(i["hostname"].as_str()))
        .collect();
    let ports = if spec["tls"].as_array().is_some_and(|t| !t.is_empty()) { "80, 443" } else { "80" };
    vec![
        json!(spec["ingressClassName"].as_str().unwrap_or("<none>")),
        json!(if hosts.is_empty() { "*".to_string() } else { hosts.join(",") }),
        json!(addresses.join(",")),
        json!(ports),
        age(obj),
    ]
}
