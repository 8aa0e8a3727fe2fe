//! Table columns and cells of the cluster configuration kinds, as kubectl prints them against
//! kube-apiserver: flow control, admission, aggregation, autoscaling, runtime classes and
//! component statuses.

use serde_json::{json, Value};

use super::columns::{age, col, AGE};
use crate::registry::Column;

fn text_or_none(v: &Value) -> Value {
    json!(v.as_str().filter(|s| !s.is_empty()).unwrap_or("<none>"))
}

fn count(v: &Value) -> usize {
    v.as_array().map_or(0, Vec::len)
}

pub const FLOWSCHEMA_COLUMNS: &[Column] = &[
    col("PriorityLevel", "string", 0),
    col("MatchingPrecedence", "string", 0),
    col("DistinguisherMethod", "string", 0),
    AGE,
    col("MissingPL", "string", 0),
];

pub fn flowschema_cells(obj: &Value) -> Vec<Value> {
    let spec = &obj["spec"];
    let missing = obj["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Dangling")
        .and_then(|c| c["status"].as_str())
        .unwrap_or("?");
    vec![
        json!(spec["priorityLevelConfiguration"]["name"].as_str().unwrap_or_default()),
        json!(spec["matchingPrecedence"].as_i64().unwrap_or(1000).to_string()),
        text_or_none(&spec["distinguisherMethod"]["type"]),
        age(obj),
        json!(missing),
    ]
}

pub const PRIORITYLEVEL_COLUMNS: &[Column] = &[
    col("Type", "string", 0),
    col("NominalConcurrencyShares", "string", 0),
    col("Queues", "string", 0),
    col("HandSize", "string", 0),
    col("QueueLengthLimit", "string", 0),
    AGE,
];

pub fn prioritylevel_cells(obj: &Value) -> Vec<Value> {
    let spec = &obj["spec"];
    let none = || json!("<none>");
    let (shares, queues, hand, limit) = match spec["type"].as_str() {
        Some("Limited") => {
            let limited = &spec["limited"];
            let queuing = &limited["limitResponse"]["queuing"];
            let num = |v: &Value| v.as_i64().map_or_else(none, |n| json!(n.to_string()));
            (json!(limited["nominalConcurrencyShares"].as_i64().unwrap_or(30).to_string()), num(&queuing["queues"]), num(&queuing["handSize"]), num(&queuing["queueLengthLimit"]))
        }
        _ => (json!(spec["exempt"]["nominalConcurrencyShares"].as_i64().unwrap_or(0).to_string()), none(), none(), none()),
    };
    vec![json!(spec["type"].as_str().unwrap_or_default()), shares, queues, hand, limit, age(obj)]
}

pub const HPA_COLUMNS: &[Column] = &[
    col("Reference", "string", 0),
    col("Targets", "string", 0),
    col("MinPods", "string", 0),
    col("MaxPods", "integer", 0),
    col("Replicas", "integer", 0),
    AGE,
];

pub fn hpa_cells(obj: &Value) -> Vec<Value> {
    let spec = &obj["spec"];
    let target = &spec["scaleTargetRef"];
    let metrics = count(&spec["metrics"]);
    let targets = if metrics == 0 { "<none>".to_string() } else { format!("{metrics} metric(s)") };
    vec![
        json!(format!("{}/{}", target["kind"].as_str().unwrap_or_default(), target["name"].as_str().unwrap_or_default())),
        json!(targets),
        json!(spec["minReplicas"].as_i64().map_or("<unset>".to_string(), |n| n.to_string())),
        json!(spec["maxReplicas"].as_i64().unwrap_or(0)),
        json!(obj["status"]["currentReplicas"].as_i64().unwrap_or(0)),
        age(obj),
    ]
}

pub const VALIDATING_POLICY_COLUMNS: &[Column] = &[col("Validations", "integer", 0), col("ParamKind", "string", 0), AGE];

pub fn validating_policy_cells(obj: &Value) -> Vec<Value> {
    let kind = &obj["spec"]["paramKind"];
    let param = match kind["kind"].as_str() {
        Some(k) => format!("{}/{k}", kind["apiVersion"].as_str().unwrap_or_default()),
        None => "<unset>".into(),
    };
    vec![json!(count(&obj["spec"]["validations"])), json!(param), age(obj)]
}

pub const MUTATING_POLICY_COLUMNS: &[Column] = &[col("Mutations", "integer", 0), col("ParamKind", "string", 0), AGE];

pub fn mutating_policy_cells(obj: &Value) -> Vec<Value> {
    let mut cells = validating_policy_cells(obj);
    cells[0] = json!(count(&obj["spec"]["mutations"]));
    cells
}

pub const POLICY_BINDING_COLUMNS: &[Column] = &[col("PolicyName", "string", 0), col("ParamRef", "string", 0), AGE];

pub fn policy_binding_cells(obj: &Value) -> Vec<Value> {
    let reference = &obj["spec"]["paramRef"];
    let param = match reference["name"].as_str() {
        Some(n) => match reference["namespace"].as_str() {
            Some(ns) => format!("{ns}/{n}"),
            None => format!("*/{n}"),
        },
        None => "<unset>".into(),
    };
    vec![json!(obj["spec"]["policyName"].as_str().unwrap_or_default()), json!(param), age(obj)]
}

pub const WEBHOOK_CONFIGURATION_COLUMNS: &[Column] = &[col("Webhooks", "integer", 0), AGE];

pub fn webhook_configuration_cells(obj: &Value) -> Vec<Value> {
    vec![json!(count(&obj["webhooks"])), age(obj)]
}

pub const APISERVICE_COLUMNS: &[Column] = &[col("Service", "string", 0), col("Available", "string", 0), AGE];

pub fn apiservice_cells(obj: &Value) -> Vec<Value> {
    let service = match obj["spec"]["service"]["name"].as_str() {
        Some(n) => format!("{}/{n}", obj["spec"]["service"]["namespace"].as_str().unwrap_or_default()),
        None => "Local".into(),
    };
    let available = obj["status"]["conditions"].as_array().into_iter().flatten().find(|c| c["type"] == "Available");
    let available = match available {
        Some(c) if c["status"] == "True" => "True".to_string(),
        Some(c) => format!("{} ({})", c["status"].as_str().unwrap_or("Unknown"), c["reason"].as_str().unwrap_or_default()),
        None => "Unknown".into(),
    };
    vec![json!(service), json!(available), age(obj)]
}

pub const COMPONENTSTATUS_COLUMNS: &[Column] = &[col("Status", "string", 0), col("Message", "string", 0), col("Error", "string", 0)];

pub fn componentstatus_cells(obj: &Value) -> Vec<Value> {
    let healthy = obj["conditions"].as_array().into_iter().flatten().find(|c| c["type"] == "Healthy");
    let status = match healthy.and_then(|c| c["status"].as_str()) {
        Some("True") => "Healthy",
        Some(_) => "Unhealthy",
        None => "Unknown",
    };
    let field = |k: &str| json!(healthy.and_then(|c| c[k].as_str()).unwrap_or_default());
    vec![json!(status), field("message"), field("error")]
}

pub const RUNTIMECLASS_COLUMNS: &[Column] = &[col("Handler", "string", 0), AGE];

pub fn runtimeclass_cells(obj: &Value) -> Vec<Value> {
    vec![json!(obj["handler"].as_str().unwrap_or_default()), age(obj)]
}

pub const CSR_COLUMNS: &[Column] =
    &[AGE, col("SignerName", "string", 0), col("Requestor", "string", 0), col("RequestedDuration", "string", 0), col("Condition", "string", 0)];

/// A CertificateSigningRequest's row: its approval conditions (or `Pending`), `Issued` once it
/// has a certificate.
pub fn csr_cells(obj: &Value) -> Vec<Value> {
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

pub const IPADDRESS_COLUMNS: &[Column] = &[col("ParentRef", "string", 0)];

/// An IPAddress's row: its parent as `resource[.group]/[namespace/]name`.
pub fn ipaddress_cells(obj: &Value) -> Vec<Value> {
    let parent = &obj["spec"]["parentRef"];
    if !parent.is_object() {
        return vec![json!("<none>")];
    }
    let s = |k: &str| parent[k].as_str().unwrap_or_default();
    let mut shown = if s("group").is_empty() { s("resource").to_lowercase() } else { format!("{}.{}", s("resource"), s("group")).to_lowercase() };
    if !s("namespace").is_empty() {
        shown = format!("{shown}/{}", s("namespace"));
    }
    vec![json!(format!("{shown}/{}", s("name")))]
}

pub const SERVICECIDR_COLUMNS: &[Column] = &[col("CIDRs", "string", 0), AGE];

pub fn servicecidr_cells(obj: &Value) -> Vec<Value> {
    let cidrs: Vec<&str> = obj["spec"]["cidrs"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    vec![json!(cidrs.join(",")), age(obj)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flow_control_rows() {
        let fs = json!({"metadata": {"creationTimestamp": "t"}, "spec": {"priorityLevelConfiguration": {"name": "global-default"}, "matchingPrecedence": 9900,
            "distinguisherMethod": {"type": "ByUser"}}, "status": {"conditions": [{"type": "Dangling", "status": "False"}]}});
        assert_eq!(flowschema_cells(&fs), vec![json!("global-default"), json!("9900"), json!("ByUser"), json!("t"), json!("False")]);
        let csr = json!({"metadata": {"creationTimestamp": "t"}, "spec": {"signerName": "example.com/x", "username": "alice", "expirationSeconds": 3600},
            "status": {"conditions": [{"type": "Approved", "status": "True"}], "certificate": "Y2VydA=="}});
        assert_eq!(csr_cells(&csr), vec![json!("t"), json!("example.com/x"), json!("alice"), json!("60m"), json!("Approved,Issued")]);
        let exempt = json!({"spec": {"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0}}});
        assert_eq!(prioritylevel_cells(&exempt)[..4], [json!("Exempt"), json!("0"), json!("<none>"), json!("<none>")]);
        let limited = json!({"spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 30, "limitResponse": {"type": "Queue", "queuing": {"queues": 64, "handSize": 6, "queueLengthLimit": 50}}}}});
        assert_eq!(prioritylevel_cells(&limited)[..5], [json!("Limited"), json!("30"), json!("64"), json!("6"), json!("50")]);
        let local = json!({"spec": {}, "status": {"conditions": [{"type": "Available", "status": "True"}]}});
        assert_eq!(apiservice_cells(&local)[..2], [json!("Local"), json!("True")]);
    }
}
