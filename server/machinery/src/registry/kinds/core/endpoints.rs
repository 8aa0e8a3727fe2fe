//! Endpoints: deprecated since Kubernetes 1.33 in favour of EndpointSlices, which every answer
//! says.

use serde_json::{json, Value};

use crate::registry::kinds::fields::{age, col, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is served.
pub const STRATEGY: Strategy = Strategy { deprecation: Some("v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"), columns: COLUMNS, cells, ..Strategy::NONE };

pub const COLUMNS: &[Column] = &[col("Endpoints", "string", 0), AGE];

/// Up to three `ip:port` pairs, then how many more; `<none>` without any.
pub fn cells(obj: &Value) -> Vec<Value> {
    let mut all = Vec::new();
    for subset in obj["subsets"].as_array().into_iter().flatten() {
        let ports: Vec<i64> = subset["ports"].as_array().into_iter().flatten().filter_map(|p| p["port"].as_i64()).collect();
        for address in subset["addresses"].as_array().into_iter().flatten() {
            let ip = address["ip"].as_str().unwrap_or_default();
            if ports.is_empty() {
                all.push(ip.to_string());
            }
            all.extend(ports.iter().map(|p| format!("{ip}:{p}")));
        }
    }
    vec![json!(first_three(&all)), age(obj)]
}

/// A list as kubectl shortens it: the first three, then `+ N more...`.
pub(crate) fn first_three(all: &[String]) -> String {
    match all.len() {
        0 => "<none>".into(),
        n if n > 3 => format!("{} + {} more...", all[..3].join(","), n - 3),
        _ => all.join(","),
    }
}
