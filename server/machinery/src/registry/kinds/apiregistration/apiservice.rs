//! APIServices: the service port's default (443) and kube-aggregator's checks, in its words: the
//! name is `{version}.{group}`, priorities in range, a local APIService (no Service) has no
//! `caBundle` and does not skip TLS verification, a remote one names its Service and does not
//! both trust a `caBundle` and skip verification.

use base64::Engine as _;
use serde_json::{json, Value};

use crate::error::Cause;
use crate::registry::kinds::fields::{age, col, invalid, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;
use crate::meta::{is_dns_label, is_dns_subdomain, DNS1035_LABEL, DNS1123_SUBDOMAIN};

/// How APIServices are defaulted, validated and printed.
pub const STRATEGY: Strategy = Strategy { default: defaults, validate, columns: COLUMNS, cells, ..Strategy::NONE };

/// `spec.service.port` is 443 unless given; a local APIService (served by this server) is
/// available from the start.
pub fn defaults(obj: &mut Value) {
    if obj["spec"]["service"].is_object() && obj["spec"]["service"]["port"].is_null() {
        obj["spec"]["service"]["port"] = json!(443);
    }
    if !obj["spec"]["service"].is_object() && obj["status"]["conditions"].is_null() {
        let available = json!({"type": "Available", "status": "True", "lastTransitionTime": crate::meta::now(), "reason": "Local", "message": "Local APIServices are always available"});
        obj["status"]["conditions"] = json!([available]);
    }
}

pub fn validate(obj: &Value) -> Vec<Cause> {
    let spec = &obj["spec"];
    let mut out = Vec::new();
    let (group, version) = (spec["group"].as_str().unwrap_or_default(), spec["version"].as_str().unwrap_or_default());
    let name = obj["metadata"]["name"].as_str().unwrap_or_default();
    let wanted = format!("{version}.{group}");
    if name != wanted {
        out.push(Cause::invalid("metadata.name", name, &format!("must be `spec.version+\".\"+spec.group`: {wanted:?}")));
    }
    if group.is_empty() && version != "v1" {
        out.push(Cause::new("FieldValueRequired", "spec.group", "Required value: only v1 may have an empty group and it better be legacy kube"));
    } else if !group.is_empty() && !is_dns_subdomain(group) {
        out.push(Cause::invalid("spec.group", group, DNS1123_SUBDOMAIN));
    }
    if !is_dns_label(version, 63, true) {
        out.push(Cause::invalid("spec.version", version, DNS1035_LABEL));
    }
    for (field, max) in [("groupPriorityMinimum", 20000), ("versionPriority", 1000)] {
        let n = spec[field].as_i64().unwrap_or(0);
        if !(1..=max).contains(&n) {
            out.push(invalid(format!("spec.{field}"), &json!(n), &format!("must be positive and less than {max}")));
        }
    }
    let ca_bytes = spec["caBundle"].as_str().map_or(0, |b| base64::engine::general_purpose::STANDARD.decode(b).map_or(b.len(), |d| d.len()));
    let insecure = spec["insecureSkipTLSVerify"] == true;
    let service = &spec["service"];
    if !service.is_object() {
        if ca_bytes > 0 {
            out.push(Cause::invalid("spec.caBundle", format!("{ca_bytes} bytes"), "local APIServices may not have a caBundle"));
        }
        if insecure {
            out.push(invalid("spec.insecureSkipTLSVerify", &json!(true), "local APIServices may not have insecureSkipTLSVerify"));
        }
        return out;
    }
    for field in ["namespace", "name"] {
        if service[field].as_str().unwrap_or_default().is_empty() {
            out.push(Cause::required(format!("spec.service.{field}")));
        }
    }
    let port = service["port"].as_i64().unwrap_or(443);
    if !(1..=65535).contains(&port) {
        out.push(invalid("spec.service.port", &json!(port), "port is not valid: must be between 1 and 65535, inclusive"));
    }
    if insecure && ca_bytes > 0 {
        out.push(invalid("spec.insecureSkipTLSVerify", &json!(true), "may not be true if caBundle is present"));
    }
    out
}

pub const COLUMNS: &[Column] = &[col("Service", "string", 0), col("Available", "string", 0), AGE];

pub fn cells(obj: &Value) -> Vec<Value> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(obj: Value) -> Vec<String> {
        validate(&obj).into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    #[test]
    fn apiservices_are_checked_as_kube_aggregator_checks_them() {
        let ok = json!({"metadata": {"name": "v1.metrics.example.com"}, "spec": {"group": "metrics.example.com", "version": "v1", "groupPriorityMinimum": 100, "versionPriority": 100, "service": {"namespace": "m", "name": "s"}}});
        assert!(messages(ok.clone()).is_empty());
        let mut bad = ok.clone();
        bad["metadata"]["name"] = json!("v2.metrics.example.com");
        bad["spec"]["groupPriorityMinimum"] = json!(0);
        bad["spec"]["versionPriority"] = json!(1001);
        bad["spec"]["insecureSkipTLSVerify"] = json!(true);
        bad["spec"]["caBundle"] = json!("YWJj");
        assert_eq!(
            messages(bad),
            [
                "metadata.name: Invalid value: \"v2.metrics.example.com\": must be `spec.version+\".\"+spec.group`: \"v1.metrics.example.com\"",
                "spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000",
                "spec.versionPriority: Invalid value: 1001: must be positive and less than 1000",
                "spec.insecureSkipTLSVerify: Invalid value: true: may not be true if caBundle is present",
            ]
        );
        let mut local = ok;
        local["spec"]["service"] = Value::Null;
        local["spec"]["caBundle"] = json!("YWJj");
        assert_eq!(messages(local), ["spec.caBundle: Invalid value: \"3 bytes\": local APIServices may not have a caBundle"]);
        let mut defaulted = json!({"spec": {"service": {"namespace": "m", "name": "s"}}});
        defaults(&mut defaulted);
        assert_eq!(defaulted["spec"]["service"]["port"], 443);
    }
}
