//! CertificateSigningRequests: kubectl's columns.

use serde_json::{json, Value};

use crate::registry::kinds::fields::{age, col, text_or_none, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    columns: COLUMNS,
    cells,
    initial_status: Some(|| json!({})),
    ..Strategy::NONE
};

pub const COLUMNS: &[Column] =
    &[AGE, col("SignerName", "string", 0), col("Requestor", "string", 0), col("RequestedDuration", "string", 0), col("Condition", "string", 0)];

/// A CertificateSigningRequest's row: its approval conditions (or `Pending`), `Issued` once it
/// has a certificate.
pub fn cells(obj: &Value) -> Vec<Value> {
    let spec = &obj["spec"];
    let mut condition: Vec<String> = obj["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["status"] == "True" || c["status"].is_null())
        .filter_map(|c| c["type"].as_str().map(String::from))
        .collect();
    if condition.is_empty() {
        condition.push("Pending".into());
    }
    if obj["status"]["certificate"].as_str().is_some_and(|c| !c.is_empty()) {
        condition.push("Issued".into());
    }
    let duration = spec["expirationSeconds"].as_i64().map_or_else(|| "<none>".to_string(), |s| crate::table_form::human_duration(chrono::TimeDelta::seconds(s)));
    vec![age(obj), text_or_none(&spec["signerName"]), text_or_none(&spec["username"]), json!(duration), json!(condition.join(","))]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row() {
        let csr = json!({"metadata": {"creationTimestamp": "t"}, "spec": {"signerName": "example.com/x", "username": "alice", "expirationSeconds": 3600},
            "status": {"conditions": [{"type": "Approved", "status": "True"}], "certificate": "Y2VydA=="}});
        assert_eq!(cells(&csr), vec![json!("t"), json!("example.com/x"), json!("alice"), json!("60m"), json!("Approved,Issued")]);
    }
}
