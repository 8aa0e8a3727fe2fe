//! Secrets: the type and `stringData` defaults, valid keys, the keys each type requires, the
//! type and the data an `immutable` Secret keep, and kubectl's columns.

use base64::Engine;
use serde_json::{json, Value};

use super::configmap::{data_keys, immutable_data, secret_too_large};
use crate::error::Cause;
use crate::registry::kinds::fields::{age, col, keys, set, unchanged, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    default: defaults,
    validate,
    update,
    columns: COLUMNS,
    cells,
    warnings: Some(warnings),
    ..Strategy::NONE
};

/// `stringData` is write-only: its entries are merged into `data`, base64-encoded, and win.
pub fn defaults(obj: &mut Value) {
    set(obj, "type", json!("Opaque"));
    let Some(Value::Object(strings)) = obj.as_object_mut().and_then(|o| o.remove("stringData")) else { return };
    set(obj, "data", json!({}));
    for (k, v) in strings {
        let encoded = base64::engine::general_purpose::STANDARD.encode(v.as_str().unwrap_or_default());
        obj["data"][k] = json!(encoded);
    }
}

/// The keys each type of Secret must hold in `data`.
const REQUIRED_KEYS: &[(&str, &[&str])] = &[
    ("kubernetes.io/dockercfg", &[".dockercfg"]),
    ("kubernetes.io/dockerconfigjson", &[".dockerconfigjson"]),
    ("kubernetes.io/ssh-auth", &["ssh-privatekey"]),
    ("kubernetes.io/tls", &["tls.crt", "tls.key"]),
];

pub fn validate(obj: &Value) -> Vec<Cause> {
    let mut out = data_keys(obj, &["data", "stringData"]);
    out.extend(secret_too_large(obj));
    let data = &obj["data"];
    let kind = obj["type"].as_str().unwrap_or_default();
    match kind {
        "kubernetes.io/service-account-token" => {
            let named = obj["metadata"]["annotations"]["kubernetes.io/service-account.name"].as_str().is_some_and(|n| !n.is_empty());
            if !named {
                out.push(Cause::required("metadata.annotations[kubernetes.io/service-account.name]"));
            }
        }
        "kubernetes.io/basic-auth" if data.get("username").is_none() && data.get("password").is_none() => {
            out.push(Cause::required("data[username]"));
            out.push(Cause::required("data[password]"));
        }
        _ => {}
    }
    let required = REQUIRED_KEYS.iter().find(|(t, _)| *t == kind).map_or(&[][..], |(_, keys)| *keys);
    for key in required {
        if data.get(*key).is_none() {
            out.push(Cause::required(format!("data[{key}]")));
        }
    }
    out
}

/// The type is fixed at creation; an `immutable` Secret keeps its data too.
pub fn update(old: &Value, new: &mut Value) -> Vec<Cause> {
    let mut out = Vec::new();
    unchanged(old, new, "/type", &mut out);
    out.extend(immutable_data(old, new));
    out
}

pub const COLUMNS: &[Column] = &[col("Type", "string", 0), col("Data", "string", 0), AGE];

pub fn cells(obj: &Value) -> Vec<Value> {
    vec![json!(obj["type"].as_str().unwrap_or("Opaque")), json!(keys(&obj["data"])), age(obj)]
}

/// Kubernetes' warning about a TLS secret whose certificate and key are not PEM data.
fn warnings(obj: &Value, _: Option<&Value>) -> Vec<String> {
    if obj["type"] != "kubernetes.io/tls" {
        return Vec::new();
    }
    let decoded = |key: &str| obj["data"][key].as_str().and_then(|d| base64::Engine::decode(&base64::engine::general_purpose::STANDARD, d).ok()).unwrap_or_default();
    let blocks = |pem: &[u8]| -> Vec<String> {
        String::from_utf8_lossy(pem).lines().filter_map(|l| l.strip_prefix("-----BEGIN ").and_then(|l| l.strip_suffix("-----"))).map(str::to_string).collect()
    };
    let (cert, key) = (blocks(&decoded("tls.crt")), blocks(&decoded("tls.key")));
    let problem = if cert.is_empty() {
        Some("tls: failed to find any PEM data in certificate input".to_string())
    } else if !cert.iter().any(|b| b == "CERTIFICATE") {
        Some(format!("tls: failed to find \"CERTIFICATE\" PEM block in certificate input after skipping PEM blocks of the following types: [{}]", cert.join(" ")))
    } else if key.is_empty() {
        Some("tls: failed to find any PEM data in key input".to_string())
    } else if !key.iter().any(|b| b == "PRIVATE KEY" || b.ends_with(" PRIVATE KEY")) {
        Some(format!("tls: failed to find PEM block with type ending in \"PRIVATE KEY\" in key input after skipping PEM blocks of the following types: [{}]", key.join(" ")))
    } else {
        None
    };
    problem.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_data_moves_into_data() {
        let mut s = json!({"data": {"a": "eA==", "b": "eA=="}, "stringData": {"b": "yy", "c": "z"}});
        defaults(&mut s);
        assert_eq!(s, json!({"type": "Opaque", "data": {"a": "eA==", "b": "eXk=", "c": "eg=="}}));
    }
}
