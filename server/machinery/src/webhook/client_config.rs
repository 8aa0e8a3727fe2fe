//! A `clientConfig` as admission webhooks and conversion webhooks give it: its validation (one
//! of `url` or `service`, Kubernetes' rules for each) and the endpoint it names (`url`, or a
//! Service resolved to an address through its Endpoints, trusting `caBundle`).

use base64::Engine as _;
use raft_store::Store;
use serde_json::{json, Value};

use super::Endpoint;
use crate::error::Cause;

const FORM: &str = "; desired format: https://host[/path]";

/// Every problem of the `clientConfig` at `path`, as 422 causes.
pub fn validate(cc: &Value, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    match (cc["url"].as_str(), cc.get("service").filter(|s| !s.is_null())) {
        (Some(_), Some(_)) | (None, None) => causes.push(Cause::new("FieldValueRequired", path, "Required value: exactly one of url or service is required")),
        (Some(url), None) => url_problems(url, &format!("{path}.url"), &mut causes),
        (None, Some(service)) => service_problems(service, &format!("{path}.service"), &mut causes),
    }
    if let Some(b64) = cc["caBundle"].as_str().filter(|b| !b.is_empty()) {
        if let Err(e) = ca_pem(b64).and_then(|pem| super::kubeconfig::tls_config(Some(&pem), None).map(|_| ())) {
            causes.push(Cause::invalid(format!("{path}.caBundle"), b64, &e));
        }
    }
    causes
}

fn url_problems(url: &str, path: &str, causes: &mut Vec<Cause>) {
    let Some((scheme, rest)) = url.split_once("://") else {
        causes.push(Cause::new("FieldValueRequired", path, format!("Required value: url must be a valid URL: parse {url:?}: missing protocol scheme{FORM}")));
        return;
    };
    if scheme != "https" {
        causes.push(Cause::invalid(path, scheme, &format!("'https' is the only allowed URL scheme{FORM}")));
    }
    let (rest, fragment) = rest.split_once('#').unwrap_or((rest, ""));
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let authority = rest.split('/').next().unwrap_or_default();
    let (user, host) = match authority.rsplit_once('@') {
        Some((user, host)) => (Some(user), host),
        None => (None, authority),
    };
    if host.is_empty() {
        causes.push(Cause::invalid(path, host, &format!("host must be specified{FORM}")));
    }
    if let Some(user) = user {
        causes.push(Cause::invalid(path, user, "user information is not permitted in the URL"));
    }
    if !fragment.is_empty() {
        causes.push(Cause::invalid(path, fragment, "fragments are not permitted in the URL"));
    }
    if !query.is_empty() {
        causes.push(Cause::invalid(path, query, "query parameters are not permitted in the URL"));
    }
}

fn service_problems(service: &Value, path: &str, causes: &mut Vec<Cause>) {
    for field in ["name", "namespace"] {
        if service[field].as_str().unwrap_or_default().is_empty() {
            causes.push(Cause::required(format!("{path}.{field}")));
        }
    }
    let port = service["port"].as_i64().unwrap_or(443);
    if !(1..=65535).contains(&port) {
        causes.push(Cause::invalid(format!("{path}.port"), port, "port is not valid: must be between 1 and 65535, inclusive"));
    }
    let Some(url_path) = service["path"].as_str().filter(|p| !p.is_empty() && *p != "/") else { return };
    let field = format!("{path}.path");
    if url_path == "//" {
        causes.push(Cause::invalid(&field, url_path, "segment[0] may not be empty"));
        return;
    }
    if !url_path.starts_with('/') {
        causes.push(Cause::invalid(&field, url_path, "must start with a '/'"));
    }
    let steps = url_path.get(1..).unwrap_or_default();
    for (i, step) in steps.strip_suffix('/').unwrap_or(steps).split('/').enumerate() {
        if step.is_empty() {
            causes.push(Cause::invalid(&field, url_path, &format!("segment[{i}] may not be empty")));
        } else if !crate::meta::is_dns_subdomain(step) {
            causes.push(Cause::invalid(&field, url_path, &format!("segment[{i}]: {}", crate::meta::DNS1123_SUBDOMAIN)));
        }
    }
}

fn ca_pem(b64: &str) -> Result<String, String> {
    let pem = base64::engine::general_purpose::STANDARD.decode(b64).map_err(|e| format!("caBundle: {e}"))?;
    String::from_utf8(pem).map_err(|_| "caBundle is not PEM".to_string())
}

/// The object stored at `key`, as JSON.
pub fn get(store: &Store, key: &str) -> Result<Option<Value>, String> {
    match store.cache().get(key, None).map_err(|e| e.to_string())? {
        Some(o) => serde_json::from_slice(&o.data).map(Some).map_err(|e| e.to_string()),
        None => Ok(None),
    }
}

/// The endpoint a `clientConfig` names.
pub fn endpoint(store: &Store, cc: &Value) -> Result<Endpoint, String> {
    endpoint_as(store, cc, None)
}

/// The endpoint a `clientConfig` names, called with `client` (certificate and key PEM).
pub fn endpoint_as(store: &Store, cc: &Value, client: Option<(String, String)>) -> Result<Endpoint, String> {
    let ca = match cc["caBundle"].as_str().filter(|c| !c.is_empty()) {
        Some(b64) => Some(ca_pem(b64)?),
        None => None,
    };
    if let Some(url) = cc["url"].as_str() {
        return Endpoint::new(url, ca.as_deref(), client, None, None);
    }
    let service = &cc["service"];
    let (namespace, name) = (service["namespace"].as_str().unwrap_or_default(), service["name"].as_str().unwrap_or_default());
    let port = service["port"].as_i64().unwrap_or(443);
    let path = service["path"].as_str().unwrap_or("/");
    let svc = get(store, &format!("/registry/services/{namespace}/{name}"))?.ok_or_else(|| format!("service \"{namespace}/{name}\" not found"))?;
    let svc_port = svc["spec"]["ports"].as_array().into_iter().flatten().find(|p| p["port"].as_i64() == Some(port)).cloned().unwrap_or(json!({"port": port}));
    let endpoints = get(store, &format!("/registry/endpoints/{namespace}/{name}"))?.ok_or_else(|| format!("service \"{namespace}/{name}\" has no endpoints"))?;
    let subset = endpoints["subsets"].as_array().into_iter().flatten().find(|s| s["addresses"].as_array().is_some_and(|a| !a.is_empty()));
    let subset = subset.ok_or_else(|| format!("service \"{namespace}/{name}\" has no ready endpoints"))?;
    let ip = subset["addresses"][0]["ip"].as_str().unwrap_or_default();
    let target = match &svc_port["targetPort"] {
        Value::Number(n) => n.as_i64().unwrap_or(port),
        Value::String(named) => subset["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["name"].as_str() == Some(named))
            .and_then(|p| p["port"].as_i64())
            .ok_or_else(|| format!("service \"{namespace}/{name}\" has no port named {named:?}"))?,
        _ => port,
    };
    let host = if ip.contains(':') { format!("[{ip}]") } else { ip.to_string() };
    Endpoint::new(&format!("https://{host}:{target}{path}"), ca.as_deref(), client, None, Some(&format!("{name}.{namespace}.svc")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(cc: Value) -> Vec<String> {
        validate(&cc, "w").into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    #[test]
    fn one_of_url_or_service() {
        assert_eq!(messages(json!({})), ["w: Required value: exactly one of url or service is required"]);
        assert_eq!(messages(json!({"url": "https://a", "service": {"name": "s", "namespace": "n"}})).len(), 1);
        assert!(messages(json!({"url": "https://a/convert"})).is_empty());
        assert!(messages(json!({"service": {"name": "s", "namespace": "n", "path": "/convert", "port": 8443}})).is_empty());
    }

    #[test]
    fn url_rules_as_kubernetes_words_them() {
        let m = messages(json!({"url": "http://u@h/p?q=1#f"}));
        assert_eq!(
            m,
            [
                "w.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
                "w.url: Invalid value: \"u\": user information is not permitted in the URL",
                "w.url: Invalid value: \"f\": fragments are not permitted in the URL",
                "w.url: Invalid value: \"q=1\": query parameters are not permitted in the URL",
            ]
        );
        assert!(messages(json!({"url": "https:///p"}))[0].contains("host must be specified"));
    }

    #[test]
    fn service_rules_as_kubernetes_words_them() {
        let m = messages(json!({"service": {"port": 70000, "path": "a//B"}}));
        assert_eq!(m[0], "w.service.name: Required value");
        assert_eq!(m[1], "w.service.namespace: Required value");
        assert!(m[2].starts_with("w.service.port: Invalid value: \"70000\": port is not valid"));
        assert_eq!(m[3], "w.service.path: Invalid value: \"a//B\": must start with a '/'");
        assert_eq!(m[4], "w.service.path: Invalid value: \"a//B\": segment[0] may not be empty");
        assert_eq!(m[5], "w.service.path: Invalid value: \"a//B\": segment[1] may not be empty");
        assert!(m[6].starts_with("w.service.path: Invalid value: \"a//B\": segment[2]: a lowercase RFC 1123 subdomain"));
    }

    #[test]
    fn a_ca_bundle_that_is_not_a_certificate_is_refused() {
        assert_eq!(messages(json!({"url": "https://a", "caBundle": "bm90IGEgY2VydA=="})).len(), 1);
    }
}
