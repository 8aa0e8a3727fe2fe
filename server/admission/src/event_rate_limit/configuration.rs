//! EventRateLimit's configuration from `--admission-control-config-file`: a `Configuration` of
//! `eventratelimit.admission.k8s.io/v1alpha1` with its `limits` (a `type` of `Server`,
//! `Namespace`, `User` or `SourceAndObject`, `qps`, `burst`, and `cacheSize` for the keyed
//! types), validated as Kubernetes validates it. The plugin has no defaults: without a
//! configuration its list of limits is empty, which is invalid.

use serde_json::Value;

use access::authz::rbac::aggregate;

const API_VERSION: &str = "eventratelimit.admission.k8s.io/v1alpha1";

/// Buckets kept per keyed limit when `cacheSize` is not given.
const DEFAULT_CACHE_SIZE: usize = 4096;

/// What a limit counts events by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitType {
    /// One bucket for every event the server receives.
    Server,
    Namespace,
    User,
    /// The event's source and the object it is about.
    SourceAndObject,
}

impl LimitType {
    const ALL: [LimitType; 4] = [LimitType::Server, LimitType::Namespace, LimitType::User, LimitType::SourceAndObject];

    pub fn as_str(self) -> &'static str {
        match self {
            LimitType::Server => "Server",
            LimitType::Namespace => "Namespace",
            LimitType::User => "User",
            LimitType::SourceAndObject => "SourceAndObject",
        }
    }
}

/// One limit: a token bucket of `burst` tokens refilled at `qps` per second, per key; a keyed
/// type keeps the buckets of its `cache_size` most recently used keys.
#[derive(Debug, Clone, PartialEq)]
pub struct Limit {
    pub limit_type: LimitType,
    pub qps: f64,
    pub burst: f64,
    pub cache_size: usize,
}

/// Reads the plugin's configuration; an error lists every problem as Kubernetes' field errors.
pub fn load(config: Option<&Value>) -> Result<Vec<Limit>, String> {
    if let Some(c) = config.filter(|c| c["apiVersion"] != API_VERSION || c["kind"] != "Configuration") {
        return Err(format!("expected a Configuration of {API_VERSION}, not kind {} of {}", c["kind"], c["apiVersion"]));
    }
    let mut problems = Vec::new();
    let limits = match config.map(|c| &c["limits"]) {
        Some(Value::Array(limits)) if !limits.is_empty() => limits,
        // Absent is Go's nil list, which prints as `null`.
        Some(Value::Array(_)) => return Err("limits: Invalid value: []: must not be empty".into()),
        _ => return Err("limits: Invalid value: null: must not be empty".into()),
    };
    let mut valid = Vec::new();
    for (i, limit) in limits.iter().enumerate() {
        let field = |name: &str| format!("limits[{i}].{name}");
        let number = |name: &str| -> Result<i64, String> {
            match &limit[name] {
                Value::Null => Ok(0),
                v => v.as_i64().filter(|n| i32::try_from(*n).is_ok()).ok_or_else(|| format!("{}: cannot read {v} as an int32", field(name))),
            }
        };
        let (qps, burst, cache_size) = (number("qps")?, number("burst")?, number("cacheSize")?);
        let type_name = limit["type"].as_str().unwrap_or_default();
        let limit_type = LimitType::ALL.into_iter().find(|t| t.as_str() == type_name);
        if limit_type.is_none() {
            let supported: Vec<String> = LimitType::ALL.iter().map(|t| format!("{:?}", t.as_str())).collect();
            problems.push(format!("{}: Unsupported value: {type_name:?}: supported values: {}", field("type"), supported.join(", ")));
        }
        if burst <= 0 {
            problems.push(format!("{}: Invalid value: {burst}: must be positive", field("burst")));
        }
        if qps <= 0 {
            problems.push(format!("{}: Invalid value: {qps}: must be positive", field("qps")));
        }
        if limit_type != Some(LimitType::Server) && cache_size < 0 {
            problems.push(format!("{}: Invalid value: {cache_size}: must not be negative", field("cacheSize")));
        }
        if let Some(limit_type) = limit_type {
            let cache_size = if cache_size > 0 { cache_size as usize } else { DEFAULT_CACHE_SIZE };
            valid.push(Limit { limit_type, qps: qps as f64, burst: burst as f64, cache_size });
        }
    }
    match problems.is_empty() {
        true => Ok(valid),
        false => Err(aggregate(&problems)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config(limits: Value) -> Value {
        json!({"apiVersion": API_VERSION, "kind": "Configuration", "limits": limits})
    }

    #[test]
    fn limits_with_their_cache_sizes() {
        let limits = load(Some(&config(json!([{"type": "Server", "qps": 5, "burst": 10}, {"type": "User", "qps": 1, "burst": 2, "cacheSize": 3}])))).unwrap();
        assert_eq!(limits[0], Limit { limit_type: LimitType::Server, qps: 5.0, burst: 10.0, cache_size: DEFAULT_CACHE_SIZE });
        assert_eq!(limits[1], Limit { limit_type: LimitType::User, qps: 1.0, burst: 2.0, cache_size: 3 });
    }

    #[test]
    fn problems_as_kubernetes_words_them() {
        assert_eq!(load(None).unwrap_err(), "limits: Invalid value: null: must not be empty");
        assert_eq!(load(Some(&config(json!([])))).unwrap_err(), "limits: Invalid value: []: must not be empty");
        assert_eq!(
            load(Some(&config(json!([{"type": "Pod", "qps": 0, "burst": 1, "cacheSize": -1}])))).unwrap_err(),
            "[limits[0].type: Unsupported value: \"Pod\": supported values: \"Server\", \"Namespace\", \"User\", \"SourceAndObject\", \
             limits[0].qps: Invalid value: 0: must be positive, limits[0].cacheSize: Invalid value: -1: must not be negative]"
        );
        // A server limit has no cache to size.
        assert!(load(Some(&config(json!([{"type": "Server", "qps": 1, "burst": 1, "cacheSize": -1}])))).is_ok());
        assert_eq!(load(Some(&config(json!([{"type": "User", "qps": 1}])))).unwrap_err(), "limits[0].burst: Invalid value: 0: must be positive");
        assert!(load(Some(&config(json!([{"type": "User", "qps": "1", "burst": 1}])))).unwrap_err().contains("limits[0].qps: cannot read \"1\""));
        assert!(load(Some(&json!({"apiVersion": "v1", "kind": "Configuration", "limits": []}))).unwrap_err().starts_with("expected a Configuration"));
    }
}
