//! Request bodies in `application/vnd.kubernetes.protobuf`, as client-go's typed clients (and
//! so `kubectl create deployment`, `kubectl create namespace`, controllers) send them.
//!
//! A body is the magic `k8s\0` followed by a `runtime.Unknown` message: `typeMeta` (1, holding
//! `apiVersion` 1 and `kind` 2), `raw` (2, the object's own message), `contentEncoding` (3) and
//! `contentType` (4). The kind names the message; the object is decoded into the JSON form the
//! rest of the server works with.
//!
//! Replies go out the same way (`encode_object`), and a watch in Protobuf is a stream of frames,
//! each a 4-byte big-endian length and a `WatchEvent` (`type` 1, `object` 2 as a `RawExtension`
//! holding the enveloped object), as client-go's streaming decoder reads them.

mod decode;
pub(crate) mod encode;
#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod generate;
pub mod schema;
mod unions;

use serde_json::Value;

use crate::error::{ApiError, ApiResult};
use crate::registry;

pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";
const MAGIC: &[u8] = b"k8s\0";

/// Kinds that are not resources of their own but come as bodies or go out as replies, by
/// (apiVersion, kind); an empty apiVersion matches any.
const OTHER_KINDS: &[(&str, &str, &str)] = &[
    ("", "DeleteOptions", "apimachinery.pkg.apis.meta.v1.DeleteOptions"),
    ("autoscaling/v1", "Scale", "api.autoscaling.v1.Scale"),
    ("policy/v1", "Eviction", "api.policy.v1.Eviction"),
    ("authentication.k8s.io/v1", "TokenRequest", "api.authentication.v1.TokenRequest"),
    ("v1", "Status", "apimachinery.pkg.apis.meta.v1.Status"),
    ("meta.k8s.io/v1", "PartialObjectMetadata", "apimachinery.pkg.apis.meta.v1.PartialObjectMetadata"),
    ("meta.k8s.io/v1", "PartialObjectMetadataList", "apimachinery.pkg.apis.meta.v1.PartialObjectMetadataList"),
];

/// Messages `k8s-pb` does not have yet, each the same on the wire as another version's:
/// (message, the message it is sent as).
const SAME_AS: &[(&str, &str)] = &[
    ("api.admissionregistration.v1.MutatingAdmissionPolicy", "api.admissionregistration.v1beta1.MutatingAdmissionPolicy"),
    ("api.admissionregistration.v1.MutatingAdmissionPolicyList", "api.admissionregistration.v1beta1.MutatingAdmissionPolicyList"),
    ("api.admissionregistration.v1.MutatingAdmissionPolicyBinding", "api.admissionregistration.v1beta1.MutatingAdmissionPolicyBinding"),
    ("api.admissionregistration.v1.MutatingAdmissionPolicyBindingList", "api.admissionregistration.v1beta1.MutatingAdmissionPolicyBindingList"),
];

/// The message a message name is sent as: its own, or the one [`SAME_AS`] names.
fn sent_as(name: &str) -> &str {
    SAME_AS.iter().find(|(m, _)| *m == name).map_or(name, |(_, same)| same)
}

/// The schema message a message name is sent as, if there is one.
fn wire_message(name: &str) -> Option<&'static str> {
    schema::messages().get_key_value(sent_as(name)).map(|(k, _)| *k)
}

/// The message of a built-in kind, if it has one.
pub fn kind_message(info: &registry::ResourceInfo) -> Option<&'static str> {
    wire_message(info.ops.definition.strip_prefix("io.k8s.")?)
}

/// The `runtime.Unknown` envelope, as far as it matters here.
#[derive(Default)]
struct Unknown<'a> {
    api_version: String,
    kind: String,
    raw: &'a [u8],
    content_encoding: String,
}

/// Decodes a Protobuf request body into the object's JSON form, `apiVersion` and `kind`
/// included.
pub fn decode_body(body: &[u8]) -> ApiResult<Value> {
    let bad = |msg: String| ApiError::bad_request(format!("couldn't decode the request body as Protobuf: {msg}"));
    let envelope = body.strip_prefix(MAGIC).ok_or_else(|| bad("the body does not start with the Kubernetes Protobuf prefix".into()))?;
    let unknown = envelope_of(envelope).map_err(bad)?;
    if !unknown.content_encoding.is_empty() {
        return Err(bad(format!("content encoding {:?} is not supported", unknown.content_encoding)));
    }
    let message = message_for(&unknown.api_version, &unknown.kind)
        .ok_or_else(|| bad(format!("no Protobuf schema for kind {:?} in {:?}", unknown.kind, unknown.api_version)))?;
    let mut obj = decode::message(message, unknown.raw).map_err(bad)?;
    obj["apiVersion"] = Value::String(unknown.api_version);
    obj["kind"] = Value::String(unknown.kind);
    Ok(obj)
}

/// The media type of a Protobuf watch stream.
pub const STREAM_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// Encodes an object in its JSON form (`apiVersion` and `kind` included) as a Protobuf body:
/// the magic, then `Unknown` around the object's message.
pub fn encode_object(obj: &Value) -> ApiResult<Vec<u8>> {
    let api_version = obj["apiVersion"].as_str().unwrap_or_default();
    let kind = obj["kind"].as_str().unwrap_or_default();
    let message = message_for(api_version, kind)
        .ok_or_else(|| ApiError::internal(format!("no Protobuf schema for kind {kind:?} in {api_version:?}")))?;
    let raw = encode::message(message, obj).map_err(|e| ApiError::internal(format!("encoding a {kind} as Protobuf: {e}")))?;
    let mut type_meta = Vec::new();
    encode::bytes_field(&mut type_meta, 1, api_version.as_bytes());
    encode::bytes_field(&mut type_meta, 2, kind.as_bytes());
    let mut out = MAGIC.to_vec();
    encode::bytes_field(&mut out, 1, &type_meta);
    encode::bytes_field(&mut out, 2, &raw);
    encode::bytes_field(&mut out, 3, b"");
    encode::bytes_field(&mut out, 4, b"");
    Ok(out)
}

/// A list of a built-in kind in Protobuf, made an item at a time so that it is never held
/// whole (Kubernetes' streaming list encoder): the body is [`ListStream::head`], then each item's
/// [`ListStream::item`] in order, then [`LIST_TAIL`]. The envelope states the list's length
/// before the items, so the head encodes every item once to measure it.
pub struct ListStream {
    item_message: &'static str,
}

/// The envelope's empty content encoding and content type, after the list.
pub const LIST_TAIL: &[u8] = &[3 << 3 | 2, 0, 4 << 3 | 2, 0];

const LIST_META: &str = "apimachinery.pkg.apis.meta.v1.ListMeta";

impl ListStream {
    /// For lists of `info`'s kind, if it has a Protobuf message.
    pub fn new(info: &registry::ResourceInfo) -> Option<ListStream> {
        Some(ListStream { item_message: kind_message(info)? })
    }

    /// Everything before the first item of a list of `items` (stored JSON) with `metadata`.
    pub fn head(&self, info: &registry::ResourceInfo, metadata: &Value, items: &[bytes::Bytes]) -> ApiResult<Vec<u8>> {
        let mut meta = Vec::new();
        encode::bytes_field(&mut meta, 1, &encode::message(LIST_META, metadata).map_err(ApiError::internal)?);
        let mut raw_len = meta.len() as u64;
        for item in items {
            raw_len += self.item(item)?.len() as u64;
        }
        let mut type_meta = Vec::new();
        encode::bytes_field(&mut type_meta, 1, info.api_version().as_bytes());
        encode::bytes_field(&mut type_meta, 2, format!("{}List", info.kind).as_bytes());
        let mut out = MAGIC.to_vec();
        encode::bytes_field(&mut out, 1, &type_meta);
        encode::varint(&mut out, 2 << 3 | 2);
        encode::varint(&mut out, raw_len);
        out.extend_from_slice(&meta);
        Ok(out)
    }

    /// One item (stored JSON) as the list's `items` field.
    pub fn item(&self, item: &[u8]) -> ApiResult<Vec<u8>> {
        let value: Value = serde_json::from_slice(item).map_err(ApiError::internal)?;
        let message = encode::message(self.item_message, &value).map_err(|e| ApiError::internal(format!("encoding a list item as Protobuf: {e}")))?;
        let mut out = Vec::with_capacity(message.len() + 6);
        encode::bytes_field(&mut out, 2, &message);
        Ok(out)
    }
}

/// One frame of a Protobuf watch stream for an event of type `kind` (`ADDED`, `ERROR`, ...)
/// whose object is encoded already ([`encode_object`]).
pub fn watch_frame(kind: &str, object: &[u8]) -> Vec<u8> {
    let mut raw_extension = Vec::with_capacity(object.len() + 6);
    encode::bytes_field(&mut raw_extension, 1, object);
    let mut event = Vec::with_capacity(raw_extension.len() + kind.len() + 12);
    encode::bytes_field(&mut event, 1, kind.as_bytes());
    encode::bytes_field(&mut event, 2, &raw_extension);
    // An object is at most the request body limit, far below 4 GiB.
    let mut out = (event.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(&event);
    out
}

/// The message of a kind: a served resource's definition, or one of the body kinds.
fn message_for(api_version: &str, kind: &str) -> Option<&'static str> {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    if let Some(info) = registry::lookup_kind(group, version, kind) {
        return kind_message(info);
    }
    if let Some(item) = kind.strip_suffix("List") {
        if let Some(info) = registry::lookup_kind(group, version, item) {
            return wire_message(&format!("{}List", info.ops.definition.strip_prefix("io.k8s.")?));
        }
    }
    OTHER_KINDS
        .iter()
        .find(|(v, k, _)| *k == kind && (v.is_empty() || *v == api_version))
        .map(|(_, _, m)| *m)
}

fn envelope_of(bytes: &[u8]) -> Result<Unknown<'_>, String> {
    let text = |b: &[u8]| String::from_utf8(b.to_vec()).map_err(|_| "a string field is not valid UTF-8".to_string());
    let mut unknown = Unknown::default();
    for (number, value) in decode::length_delimited(bytes)? {
        match number {
            1 => {
                for (number, value) in decode::length_delimited(value)? {
                    match number {
                        1 => unknown.api_version = text(value)?,
                        2 => unknown.kind = text(value)?,
                        _ => {}
                    }
                }
            }
            2 => unknown.raw = value,
            3 => unknown.content_encoding = text(value)?,
            _ => {}
        }
    }
    Ok(unknown)
}

#[cfg(test)]
mod tests {
    use k8s_pb::api::apps::v1 as apps;
    use k8s_pb::api::core::v1 as core;
    use k8s_pb::apimachinery::pkg::api::resource::Quantity;
    use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
    use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
    use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
    use prost::Message;
    use serde_json::json;

    use super::*;

    /// A body as client-go writes it: the magic, then `Unknown` around the object.
    fn body(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
        let unknown = Unknown {
            type_meta: Some(TypeMeta { api_version: Some(api_version.into()), kind: Some(kind.into()) }),
            raw: Some(raw),
            content_encoding: Some(String::new()),
            content_type: Some(String::new()),
        };
        [MAGIC, &unknown.encode_to_vec()].concat()
    }

    fn s(v: &str) -> Option<String> {
        Some(v.into())
    }

    #[test]
    fn deployment_as_kubectl_sends_it() {
        let container = core::Container {
            name: s("web"),
            image: s("nginx:1.27"),
            args: vec!["-g".into(), "daemon off;".into()],
            ports: vec![core::ContainerPort { container_port: Some(80), protocol: s("TCP"), ..Default::default() }],
            env: vec![core::EnvVar {
                name: s("MODE"),
                value_from: Some(core::EnvVarSource {
                    config_map_key_ref: Some(core::ConfigMapKeySelector {
                        local_object_reference: Some(core::LocalObjectReference { name: s("settings") }),
                        key: s("mode"),
                        optional: Some(false),
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            resources: Some(core::ResourceRequirements {
                limits: [("memory".to_string(), Quantity { string: s("128Mi") })].into(),
                ..Default::default()
            }),
            readiness_probe: Some(core::Probe {
                handler: Some(core::ProbeHandler {
                    http_get: Some(core::HttpGetAction {
                        path: s("/healthz"),
                        port: Some(IntOrString { r#type: Some(1), int_val: Some(0), str_val: s("http") }),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                period_seconds: Some(5),
                ..Default::default()
            }),
            ..Default::default()
        };
        let deployment = apps::Deployment {
            metadata: Some(meta::ObjectMeta {
                name: s("web"),
                namespace: s(""),
                labels: [("app".to_string(), "web".to_string())].into(),
                creation_timestamp: Some(meta::Time::default()),
                ..Default::default()
            }),
            spec: Some(apps::DeploymentSpec {
                replicas: Some(0),
                selector: Some(meta::LabelSelector { match_labels: [("app".into(), "web".into())].into(), ..Default::default() }),
                template: Some(core::PodTemplateSpec {
                    metadata: Some(meta::ObjectMeta { labels: [("app".into(), "web".into())].into(), ..Default::default() }),
                    spec: Some(core::PodSpec { containers: vec![container], ..Default::default() }),
                }),
                strategy: Some(apps::DeploymentStrategy {
                    rolling_update: Some(apps::RollingUpdateDeployment {
                        max_surge: Some(IntOrString { r#type: Some(0), int_val: Some(2), str_val: s("") }),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            status: Some(apps::DeploymentStatus::default()),
        };
        let obj = decode_body(&body("apps/v1", "Deployment", deployment.encode_to_vec())).unwrap();
        assert_eq!(
            obj,
            json!({
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "web", "labels": {"app": "web"}},
                "spec": {
                    "replicas": 0,
                    "selector": {"matchLabels": {"app": "web"}},
                    "template": {
                        "metadata": {"labels": {"app": "web"}},
                        "spec": {"containers": [{
                            "name": "web",
                            "image": "nginx:1.27",
                            "args": ["-g", "daemon off;"],
                            "ports": [{"containerPort": 80, "protocol": "TCP"}],
                            "env": [{"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "mode", "optional": false}}}],
                            "resources": {"limits": {"memory": "128Mi"}},
                            "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 5},
                        }]},
                    },
                    "strategy": {"rollingUpdate": {"maxSurge": 2}},
                },
                "status": {},
            })
        );
    }

    /// Rules embedded twice (`NamedRuleWithOperations` embeds `RuleWithOperations`, which
    /// embeds `Rule`) keep their fields, as a Go client decoding the object needs them.
    #[test]
    fn doubly_embedded_rules_are_encoded() {
        use k8s_pb::api::admissionregistration::v1 as admission;
        let policy = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "p"},
            "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["deployments"], "resourceNames": ["web"]}]}}});
        let encoded = encode_object(&policy).unwrap();
        let unknown = Unknown::decode(&encoded[MAGIC.len()..]).unwrap();
        let decoded = admission::ValidatingAdmissionPolicy::decode(unknown.raw.unwrap().as_slice()).unwrap();
        let named = &decoded.spec.unwrap().match_constraints.unwrap().resource_rules[0];
        let with_operations = named.rule_with_operations.as_ref().unwrap();
        let rule = with_operations.rule.as_ref().unwrap();
        assert_eq!((&named.resource_names, &with_operations.operations), (&vec!["web".to_string()], &vec!["CREATE".to_string()]));
        assert_eq!((&rule.api_groups, &rule.resources), (&vec!["apps".to_string()], &vec!["deployments".to_string()]));
        // And back.
        let back = decode_body(&encoded).unwrap();
        assert_eq!(back["spec"]["matchConstraints"], policy["spec"]["matchConstraints"]);
    }

    #[test]
    fn times_bytes_and_delete_options() {
        let secret = core::Secret {
            metadata: Some(meta::ObjectMeta {
                name: s("creds"),
                creation_timestamp: Some(meta::Time { seconds: Some(1_700_000_000), nanos: Some(0) }),
                ..Default::default()
            }),
            data: [("token".to_string(), b"\x00hi".to_vec())].into(),
            r#type: s("Opaque"),
            ..Default::default()
        };
        let obj = decode_body(&body("v1", "Secret", secret.encode_to_vec())).unwrap();
        assert_eq!(obj["metadata"]["creationTimestamp"], "2023-11-14T22:13:20Z");
        assert_eq!(obj["data"]["token"], "AGhp");
        assert_eq!(obj["type"], "Opaque");

        let options = meta::DeleteOptions {
            grace_period_seconds: Some(0),
            propagation_policy: s("Foreground"),
            preconditions: Some(meta::Preconditions { uid: s("u-1"), resource_version: None }),
            ..Default::default()
        };
        let obj = decode_body(&body("meta.k8s.io/v1", "DeleteOptions", options.encode_to_vec())).unwrap();
        assert_eq!(
            obj,
            json!({"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
                   "propagationPolicy": "Foreground", "preconditions": {"uid": "u-1"}})
        );
    }

    #[test]
    fn bad_bodies_are_400() {
        let cm = core::ConfigMap { metadata: Some(meta::ObjectMeta { name: s("a"), ..Default::default() }), ..Default::default() };
        let good = body("v1", "ConfigMap", cm.encode_to_vec());
        assert!(decode_body(&good).is_ok());
        let cases = [
            good[4..].to_vec(),                                   // no magic
            good[..good.len() - 1].to_vec(),                      // truncated
            body("v1", "NoSuchKind", cm.encode_to_vec()),         // unknown kind
            body("v1", "ConfigMap", vec![0x0a, 0x02, 0xff, 0xff]), // garbage inside the object
        ];
        for case in cases {
            let err = decode_body(&case).unwrap_err();
            assert!(matches!(err, ApiError::BadRequest(_)), "{err:?}");
        }
    }
}
