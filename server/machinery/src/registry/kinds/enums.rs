//! The enumerated fields of built-in kinds (`enums.json`, facts taken from kube-apiserver's
//! answers): a value outside a field's set is refused with Kubernetes' `Unsupported value`
//! cause, its supported values in the order Kubernetes lists them.

use std::collections::HashMap;
use std::sync::LazyLock;

use serde_json::Value;

use super::fields::one_of;
use crate::error::Cause;
use crate::registry::ResourceInfo;

/// One enumerated field: where it is, what it may hold, and how a cause names it.
struct Enumerated {
    path: Vec<String>,
    values: Vec<String>,
    /// The field as Kubernetes reports it when that is not the path (`{i}`: the list index).
    reported: Option<String>,
}

/// The enumerated fields by built-in kind (`group/version/resource` in the data), keyed by the
/// kind's table entry so that a write looks them up without building a string.
static ENUMS: LazyLock<HashMap<usize, Vec<Enumerated>>> = LazyLock::new(|| {
    let data: serde_json::Map<String, Value> = serde_json::from_str(include_str!("enums.json")).unwrap_or_default();
    let entry = |kind: &str| crate::registry::ALL.iter().find(|r| format!("{}/{}", r.api_version(), r.resource) == kind).map(key);
    data.into_iter()
        .filter_map(|(kind, fields)| Some((entry(&kind)?, fields)))
        .map(|(kind, fields)| {
            let fields = fields
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|f| {
                    let text = |v: &Value| v.as_str().map(str::to_string);
                    Some(Enumerated {
                        path: text(&f[0])?.split('.').map(str::to_string).collect(),
                        values: f[1].as_array()?.iter().filter_map(text).collect(),
                        reported: text(&f[2]),
                    })
                })
                .collect();
            (kind, fields)
        })
        .collect()
});

/// The causes of every enumerated field of `obj` holding a value outside its set.
pub fn check(info: &ResourceInfo, obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    for field in ENUMS.get(&key(info)).into_iter().flatten() {
        let allowed: Vec<&str> = field.values.iter().map(String::as_str).collect();
        walk(obj, &field.path, String::new(), None, &mut |value, at, index| {
            let name = match &field.reported {
                Some(r) => r.replace("{i}", &index.map(|i| i.to_string()).unwrap_or_default()),
                None => at,
            };
            one_of(value, &name, &allowed, &mut out);
        });
    }
    out
}

/// A table entry's identity (custom resources have none in the data).
fn key(info: &ResourceInfo) -> usize {
    info as *const ResourceInfo as usize
}

/// Calls `found` with each value at `path` under `v`, its field path, and the index of the
/// last list item on the way.
fn walk(v: &Value, path: &[String], at: String, index: Option<usize>, found: &mut dyn FnMut(&Value, String, Option<usize>)) {
    let Some((segment, rest)) = path.split_first() else {
        if !v.is_null() {
            found(v, at, index);
        }
        return;
    };
    let join = |name: &str| if at.is_empty() { name.to_string() } else { format!("{at}.{name}") };
    match segment.strip_suffix("[]") {
        Some(list) => {
            for (i, item) in v[list].as_array().into_iter().flatten().enumerate() {
                walk(item, rest, format!("{}[{i}]", join(list)), Some(i), found);
            }
        }
        None => walk(&v[segment.as_str()], rest, join(segment), index, found),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_outside_the_set_are_refused_where_kubernetes_says() {
        let hooks = crate::registry::lookup("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations").unwrap();
        let obj = json!({"webhooks": [{"sideEffects": "None"}, {"sideEffects": "Unknown", "rules": [{"operations": ["CREATE", "PATCH"]}]}]});
        let causes: Vec<(String, String)> = check(hooks, &obj).into_iter().map(|c| (c.field, c.message)).collect();
        assert_eq!(
            causes,
            [
                ("webhooks[1].sideEffects".to_string(), "Unsupported value: \"Unknown\": supported values: \"None\", \"NoneOnDryRun\"".to_string()),
                ("webhooks[1].rules[0].operations[1]".to_string(), "Unsupported value: \"PATCH\": supported values: \"*\", \"CONNECT\", \"CREATE\", \"DELETE\", \"UPDATE\"".to_string()),
            ]
        );
        assert_eq!(ENUMS.len(), serde_json::from_str::<serde_json::Map<String, Value>>(include_str!("enums.json")).unwrap().len() - 1, "every kind of the data is served");
        let pvcs = crate::registry::lookup("", "v1", "persistentvolumeclaims").unwrap();
        let causes = check(pvcs, &json!({"spec": {"accessModes": ["ReadWriteOnce", "ReadWriteSometimes"]}}));
        assert_eq!(causes[0].field, "spec.accessModes");
    }
}
