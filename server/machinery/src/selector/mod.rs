//! Label and field selectors of list, watch and deletecollection requests, combined into one
//! [`Filter`] over object JSON.

mod field;
#[cfg(test)]
mod fuzz;
mod label;

pub use field::FieldSelector;
pub use label::LabelSelector;

use serde_json::{Map, Value};

use crate::error::ApiResult;
use crate::registry::ResourceInfo;

/// The `labelSelector` and `fieldSelector` of a request.
#[derive(Debug, Default)]
pub struct Filter {
    pub label: LabelSelector,
    pub field: FieldSelector,
}

impl Filter {
    /// Parses the selectors of a request on `info`; absent or empty selects everything.
    pub fn new(info: &ResourceInfo, label: Option<&str>, field: Option<&str>) -> ApiResult<Filter> {
        let selectable = crate::registry::custom::version(info).map(|v| v.selectable.clone()).unwrap_or_default();
        Ok(Filter {
            label: LabelSelector::parse(label.unwrap_or_default())?,
            field: FieldSelector::parse(info.group, info.resource, &selectable, field.unwrap_or_default())?,
        })
    }

    /// Parses the selectors of a request on `resource` of `group` (a built-in kind).
    pub fn for_resource(group: &str, resource: &str, label: Option<&str>, field: Option<&str>) -> ApiResult<Filter> {
        Ok(Filter {
            label: LabelSelector::parse(label.unwrap_or_default())?,
            field: FieldSelector::parse(group, resource, &[], field.unwrap_or_default())?,
        })
    }

    /// Whether every object passes, so matching can be skipped.
    pub fn is_everything(&self) -> bool {
        self.label.is_empty() && self.field.is_empty()
    }

    /// Whether the object passes both selectors.
    pub fn matches(&self, obj: &Value) -> bool {
        let labels = obj.get("metadata").and_then(|m| m.get("labels")).and_then(Value::as_object);
        self.label.matches(labels) && self.field.matches(obj)
    }
}

/// Whether a `metav1.LabelSelector` object matches `labels` (an empty selector matches all).
pub fn label_selector_matches(selector: &Value, labels: Option<&Map<String, Value>>) -> bool {
    let label = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    let labels_ok = selector["matchLabels"].as_object().into_iter().flatten().all(|(k, v)| label(k) == v.as_str());
    let exprs_ok = selector["matchExpressions"].as_array().into_iter().flatten().all(|e| {
        let key = e["key"].as_str().unwrap_or_default();
        let values: Vec<&str> = e["values"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        match e["operator"].as_str().unwrap_or_default() {
            "In" => label(key).is_some_and(|v| values.contains(&v)),
            "NotIn" => label(key).is_none_or(|v| !values.contains(&v)),
            "Exists" => label(key).is_some(),
            "DoesNotExist" => label(key).is_none(),
            _ => false,
        }
    });
    labels_ok && exprs_ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn combines_label_and_field() {
        let obj = json!({"metadata": {"name": "a", "namespace": "ns", "labels": {"app": "web"}}});
        let f = Filter::for_resource("", "configmaps", Some("app=web"), Some("metadata.name=a")).unwrap();
        assert!(!f.is_everything() && f.matches(&obj));
        assert!(!Filter::for_resource("", "configmaps", Some("app=db"), None).unwrap().matches(&obj));
        assert!(!Filter::for_resource("", "configmaps", None, Some("metadata.namespace=x")).unwrap().matches(&obj));
        let all = Filter::for_resource("", "configmaps", None, Some("")).unwrap();
        assert!(all.is_everything() && all.matches(&json!({})));
        assert!(Filter::for_resource("", "configmaps", Some("a b"), None).is_err());
        assert!(Filter::for_resource("", "configmaps", None, Some("spec.x=1")).is_err());
    }
}
