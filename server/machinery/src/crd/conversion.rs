//! Converting custom resources between a definition's versions (`spec.conversion`). `None`
//! rewrites `apiVersion`. `Webhook` sends the objects not yet in the wanted version, all in one
//! `ConversionReview` (v1, or v1beta1 when the definition accepts only that), and checks the
//! answer as Kubernetes does: as many objects as were sent, each in the wanted version, of the
//! same kind, name, namespace and uid; of the metadata only labels and annotations may change
//! (and must stay valid), the rest is kept from the object sent.

use std::time::Duration;

use raft_store::Store;
use serde_json::{json, Value};

use crate::error::Cause;
use crate::webhook::client_config;

/// How long a conversion webhook may take, as Kubernetes allows.
const TIMEOUT: Duration = Duration::from_secs(30);

/// The ConversionReview versions this server sends.
const REVIEW_VERSIONS: [&str; 2] = ["v1", "v1beta1"];

/// A definition's conversion strategy.
#[derive(Debug)]
pub enum Conversion {
    None,
    Webhook {
        /// The webhook's `clientConfig`.
        client_config: Value,
        /// The first of the definition's `conversionReviewVersions` this server speaks.
        review_version: &'static str,
    },
}

impl Conversion {
    /// The strategy of a definition's `spec.conversion`.
    pub fn of(conversion: &Value) -> Conversion {
        if conversion["strategy"] != "Webhook" {
            return Conversion::None;
        }
        let webhook = &conversion["webhook"];
        let accepted = webhook["conversionReviewVersions"].as_array().into_iter().flatten().filter_map(Value::as_str);
        let review_version = accepted.filter_map(|v| REVIEW_VERSIONS.into_iter().find(|r| *r == v)).next().unwrap_or("v1");
        Conversion::Webhook { client_config: webhook["clientConfig"].clone(), review_version }
    }

    /// `objects` (one kind) in `api_version`; objects already in it are left as they are.
    pub async fn convert(&self, store: &Store, mut objects: Vec<Value>, api_version: &str) -> Result<Vec<Value>, String> {
        let todo: Vec<usize> = (0..objects.len()).filter(|&i| objects[i]["apiVersion"] != api_version).collect();
        if todo.is_empty() {
            return Ok(objects);
        }
        let (client_config, review_version) = match self {
            Conversion::None => {
                for i in todo {
                    objects[i]["apiVersion"] = json!(api_version);
                }
                return Ok(objects);
            }
            Conversion::Webhook { client_config, review_version } => (client_config, *review_version),
        };
        let first = &objects[todo[0]];
        let gvk = format!("{}, Kind={}", first["apiVersion"].as_str().unwrap_or_default(), first["kind"].as_str().unwrap_or_default());
        let failed = |e: String| format!("conversion webhook for {gvk} failed: {e}");
        let sent: Vec<Value> = todo.iter().map(|&i| objects[i].clone()).collect();
        let converted = call(store, client_config, review_version, sent, api_version).await.map_err(failed)?;
        if converted.len() != todo.len() {
            return Err(format!("conversion webhook for {gvk} returned {} objects, expected {}", converted.len(), todo.len()));
        }
        for (n, (i, mut out)) in todo.into_iter().zip(converted).enumerate() {
            check(&objects[i], &out, api_version)
                .map_err(|e| format!("conversion webhook for {gvk} returned invalid converted object at index {n}: {e}"))?;
            restore_metadata(&objects[i], &mut out).map_err(|e| format!("conversion webhook for {gvk} returned invalid metadata in object at index {n}: {e}"))?;
            objects[i] = out;
        }
        Ok(objects)
    }
}

/// One review: the objects sent, what the webhook converted them to.
async fn call(store: &Store, client_config: &Value, review_version: &str, objects: Vec<Value>, api_version: &str) -> Result<Vec<Value>, String> {
    let endpoint = client_config::endpoint(store, client_config)?;
    let uid = uuid::Uuid::new_v4().to_string();
    let review_api_version = format!("apiextensions.k8s.io/{review_version}");
    let review = json!({
        "apiVersion": review_api_version,
        "kind": "ConversionReview",
        "request": {"uid": uid, "desiredAPIVersion": api_version, "objects": objects},
    });
    let body = serde_json::to_vec(&review).map_err(|e| e.to_string())?;
    let url = endpoint.url();
    let (status, answer) = endpoint.post_json(body, TIMEOUT).await.map_err(|e| format!("Post \"{url}\": {e}"))?;
    if !status.is_success() {
        return Err(format!("Post \"{url}\": the webhook answered {}", status.as_u16()));
    }
    let review: Value = serde_json::from_slice(&answer).map_err(|e| format!("the webhook's answer is not a ConversionReview: {e}"))?;
    if review["apiVersion"] != review_api_version.as_str() || review["kind"] != "ConversionReview" {
        return Err(format!(
            "expected webhook response of {review_api_version}, Kind=ConversionReview, got {}, Kind={}",
            review["apiVersion"].as_str().unwrap_or_default(),
            review["kind"].as_str().unwrap_or_default()
        ));
    }
    let response = &review["response"];
    if !response.is_object() {
        return Err("no response provided".into());
    }
    if review_version == "v1" && response["uid"] != uid.as_str() {
        return Err(format!("expected response.uid=\"{uid}\", got \"{}\"", response["uid"].as_str().unwrap_or_default()));
    }
    let result = &response["result"];
    if result["status"] != "Success" {
        return Err(match result["message"].as_str().filter(|m| !m.is_empty()) {
            Some(m) => m.to_string(),
            None => format!("response.result.status was '{}', not 'Success'", result["status"].as_str().unwrap_or_default()),
        });
    }
    Ok(response["convertedObjects"].as_array().cloned().unwrap_or_default())
}

/// What a converted object must keep of the one sent.
fn check(sent: &Value, got: &Value, api_version: &str) -> Result<(), String> {
    if got["apiVersion"] != api_version {
        return Err(format!("invalid groupVersion (expected {api_version}, received {})", got["apiVersion"].as_str().unwrap_or_default()));
    }
    if got["kind"] != sent["kind"] {
        return Err(format!("invalid kind (expected {}, received {})", sent["kind"].as_str().unwrap_or_default(), got["kind"].as_str().unwrap_or_default()));
    }
    for (field, word) in [("name", "name"), ("namespace", "namespace"), ("uid", "UID")] {
        let (a, b) = (sent["metadata"][field].as_str().unwrap_or_default(), got["metadata"][field].as_str().unwrap_or_default());
        if a != b {
            return Err(format!("must have the same {word}: {a} != {b}"));
        }
    }
    Ok(())
}

/// The sent object's metadata with the converted object's labels and annotations.
fn restore_metadata(sent: &Value, got: &mut Value) -> Result<(), String> {
    let answered = match got.get("metadata") {
        Some(Value::Object(m)) => m.clone(),
        Some(other) => return Err(format!("invalid metadata of type {} in converted object", kind_of(other))),
        None => return Err("missing metadata in converted object".into()),
    };
    let mut metadata = sent["metadata"].as_object().cloned().unwrap_or_default();
    for field in ["labels", "annotations"] {
        match answered.get(field) {
            None | Some(Value::Null) => {
                metadata.remove(field);
            }
            Some(Value::Object(values)) => {
                if let Some((k, v)) = values.iter().find(|(_, v)| !v.is_string()) {
                    return Err(format!("metadata.{field}[{k}] must be a string, but is {} in converted object", kind_of(v)));
                }
                metadata.insert(field.to_string(), Value::Object(values.clone()));
            }
            Some(other) => return Err(format!("invalid metadata.{field} of type {} in converted object", kind_of(other))),
        }
    }
    got["metadata"] = Value::Object(metadata);
    let causes = crate::meta::validate_labels_and_annotations(got);
    match causes.is_empty() {
        true => Ok(()),
        false => Err(causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect::<Vec<_>>().join(", ")),
    }
}

/// Go's name for a JSON value's type, as Kubernetes' messages give it.
fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// Every problem of a definition's `spec.conversion`, as 422 causes, with the field names
/// Kubernetes reports (those of its internal form: `webhookClientConfig`,
/// `conversionReviewVersions`).
pub fn validate(spec: &Value, causes: &mut Vec<Cause>) {
    let conversion = &spec["conversion"];
    let strategy = conversion["strategy"].as_str().unwrap_or_default();
    if !matches!(strategy, "None" | "Webhook") {
        causes.push(Cause::new(
            "FieldValueNotSupported",
            "spec.conversion.strategy",
            format!("Unsupported value: \"{strategy}\": supported values: \"None\", \"Webhook\""),
        ));
    }
    let webhook = &conversion["webhook"];
    let client_config = webhook.get("clientConfig").filter(|c| !c.is_null());
    let versions = webhook["conversionReviewVersions"].as_array().map(Vec::as_slice).unwrap_or_default();
    if strategy != "Webhook" {
        if client_config.is_some() {
            causes.push(Cause::new("FieldValueForbidden", "spec.conversion.webhookClientConfig", "Forbidden: should not be set when strategy is not set to Webhook"));
        }
        if !versions.is_empty() {
            causes.push(Cause::new("FieldValueForbidden", "spec.conversion.conversionReviewVersions", "Forbidden: should not be set when strategy is not set to Webhook"));
        }
        return;
    }
    if spec["preserveUnknownFields"] == true {
        causes.push(Cause::invalid("spec.conversion.strategy", strategy, "must be None if spec.preserveUnknownFields is true"));
    }
    match client_config {
        None => causes.push(Cause::new("FieldValueRequired", "spec.conversion.webhookClientConfig", "Required value: required when strategy is set to Webhook")),
        Some(cc) => causes.extend(client_config::validate(cc, "spec.conversion.webhookClientConfig")),
    }
    review_versions(versions, causes);
}

fn review_versions(versions: &[Value], causes: &mut Vec<Cause>) {
    const PATH: &str = "spec.conversion.conversionReviewVersions";
    if versions.is_empty() {
        causes.push(Cause::required(PATH));
        return;
    }
    let mut seen = std::collections::HashSet::new();
    for (i, v) in versions.iter().enumerate() {
        let v = v.as_str().unwrap_or_default();
        if !seen.insert(v) {
            causes.push(Cause::invalid(format!("{PATH}[{i}]"), v, "duplicate version"));
        } else if !crate::meta::is_dns_label(v, 63, true) {
            causes.push(Cause::invalid(format!("{PATH}[{i}]"), v, crate::meta::DNS1035_LABEL));
        }
    }
    if !versions.iter().any(|v| v.as_str().is_some_and(|v| REVIEW_VERSIONS.contains(&v))) {
        let given: Vec<&str> = versions.iter().filter_map(Value::as_str).collect();
        causes.push(Cause::invalid(PATH, format!("[]string{{\"{}\"}}", given.join("\", \"")), "must include at least one of v1, v1beta1"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn causes(spec: Value) -> Vec<String> {
        let mut causes = Vec::new();
        validate(&spec, &mut causes);
        causes.into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    #[test]
    fn none_takes_no_webhook() {
        assert!(causes(json!({"conversion": {"strategy": "None"}})).is_empty());
        assert_eq!(
            causes(json!({"conversion": {"strategy": "None", "webhook": {"clientConfig": {"url": "https://a"}, "conversionReviewVersions": ["v1"]}}})),
            [
                "spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook",
                "spec.conversion.conversionReviewVersions: Forbidden: should not be set when strategy is not set to Webhook"
            ]
        );
        assert_eq!(causes(json!({"conversion": {"strategy": "Magic"}}))[0], "spec.conversion.strategy: Unsupported value: \"Magic\": supported values: \"None\", \"Webhook\"");
    }

    #[test]
    fn a_webhook_needs_a_client_config_and_a_review_version_this_server_speaks() {
        assert_eq!(
            causes(json!({"conversion": {"strategy": "Webhook"}})),
            ["spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook", "spec.conversion.conversionReviewVersions: Required value"]
        );
        assert_eq!(
            causes(json!({"conversion": {"strategy": "Webhook", "webhook": {"clientConfig": {"url": "https://a"}, "conversionReviewVersions": ["v2", "v2"]}}})),
            [
                "spec.conversion.conversionReviewVersions[1]: Invalid value: \"v2\": duplicate version",
                "spec.conversion.conversionReviewVersions: Invalid value: \"[]string{\"v2\", \"v2\"}\": must include at least one of v1, v1beta1"
            ]
        );
        assert!(causes(json!({"conversion": {"strategy": "Webhook", "webhook": {"clientConfig": {"url": "https://a"}, "conversionReviewVersions": ["v2", "v1beta1"]}}})).is_empty());
    }

    #[test]
    fn the_review_version_is_the_first_one_spoken() {
        let c = Conversion::of(&json!({"strategy": "Webhook", "webhook": {"clientConfig": {}, "conversionReviewVersions": ["v9", "v1beta1", "v1"]}}));
        assert!(matches!(c, Conversion::Webhook { review_version: "v1beta1", .. }));
    }

    fn object() -> Value {
        json!({"apiVersion": "example.com/v2", "kind": "W", "metadata": {"name": "a", "namespace": "n", "uid": "u", "resourceVersion": "5", "labels": {"a": "1"}}})
    }

    #[test]
    fn a_converted_object_keeps_its_identity_and_metadata() {
        let sent = json!({"apiVersion": "example.com/v1", "kind": "W", "metadata": {"name": "a", "namespace": "n", "uid": "u", "resourceVersion": "5"}});
        let mut got = object();
        assert!(check(&sent, &got, "example.com/v2").is_ok());
        assert_eq!(check(&sent, &got, "example.com/v3").unwrap_err(), "invalid groupVersion (expected example.com/v3, received example.com/v2)");
        got["metadata"]["resourceVersion"] = json!("99");
        got["metadata"]["labels"]["b"] = json!("2");
        restore_metadata(&sent, &mut got).unwrap();
        assert_eq!(got["metadata"], json!({"name": "a", "namespace": "n", "uid": "u", "resourceVersion": "5", "labels": {"a": "1", "b": "2"}}));
        let mut renamed = object();
        renamed["metadata"]["name"] = json!("b");
        assert_eq!(check(&sent, &renamed, "example.com/v2").unwrap_err(), "must have the same name: a != b");
        let mut bad = object();
        bad["metadata"]["labels"]["x"] = json!(1);
        assert_eq!(restore_metadata(&sent, &mut bad).unwrap_err(), "metadata.labels[x] must be a string, but is int64 in converted object");
    }
}
