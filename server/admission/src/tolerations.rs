//! Tolerations compared as Kubernetes' `pkg/util/tolerations` compares them: whether one
//! tolerates every taint another does, two lists merged without redundant entries, and a list
//! checked against a whitelist; and lists of them read from JSON (annotations, configuration)
//! with the errors of Go's JSON decoding.

use serde_json::{json, Map, Value};

/// One toleration; an empty string is an absent field.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Toleration {
    pub key: String,
    pub operator: String,
    pub value: String,
    pub effect: String,
    pub seconds: Option<i64>,
}

const TEXT_FIELDS: [&str; 4] = ["key", "operator", "value", "effect"];

impl Toleration {
    /// A toleration of a decoded object (fields of another type count as absent).
    pub fn of(t: &Value) -> Toleration {
        let [key, operator, value, effect] = TEXT_FIELDS.map(|f| t[f].as_str().unwrap_or_default().to_string());
        Toleration { key, operator, value, effect, seconds: t["tolerationSeconds"].as_i64() }
    }

    /// As an object stores it, absent fields left out.
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        for (field, text) in TEXT_FIELDS.into_iter().zip([&self.key, &self.operator, &self.value, &self.effect]) {
            if !text.is_empty() {
                out.insert(field.into(), json!(text));
            }
        }
        if let Some(seconds) = self.seconds {
            out.insert("tolerationSeconds".into(), json!(seconds));
        }
        Value::Object(out)
    }
}

/// The tolerations of a pod spec.
pub fn of_spec(spec: &Value) -> Vec<Toleration> {
    spec["tolerations"].as_array().into_iter().flatten().map(Toleration::of).collect()
}

/// How Go's JSON decoding names the type of a value it cannot decode.
fn json_type(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(_) => "bool".into(),
        Value::Number(n) if n.is_i64() || n.is_u64() => "number".into(),
        Value::Number(n) => format!("number {n}"),
        Value::String(_) => "string".into(),
        Value::Array(_) => "array".into(),
        Value::Object(_) => "object".into(),
    }
}

/// A JSON list of `v1.Toleration`s, or the error Go's decoding gives (null is an empty list).
pub fn parse(list: &Value) -> Result<Vec<Toleration>, String> {
    let cannot = |v: &Value, into: &str| format!("json: cannot unmarshal {} into Go {into}", json_type(v));
    let items = match list {
        Value::Null => return Ok(Vec::new()),
        Value::Array(items) => items,
        other => return Err(cannot(other, "value of type []v1.Toleration")),
    };
    let mut out = Vec::new();
    for item in items {
        let fields = match item {
            Value::Null => {
                out.push(Toleration::default());
                continue;
            }
            Value::Object(fields) => fields,
            other => return Err(cannot(other, "value of type v1.Toleration")),
        };
        for field in TEXT_FIELDS {
            if let Some(v) = fields.get(field).filter(|v| !v.is_null() && !v.is_string()) {
                return Err(cannot(v, &format!("struct field Toleration.{field} of type string")));
            }
        }
        if let Some(v) = fields.get("tolerationSeconds").filter(|v| !v.is_null() && !v.is_i64()) {
            return Err(cannot(v, "struct field Toleration.tolerationSeconds of type int64"));
        }
        out.push(Toleration::of(item));
    }
    Ok(out)
}

/// Whether `ss` tolerates every taint that `t` tolerates.
fn is_superset(ss: &Toleration, t: &Toleration) -> bool {
    if ss == t {
        return true;
    }
    // An empty key with `Exists` matches every key.
    if t.key != ss.key && (!ss.key.is_empty() || ss.operator != "Exists") {
        return false;
    }
    // An empty effect matches every effect.
    if t.effect != ss.effect && !ss.effect.is_empty() {
        return false;
    }
    if let (Some(limit), "NoExecute") = (ss.seconds, ss.effect.as_str()) {
        if t.seconds.is_none_or(|s| s > limit) {
            return false;
        }
    }
    match ss.operator.as_str() {
        "Equal" | "" => t.operator == "Equal" && t.value == ss.value,
        "Exists" => true,
        _ => false,
    }
}

/// `first` then `second`, leaving out each toleration another one kept covers (of two equal
/// ones, the first is kept).
pub fn merge(first: &[Toleration], second: &[Toleration]) -> Vec<Toleration> {
    let all: Vec<&Toleration> = first.iter().chain(second).collect();
    let mut merged: Vec<Toleration> = Vec::new();
    for (i, t) in all.iter().enumerate() {
        let covered = merged.iter().any(|m| is_superset(m, t)) || all[i + 1..].iter().any(|later| later != t && is_superset(later, t));
        if !covered {
            merged.push((*t).clone());
        }
    }
    merged
}

/// Whether each toleration is covered by one of the whitelist (an empty whitelist allows all).
pub fn whitelisted(tolerations: &[Toleration], whitelist: &[Toleration]) -> bool {
    whitelist.is_empty() || tolerations.iter().all(|t| whitelist.iter().any(|w| is_superset(w, t)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(v: Value) -> Vec<Toleration> {
        parse(&v).unwrap()
    }

    #[test]
    fn merging_keeps_the_wider_toleration() {
        let pod = list(json!([{"key": "a", "operator": "Equal", "value": "1", "effect": "NoSchedule"}, {"key": "b", "operator": "Exists"}]));
        let extra = list(json!([{"key": "a", "operator": "Exists", "effect": "NoSchedule"}, {"key": "b", "operator": "Exists"}, {"key": "c", "operator": "Exists"}]));
        let merged: Vec<Value> = merge(&pod, &extra).iter().map(Toleration::to_json).collect();
        assert_eq!(
            merged,
            [json!({"key": "b", "operator": "Exists"}), json!({"key": "a", "operator": "Exists", "effect": "NoSchedule"}), json!({"key": "c", "operator": "Exists"})]
        );
    }

    #[test]
    fn whitelist_coverage() {
        let whitelist = list(json!([{"key": "dedicated", "operator": "Exists"}, {"key": "slow", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}]));
        let ok = list(json!([{"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"}, {"key": "slow", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}]));
        assert!(whitelisted(&ok, &whitelist));
        for refused in [json!([{"key": "slow", "operator": "Exists", "effect": "NoExecute"}]), json!([{"key": "other", "operator": "Exists"}]), json!([{"operator": "Exists"}])] {
            assert!(!whitelisted(&list(refused.clone()), &whitelist), "{refused}");
        }
        // An operator left out is not `Equal` when compared with a whitelisted `Equal`.
        let equal = list(json!([{"key": "k", "value": "v"}]));
        assert!(whitelisted(&equal, &equal) && !whitelisted(&list(json!([{"key": "k", "value": "v", "effect": "NoSchedule"}])), &equal));
        assert!(whitelisted(&ok, &[]));
    }

    #[test]
    fn go_decoding_errors() {
        assert_eq!(parse(&json!({"key": "a"})).unwrap_err(), "json: cannot unmarshal object into Go value of type []v1.Toleration");
        assert_eq!(parse(&json!(["a"])).unwrap_err(), "json: cannot unmarshal string into Go value of type v1.Toleration");
        assert_eq!(parse(&json!([{"key": 1}])).unwrap_err(), "json: cannot unmarshal number into Go struct field Toleration.key of type string");
        assert_eq!(parse(&json!([{"tolerationSeconds": 1.5}])).unwrap_err(), "json: cannot unmarshal number 1.5 into Go struct field Toleration.tolerationSeconds of type int64");
        assert_eq!(parse(&json!(null)).unwrap(), []);
    }
}
