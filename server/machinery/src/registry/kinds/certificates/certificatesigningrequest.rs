//! CertificateSigningRequests: validation of the request, its usages, signer and duration, the
//! spec fixed at creation, and kubectl's columns.

use serde_json::{json, Value};

use base64::Engine;

use crate::error::Cause;
use crate::registry::kinds::fields::{age, col, invalid, text_or_none, AGE, DNS1123_LABEL};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    validate,
    update,
    columns: COLUMNS,
    cells,
    initial_status: Some(|| json!({})),
    ..Strategy::NONE
};

/// The signer older clients got when they named none; this version may not name it.
const LEGACY_SIGNER: &str = "kubernetes.io/legacy-unknown";

/// The shortest certificate lifetime a request may ask for, in seconds.
const MIN_EXPIRATION: i64 = 600;

pub fn validate(obj: &Value) -> Vec<Cause> {
    let spec = &obj["spec"];
    let mut out = Vec::new();
    if let Some(problem) = request_problem(spec["request"].as_str().unwrap_or_default()) {
        out.push(invalid("spec.request", &spec["request"], problem));
    }
    if spec["usages"].as_array().is_none_or(Vec::is_empty) {
        out.push(Cause::required("spec.usages"));
    }
    crate::registry::kinds::fields::unique(&spec["usages"], "spec.usages", |u| u, &mut out);
    let signer = spec["signerName"].as_str().unwrap_or_default();
    if signer == LEGACY_SIGNER {
        out.push(Cause::invalid("spec.signerName", signer, "the legacy signerName is not allowed via this API version"));
    } else {
        signer_name(signer, "spec.signerName", &mut out);
    }
    let expiration = &spec["expirationSeconds"];
    if expiration.as_i64().is_some_and(|s| s < MIN_EXPIRATION) {
        out.push(invalid("spec.expirationSeconds", expiration, "may not specify a duration less than 600 seconds (10 minutes)"));
    }
    out
}

/// What is wrong with the (base64) request, if anything: it must hold a PEM block of a
/// certificate request.
fn request_problem(request: &str) -> Option<&'static str> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(request).unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    let is_request = text.find("-----BEGIN ").is_some_and(|at| text[at + 11..].starts_with("CERTIFICATE REQUEST-----"));
    (!is_request).then_some("PEM block type must be CERTIFICATE REQUEST")
}

/// A signer name: `domain/path`, the domain of two or more DNS labels, the path of DNS
/// subdomains separated by dots.
fn signer_name(signer: &str, field: &str, out: &mut Vec<Cause>) {
    if signer.is_empty() {
        out.push(Cause::required(field));
        return;
    }
    let Some((domain, path)) = signer.split_once('/').filter(|(_, p)| !p.contains('/')) else {
        out.push(Cause::invalid(field, signer, "must be a fully qualified domain and path of the form 'example.com/signer-name'"));
        return;
    };
    if domain.len() > 253 {
        out.push(Cause::new("FieldValueTooLong", field, "Too long: may not be more than 253 bytes"));
    }
    let labels: Vec<&str> = domain.split('.').collect();
    if let Some(bad) = labels.iter().find(|l| !crate::meta::is_dns_label(l, 63, false)) {
        out.push(Cause::invalid(field, domain, &format!("validating label \"{bad}\": {DNS1123_LABEL}")));
    }
    if labels.len() < 2 {
        out.push(Cause::invalid(field, domain, "should be a domain with at least two segments separated by dots"));
    }
    if let Some(bad) = path.split('.').find(|l| !crate::meta::is_dns_subdomain(l)) {
        out.push(Cause::invalid(field, path, &format!("validating label \"{bad}\": {}", crate::meta::DNS1123_SUBDOMAIN)));
    }
    if signer.len() > 571 {
        out.push(Cause::new("FieldValueTooLong", field, "Too long: may not be more than 571 bytes"));
    }
}

/// The spec is the requestor's, fixed at creation: an update keeps it whatever it sends.
pub fn update(old: &Value, new: &mut Value) -> Vec<Cause> {
    new["spec"] = old["spec"].clone();
    Vec::new()
}

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
