//! EndpointSlices: ports are unnamed TCP ports unless given, and every endpoint has conditions.

use serde_json::{json, Value};

use crate::registry::kinds::core::endpoints::first_three;
use crate::registry::kinds::fields::{age, col, set, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted.
pub const STRATEGY: Strategy = Strategy { default: defaults, columns: COLUMNS, cells, ..Strategy::NONE };

pub fn defaults(obj: &mut Value) {
    for port in obj["ports"].as_array_mut().into_iter().flatten() {
        set(port, "name", json!(""));
        set(port, "protocol", json!("TCP"));
    }
    for endpoint in obj["endpoints"].as_array_mut().into_iter().flatten() {
        set(endpoint, "conditions", json!({}));
    }
}

pub const COLUMNS: &[Column] = &[col("AddressType", "string", 0), col("Ports", "string", 0), col("Endpoints", "string", 0), AGE];

pub fn cells(obj: &Value) -> Vec<Value> {
    let ports: Vec<String> = obj["ports"].as_array().into_iter().flatten().filter_map(|p| p["port"].as_i64()).map(|p| p.to_string()).collect();
    let addresses: Vec<String> =
        obj["endpoints"].as_array().into_iter().flatten().flat_map(|e| e["addresses"].as_array().into_iter().flatten()).filter_map(|a| a.as_str().map(str::to_string)).collect();
    let ports = if ports.is_empty() { "<unset>".to_string() } else { ports.join(",") };
    let endpoints = if addresses.is_empty() { "<unset>".to_string() } else { first_three(&addresses) };
    vec![obj["addressType"].clone(), json!(ports), json!(endpoints), age(obj)]
}
