//! PATCH bodies applied to the current object: JSON patch (RFC 6902), JSON merge patch
//! (RFC 7386) and strategic merge patch, with Kubernetes' status codes and messages.

mod strategic;

use serde_json::Value;

use crate::error::{ApiError, ApiResult};

/// The patch types, by their Content-Type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchKind {
    /// `application/json-patch+json`
    Json,
    /// `application/merge-patch+json`
    Merge,
    /// `application/strategic-merge-patch+json`
    Strategic,
    /// `application/apply-patch+yaml` (server-side apply)
    Apply,
}

/// Kubernetes refuses JSON patches with more operations than this.
const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// What Kubernetes answers (422, no details) when a JSON patch operation fails.
const PATCH_REJECTED: &str = "the server rejected our request due to an error in our request";

/// Each patch type and the media type a client sends it as.
const MEDIA_TYPES: [(PatchKind, &str); 4] = [
    (PatchKind::Json, "application/json-patch+json"),
    (PatchKind::Merge, "application/merge-patch+json"),
    (PatchKind::Strategic, "application/strategic-merge-patch+json"),
    (PatchKind::Apply, "application/apply-patch+yaml"),
];

impl PatchKind {
    /// The patch type of a media type (without parameters), if it is one.
    pub fn from_media_type(mime: &str) -> Option<PatchKind> {
        MEDIA_TYPES.iter().find(|(_, m)| *m == mime).map(|(kind, _)| *kind)
    }

    /// The media type a client sends this patch type as.
    pub fn media_type(self) -> &'static str {
        MEDIA_TYPES.iter().find(|(kind, _)| *kind == self).map_or("", |(_, m)| m)
    }
}

/// Applies a patch body to `current` and returns the patched object.
///
/// A malformed patch document is a 400; a JSON patch whose operation fails (a failing `test`,
/// a missing path) is the 422 Kubernetes gives, whose message does not name the operation.
///
/// `Apply` merges an applied configuration (YAML or JSON) like a strategic merge patch: fields
/// are set and list items merged by key, and nothing is removed, as a MutatingAdmissionPolicy's
/// `ApplyConfiguration` is merged. A server-side apply request goes through field management
/// instead (`handlers::mutate`), which removes what the applier stopped sending.
pub fn apply(kind: PatchKind, current: &Value, body: &[u8]) -> ApiResult<Value> {
    match kind {
        PatchKind::Json => json_patch(current, body),
        PatchKind::Merge => {
            let patch: Value = serde_json::from_slice(body).map_err(|_| bad_json_patch())?;
            if !patch.is_object() {
                return Err(bad_json_patch());
            }
            let mut doc = current.clone();
            json_patch::merge(&mut doc, &patch);
            Ok(doc)
        }
        PatchKind::Strategic => {
            let patch: Value = serde_json::from_slice(body).map_err(|e| ApiError::bad_request(e.to_string()))?;
            strategic::merge(current, &patch, definition(current)).map_err(ApiError::BadRequest)
        }
        PatchKind::Apply => {
            let patch = crate::yaml::decode(body, |e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
            strategic::merge(current, &patch, definition(current)).map_err(ApiError::BadRequest)
        }
    }
}

/// The schema definition of an object's kind (its `apiVersion` and `kind`), whose facts say
/// how its lists merge; empty for a kind this server does not serve.
fn definition(obj: &Value) -> &'static str {
    let api_version = obj["apiVersion"].as_str().unwrap_or_default();
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    crate::registry::lookup_group_kind(group, version, obj["kind"].as_str().unwrap_or_default()).map_or("", |r| r.ops.definition)
}

/// The 400 Kubernetes gives for a merge patch that is not a JSON object.
fn bad_json_patch() -> ApiError {
    ApiError::bad_request("Invalid JSON Patch")
}

fn json_patch(current: &Value, body: &[u8]) -> ApiResult<Value> {
    let patch: json_patch::Patch = serde_json::from_slice(body).map_err(|e| ApiError::bad_request(e.to_string()))?;
    if patch.0.len() > MAX_JSON_PATCH_OPERATIONS {
        return Err(ApiError::TooLarge(format!(
            "The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {}",
            patch.0.len()
        )));
    }
    let mut doc = current.clone();
    json_patch::patch(&mut doc, &patch.0).map_err(|_| ApiError::Unprocessable(PATCH_REJECTED.into()))?;
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::StatusCode;
    use serde_json::json;

    #[test]
    fn each_patch_type_is_sent_as_the_media_type_it_is_read_from() {
        for kind in [PatchKind::Json, PatchKind::Merge, PatchKind::Strategic, PatchKind::Apply] {
            assert_eq!(PatchKind::from_media_type(kind.media_type()), Some(kind));
        }
        assert_eq!(PatchKind::Merge.media_type(), "application/merge-patch+json");
        assert_eq!(PatchKind::from_media_type("application/json"), None);
    }

    proptest::proptest! {
        /// A patch body is the request's own bytes: any of them, of any patch type, patch the
        /// object or are refused with an error, never a panic.
        #[test]
        fn arbitrary_bodies_never_panic(current in crate::test_values::json_value(), body in crate::test_values::json_value(), junk in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64)) {
            let body = serde_json::to_vec(&body).unwrap();
            for kind in [PatchKind::Json, PatchKind::Merge, PatchKind::Strategic, PatchKind::Apply] {
                let _ = apply(kind, &current, &body);
                let _ = apply(kind, &cm(), &body);
                let _ = apply(kind, &current, &junk);
            }
        }
    }

    fn cm() -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"a": "1", "b": "2"}}, "data": {"k": "v"}})
    }

    #[test]
    fn merge_patch_sets_and_removes() {
        let out =
            apply(PatchKind::Merge, &cm(), br#"{"metadata":{"labels":{"a":null,"c":"3"}},"data":{"k":"w"}}"#).unwrap();
        assert_eq!(out["metadata"]["labels"], json!({"b": "2", "c": "3"}));
        assert_eq!(out["data"]["k"], "w");
        // Lists are replaced whole.
        let out = apply(PatchKind::Merge, &json!({"l": [1, 2]}), br#"{"l":[3]}"#).unwrap();
        assert_eq!(out["l"], json!([3]));
    }

    #[test]
    fn malformed_merge_patch_is_400() {
        for body in [&b"{not json"[..], b"null", b"\"x\"", b"[1]"] {
            let err = apply(PatchKind::Merge, &cm(), body).unwrap_err();
            assert_eq!(err.code(), StatusCode::BAD_REQUEST);
            assert_eq!(err.to_string(), "Invalid JSON Patch");
        }
    }

    #[test]
    fn json_patch_applies_operations() {
        let body = br#"[{"op":"test","path":"/data/k","value":"v"},{"op":"add","path":"/metadata/labels/c","value":"3"},{"op":"remove","path":"/metadata/labels/a"},{"op":"replace","path":"/data/k","value":"x"}]"#;
        let out = apply(PatchKind::Json, &cm(), body).unwrap();
        assert_eq!(out["metadata"]["labels"], json!({"b": "2", "c": "3"}));
        assert_eq!(out["data"]["k"], "x");
    }

    #[test]
    fn failing_json_patch_is_422() {
        for body in [
            &br#"[{"op":"test","path":"/data/k","value":"nope"}]"#[..],
            br#"[{"op":"remove","path":"/spec/affinity"}]"#,
            br#"[{"op":"replace","path":"/data/missing","value":1}]"#,
        ] {
            let err = apply(PatchKind::Json, &cm(), body).unwrap_err();
            assert_eq!(err.code(), StatusCode::UNPROCESSABLE_ENTITY);
            assert_eq!(err.status()["reason"], "Invalid");
            assert_eq!(err.to_string(), PATCH_REJECTED);
        }
    }

    #[test]
    fn malformed_json_patch_is_400() {
        for body in [&b"{}"[..], br#"[{"op":"frobnicate","path":"/a"}]"#, b"[{"] {
            assert_eq!(apply(PatchKind::Json, &cm(), body).unwrap_err().code(), StatusCode::BAD_REQUEST);
        }
    }

    #[test]
    fn too_many_json_patch_operations() {
        let ops: Vec<Value> = (0..=MAX_JSON_PATCH_OPERATIONS)
            .map(|_| json!({"op": "test", "path": "/kind", "value": "ConfigMap"}))
            .collect();
        let body = serde_json::to_vec(&ops).unwrap();
        assert!(matches!(apply(PatchKind::Json, &cm(), &body).unwrap_err(), ApiError::TooLarge(_)));
    }

    #[test]
    fn strategic_and_apply_merge_by_key() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}});
        let out = apply(PatchKind::Strategic, &pod, br#"{"spec":{"containers":[{"name":"b","image":"z"}]}}"#).unwrap();
        assert_eq!(out["spec"]["containers"], json!([{"name": "a", "image": "x"}, {"name": "b", "image": "z"}]));
        let out = apply(PatchKind::Apply, &pod, b"spec:\n  containers:\n  - name: a\n    image: w\n").unwrap();
        assert_eq!(out["spec"]["containers"][0], json!({"name": "a", "image": "w"}));
        assert_eq!(apply(PatchKind::Strategic, &pod, b"[").unwrap_err().code(), StatusCode::BAD_REQUEST);
        assert_eq!(apply(PatchKind::Apply, &pod, b"a: [").unwrap_err().code(), StatusCode::BAD_REQUEST);
    }

    #[test]
    fn media_types() {
        for t in crate::negotiate::PATCH_TYPES {
            assert!(PatchKind::from_media_type(t).is_some());
        }
        assert_eq!(PatchKind::from_media_type("application/json"), None);
    }
}
