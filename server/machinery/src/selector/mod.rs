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

    /// Whether a stored object (its JSON) passes: without a field selector only its labels are
    /// read out of the bytes, nothing else of it decoded, so that a label-selected watch or list
    /// costs a scan per object rather than a whole decoding. An object that cannot be decoded
    /// never passes.
    pub fn matches_stored(&self, data: &[u8]) -> bool {
        if self.is_everything() {
            return true;
        }
        if self.field.is_empty() {
            return serde_json::from_slice::<LabelsOnly>(data).is_ok_and(|o| self.label.matches(o.metadata.labels.as_ref()));
        }
        serde_json::from_slice::<Value>(data).is_ok_and(|v| self.matches(&v))
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

/// Just the labels of a stored object; every other field is skipped unread.
#[derive(serde::Deserialize)]
struct LabelsOnly {
    #[serde(default)]
    metadata: LabelsOf,
}

#[derive(serde::Deserialize, Default)]
struct LabelsOf {
    #[serde(default)]
    labels: Option<Map<String, Value>>,
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

    #[test]
    fn stored_bytes_are_selected_as_the_decoded_object_is() {
        let objects = [
            json!({"metadata": {"name": "a", "labels": {"app": "web", "tier": "1"}, "managedFields": [{"manager": "m"}]}, "data": {"k": "v"}}),
            json!({"metadata": {"name": "b", "labels": {"app": "db"}}}),
            json!({"metadata": {"name": "c"}}),
            json!({"metadata": {"name": "d", "labels": null}}),
        ];
        for (label, field) in [(Some("app=web"), None), (Some("app!=web"), None), (Some("!app"), None), (Some("tier>0"), None), (Some("app"), Some("metadata.name=b")), (None, None)] {
            let f = Filter::for_resource("", "configmaps", label, field).unwrap();
            for obj in &objects {
                let data = serde_json::to_vec(obj).unwrap();
                assert_eq!(f.matches_stored(&data), f.matches(obj), "{label:?} {field:?} on {obj}");
            }
        }
        let f = Filter::for_resource("", "configmaps", Some("app=web"), None).unwrap();
        assert!(!f.matches_stored(b"{not json"));
    }
}

