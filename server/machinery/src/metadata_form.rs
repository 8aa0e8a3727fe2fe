//! The `PartialObjectMetadata` form (`application/json;as=PartialObjectMetadata;g=meta.k8s.io;
//! v=v1`, and `...List` for collections): only each object's metadata, as client-go's metadata
//! informers and kube-rs' `list_metadata`/`watch_metadata` ask for.

use serde_json::{json, Value};

use crate::list::ListReply;

const API_VERSION: &str = "meta.k8s.io/v1";

/// One object as `PartialObjectMetadata`.
pub fn object(obj: &Value) -> Value {
    json!({"kind": "PartialObjectMetadata", "apiVersion": API_VERSION, "metadata": obj["metadata"]})
}

/// A list as `PartialObjectMetadataList`; items that are not JSON are skipped.
pub fn list(list: &ListReply) -> Value {
    let mut meta = json!({"resourceVersion": list.rev.to_string()});
    if let Some(c) = &list.continue_token {
        meta["continue"] = json!(c);
    }
    if let Some(r) = list.remaining {
        meta["remainingItemCount"] = json!(r);
    }
    let items: Vec<Value> = list.items.iter().filter_map(|i| serde_json::from_slice::<Value>(i).ok()).map(|o| object(&o)).collect();
    json!({"kind": "PartialObjectMetadataList", "apiVersion": API_VERSION, "metadata": meta, "items": items})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_only_metadata() {
        let cm = json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "a", "resourceVersion": "7"}, "data": {"k": "v"}});
        assert_eq!(
            object(&cm),
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": {"name": "a", "resourceVersion": "7"}})
        );
        let reply = ListReply { rev: 9, continue_token: Some("t".into()), remaining: Some(3), items: vec![serde_json::to_vec(&cm).unwrap().into()] };
        let l = list(&reply);
        assert_eq!(l["kind"], "PartialObjectMetadataList");
        assert_eq!(l["metadata"], json!({"resourceVersion": "9", "continue": "t", "remainingItemCount": 3}));
        assert_eq!(l["items"][0]["metadata"]["name"], "a");
        assert!(l["items"][0].get("data").is_none());
    }
}
