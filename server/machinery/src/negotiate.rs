//! Content negotiation: the media type a response is encoded in (from `Accept`), and what a
//! request body is (from `Content-Type`), with Kubernetes' rules and error messages.
//!
//! Accept clauses are tried best first (by `q`, then concrete before wildcard types, otherwise
//! in the order sent), and the first one the endpoint can produce wins, as in Kubernetes'
//! `NegotiateMediaTypeOptions`: `application/vnd.kubernetes.protobuf, application/json` falls
//! back to JSON, an unknown `as=` conversion is skipped, and nothing acceptable is a 406.

use http::{header, HeaderMap};
use serde_json::Value;

use crate::error::{ApiError, ApiResult};
use crate::patch::PatchKind;

/// How a response is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Json,
    Yaml,
    /// `application/vnd.kubernetes.protobuf`, for the kinds with a Protobuf message.
    Protobuf,
    /// `application/cbor`, when the `CBORServingAndStorage` gate is on.
    Cbor,
}

/// What a response holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// The objects themselves.
    Object,
    /// `as=Table;g=meta.k8s.io;v=v1` (or `v1beta1`); always answered as `meta.k8s.io/v1`.
    Table,
    /// `as=PartialObjectMetadata[List];g=meta.k8s.io;v=v1`: metadata only.
    Metadata,
}

/// The negotiated form and encoding of a resource response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Output {
    pub form: Form,
    pub encoding: Encoding,
}

/// What one Accept clause asks for, when this server can produce it at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Media {
    Resource(Output),
    /// `application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`.
    AggregatedDiscovery,
}

/// What a request body is, by its Content-Type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    Json,
    Yaml,
    Protobuf,
    Cbor,
    /// `application/apply-patch+cbor`: a server-side apply in CBOR.
    ApplyCbor,
    Patch(PatchKind),
}

/// The patch media types, in the order Kubernetes lists them in its 415 message.
pub const PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];

/// The media types a response can have.
const RESPONSE_TYPES: &[&str] = &["application/json", "application/yaml", crate::protobuf::MEDIA_TYPE];
/// The media types a watch stream can have.
const STREAM_TYPES: &[&str] = &["application/json;stream=watch", crate::protobuf::STREAM_MEDIA_TYPE];
/// The media types of an object in a create or update body.
const BODY_TYPES: &[&str] = &["application/json", "application/yaml", crate::protobuf::MEDIA_TYPE];

/// One clause of an Accept header.
#[derive(Debug)]
struct Clause {
    type_: String,
    subtype: String,
    q: f32,
    params: Vec<(String, String)>,
}

impl Clause {
    fn param(&self, key: &str) -> Option<&str> {
        self.params.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The media this clause selects, following Kubernetes' `acceptMediaTypeOptions`.
    fn media(&self) -> Option<Media> {
        let encoding = match (self.type_.as_str(), self.subtype.as_str()) {
            ("application", "json" | "*") | ("*", "*") => Encoding::Json,
            ("application", "yaml") => Encoding::Yaml,
            ("application", "vnd.kubernetes.protobuf") => Encoding::Protobuf,
            ("application", "cbor") if crate::cbor::enabled() => Encoding::Cbor,
            _ => return None,
        };
        // `stream=watch` needs a streaming serializer, which YAML has not.
        if self.param("stream").is_some_and(|s| !s.is_empty() && (s != "watch" || encoding == Encoding::Yaml)) {
            return None;
        }
        let resource = |form| Some(Media::Resource(Output { form, encoding }));
        let (kind, group, version) = (self.param("as"), self.param("g"), self.param("v"));
        if kind.is_none() && group.is_none() && version.is_none() {
            return resource(Form::Object);
        }
        match (kind.unwrap_or(""), group.unwrap_or(""), version.unwrap_or("")) {
            // A Table has no Protobuf message.
            ("Table", "meta.k8s.io", "v1" | "v1beta1") if encoding != Encoding::Protobuf => resource(Form::Table),
            ("PartialObjectMetadata" | "PartialObjectMetadataList", "meta.k8s.io", "v1" | "v1beta1") => resource(Form::Metadata),
            ("APIGroupDiscoveryList", "apidiscovery.k8s.io", "v2") if encoding == Encoding::Json => {
                Some(Media::AggregatedDiscovery)
            }
            _ => None,
        }
    }
}

/// Parses an Accept header into clauses, best first.
fn parse_accept(header: &str) -> Vec<Clause> {
    let mut clauses: Vec<Clause> = header
        .split(',')
        .filter_map(|part| {
            let mut pieces = part.split(';');
            let range = pieces.next()?.trim().to_ascii_lowercase();
            let (type_, subtype) = match range.split_once('/') {
                Some((t, s)) => (t.trim().to_string(), s.trim().to_string()),
                None if range == "*" => ("*".to_string(), "*".to_string()),
                None => return None,
            };
            let mut q = 1.0;
            let mut params = Vec::new();
            for param in pieces {
                let Some((k, v)) = param.split_once('=') else { continue };
                let (k, v) = (k.trim(), v.trim());
                if k == "q" {
                    q = v.parse().unwrap_or(0.0);
                } else {
                    params.push((k.to_string(), v.to_string()));
                }
            }
            Some(Clause { type_, subtype, q, params })
        })
        .collect();
    clauses.sort_by(|a, b| {
        b.q.total_cmp(&a.q)
            .then((a.type_ == "*").cmp(&(b.type_ == "*")))
            .then((a.subtype == "*").cmp(&(b.subtype == "*")))
    });
    clauses
}

/// Every Accept header value, joined into one list.
fn accept_header(headers: &HeaderMap) -> String {
    let values: Vec<&str> = headers.get_all(header::ACCEPT).iter().filter_map(|v| v.to_str().ok()).collect();
    values.join(",")
}

/// The first clause whose media `allow` maps to a result; an absent header means JSON.
fn negotiate<T>(headers: &HeaderMap, allow: impl Fn(Media) -> Option<T>) -> Option<T> {
    let accept = accept_header(headers);
    if accept.trim().is_empty() {
        return allow(Media::Resource(Output::JSON));
    }
    parse_accept(&accept).iter().find_map(|c| c.media().and_then(&allow))
}

fn not_acceptable(types: &[&str]) -> ApiError {
    ApiError::NotAcceptable(format!("only the following media types are accepted: {}", types.join(", ")))
}

/// The encoding of a resource response (`watch`: of a watch stream, which has no YAML form;
/// `tables`: whether the resource has a Table form, which the reviews have not; `protobuf`:
/// whether its objects have a Protobuf form, which custom resources have not, though their
/// Tables and metadata do).
pub fn output(headers: &HeaderMap, watch: bool, tables: bool, protobuf: bool) -> ApiResult<Output> {
    let chosen = negotiate(headers, |m| match m {
        Media::Resource(Output { form: Form::Table, .. }) if !tables => None,
        Media::Resource(Output { form: Form::Object, encoding: Encoding::Protobuf }) if !protobuf => None,
        Media::Resource(out) => Some(out),
        Media::AggregatedDiscovery => None,
    });
    match chosen {
        // Like Kubernetes, a watch negotiates as a read and then needs a stream serializer.
        Some(Output { encoding: Encoding::Yaml, .. }) | None if watch => Err(not_acceptable(STREAM_TYPES)),
        Some(out) => Ok(out),
        None => Err(not_acceptable(RESPONSE_TYPES)),
    }
}

/// Whether a discovery request (`/api`, `/apis`) asks for the aggregated document first.
pub fn wants_aggregated_discovery(headers: &HeaderMap) -> bool {
    negotiate(headers, |m| match m {
        Media::Resource(Output { form: Form::Object, encoding: Encoding::Json | Encoding::Yaml }) => Some(false),
        Media::AggregatedDiscovery => Some(true),
        Media::Resource(_) => None,
    })
    .unwrap_or(false)
}

/// What a body with this Content-Type is; none means JSON.
pub fn request_body_kind(content_type: Option<&str>) -> ApiResult<BodyKind> {
    let mime = content_type.unwrap_or("").split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    // A Content-Type given without a media type (`;;;`) is no JSON: Go cannot parse it.
    if content_type.is_some_and(|c| !c.trim().is_empty()) && !mime.contains('/') {
        return Err(unsupported_body());
    }
    match mime.as_str() {
        "" | "application/json" => Ok(BodyKind::Json),
        "application/yaml" => Ok(BodyKind::Yaml),
        crate::protobuf::MEDIA_TYPE => Ok(BodyKind::Protobuf),
        crate::cbor::MEDIA_TYPE if crate::cbor::enabled() => Ok(BodyKind::Cbor),
        crate::cbor::APPLY_MEDIA_TYPE if crate::cbor::enabled() => Ok(BodyKind::ApplyCbor),
        other => PatchKind::from_media_type(other).map(BodyKind::Patch).ok_or_else(unsupported_body),
    }
}

/// The 415 for a create or update body in a media type other than an object's.
pub fn unsupported_body() -> ApiError {
    ApiError::UnsupportedMediaType(format!(
        "the body of the request was in an unknown format - accepted media types include: {}",
        BODY_TYPES.join(", ")
    ))
}

/// What the request's body is, by its Content-Type header.
pub fn body_kind(headers: &HeaderMap) -> ApiResult<BodyKind> {
    let content_type = headers.get(header::CONTENT_TYPE).map(|v| String::from_utf8_lossy(v.as_bytes()));
    request_body_kind(content_type.as_deref())
}

impl Output {
    pub const JSON: Output = Output { form: Form::Object, encoding: Encoding::Json };

    /// The Content-Type of a response (`watch`: of a watch stream). Kubernetes answers a Table
    /// with plain `application/json`, the serializer's media type.
    pub fn content_type(self, watch: bool) -> &'static str {
        match (self.encoding, watch) {
            (Encoding::Json, _) => "application/json",
            (Encoding::Yaml, _) => "application/yaml",
            (Encoding::Protobuf, false) => crate::protobuf::MEDIA_TYPE,
            (Encoding::Protobuf, true) => crate::protobuf::STREAM_MEDIA_TYPE,
            (Encoding::Cbor, false) => crate::cbor::MEDIA_TYPE,
            (Encoding::Cbor, true) => crate::cbor::STREAM_MEDIA_TYPE,
        }
    }

    /// Encodes a JSON document (with its `apiVersion` and `kind`) in this encoding; JSON passes
    /// through untouched.
    pub fn encode_json(self, json: Vec<u8>) -> ApiResult<Vec<u8>> {
        if self.encoding == Encoding::Json {
            return Ok(json);
        }
        let value: Value = serde_json::from_slice(&json).map_err(ApiError::internal)?;
        match self.encoding {
            Encoding::Yaml => serde_yaml::to_string(&value).map(String::into_bytes).map_err(ApiError::internal),
            Encoding::Cbor => crate::cbor::encode(&value),
            _ => crate::protobuf::encode_object(&value),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    const JSON: Output = Output::JSON;
    const YAML: Output = Output { form: Form::Object, encoding: Encoding::Yaml };
    const PROTOBUF: Output = Output { form: Form::Object, encoding: Encoding::Protobuf };
    const TABLE: Output = Output { form: Form::Table, encoding: Encoding::Json };
    const METADATA: Output = Output { form: Form::Metadata, encoding: Encoding::Json };

    fn accept(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT, HeaderValue::from_str(v).unwrap());
        h
    }

    #[test]
    fn plain_and_wildcards_mean_json() {
        assert_eq!(output(&HeaderMap::new(), false, true, true).unwrap(), JSON);
        for a in
            ["application/json", "application/json, */*", "*/*", "application/*", "application/json; charset=utf-8"]
        {
            assert_eq!(output(&accept(a), false, true, true).unwrap(), JSON, "{a}");
        }
        assert_eq!(output(&accept("application/yaml"), false, true, true).unwrap(), YAML);
    }

    #[test]
    fn kubectl_table_with_fallbacks() {
        let kubectl = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(output(&accept(kubectl), false, true, true).unwrap(), TABLE);
        // Without a Table form, kubectl's own fallback to JSON is taken; a Table alone is 406.
        assert_eq!(output(&accept(kubectl), false, false, true).unwrap(), JSON);
        assert!(matches!(output(&accept("application/json;as=Table;v=v1;g=meta.k8s.io"), false, false, true), Err(ApiError::NotAcceptable(_))));
        assert_eq!(output(&accept(kubectl), true, true, true).unwrap(), TABLE);
        assert_eq!(output(&accept("application/json;g=meta.k8s.io;v=v1beta1;as=Table"), false, true, true).unwrap(), TABLE);
        // The metadata-only form is served; a conversion to something unknown is skipped in
        // favour of the next clause.
        let partial = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
        assert_eq!(output(&accept(partial), false, true, true).unwrap(), METADATA);
        let unknown = "application/json;as=Unknown;g=meta.k8s.io;v=v1,application/json";
        assert_eq!(output(&accept(unknown), false, true, true).unwrap(), JSON);
        assert!(matches!(
            output(&accept("application/json;as=Table;g=meta.k8s.io;v=v2"), false, true, true),
            Err(ApiError::NotAcceptable(_))
        ));
    }

    #[test]
    fn protobuf_as_client_go_asks() {
        assert_eq!(output(&accept("application/vnd.kubernetes.protobuf"), false, true, true).unwrap(), PROTOBUF);
        let fallback = "application/vnd.kubernetes.protobuf, application/json";
        assert_eq!(output(&accept(fallback), false, true, true).unwrap(), PROTOBUF);
        assert_eq!(output(&accept(fallback), true, true, true).unwrap(), PROTOBUF);
        // Custom resources have no Protobuf form: JSON when the client also takes it, else 406.
        assert_eq!(output(&accept(fallback), false, true, false).unwrap(), JSON);
        assert!(matches!(output(&accept("application/vnd.kubernetes.protobuf"), false, true, false), Err(ApiError::NotAcceptable(_))));
        assert_eq!(output(&accept("application/vnd.kubernetes.protobuf;stream=watch"), true, true, true).unwrap(), PROTOBUF);
        // The metadata client's first choice; a Table has no Protobuf form, so its fallback wins.
        let metadata = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
        assert_eq!(
            output(&accept(metadata), false, true, true).unwrap(),
            Output { form: Form::Metadata, encoding: Encoding::Protobuf }
        );
        let table = "application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1,application/json";
        assert_eq!(output(&accept(table), false, true, true).unwrap(), JSON);
        let err = output(&accept("text/html"), false, true, true).unwrap_err();
        assert_eq!(err.code(), http::StatusCode::NOT_ACCEPTABLE);
        assert_eq!(
            err.to_string(),
            "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
        );
    }

    #[test]
    fn q_values_order_clauses() {
        assert_eq!(output(&accept("application/json;q=0.5, application/yaml"), false, true, true).unwrap(), YAML);
        assert_eq!(output(&accept("*/*, application/yaml"), false, true, true).unwrap(), YAML);
    }

    #[test]
    fn watch_streams_have_no_yaml() {
        assert_eq!(output(&accept("application/json;stream=watch"), true, true, true).unwrap(), JSON);
        let err = output(&accept("application/yaml"), true, true, true).unwrap_err();
        assert_eq!(
            err.to_string(),
            "only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
        );
        assert!(output(&accept("application/yaml;stream=watch"), false, true, true).is_err());
    }

    #[test]
    fn aggregated_discovery_is_recognised() {
        let kubectl = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert!(wants_aggregated_discovery(&accept(kubectl)));
        assert!(!wants_aggregated_discovery(&accept("application/json")));
        assert!(!wants_aggregated_discovery(&HeaderMap::new()));
        // Resource endpoints do not serve it; the fallback applies.
        assert_eq!(output(&accept(kubectl), false, true, true).unwrap(), JSON);
    }

    #[test]
    fn body_kinds() {
        assert_eq!(request_body_kind(None).unwrap(), BodyKind::Json);
        assert_eq!(request_body_kind(Some("application/json; charset=utf-8")).unwrap(), BodyKind::Json);
        assert_eq!(request_body_kind(Some("application/yaml")).unwrap(), BodyKind::Yaml);
        assert_eq!(request_body_kind(Some("application/vnd.kubernetes.protobuf")).unwrap(), BodyKind::Protobuf);
        assert_eq!(request_body_kind(Some("application/merge-patch+json")).unwrap(), BodyKind::Patch(PatchKind::Merge));
        assert_eq!(request_body_kind(Some("application/json-patch+json")).unwrap(), BodyKind::Patch(PatchKind::Json));
        assert_eq!(
            request_body_kind(Some("application/strategic-merge-patch+json")).unwrap(),
            BodyKind::Patch(PatchKind::Strategic)
        );
        assert_eq!(request_body_kind(Some("application/apply-patch+yaml")).unwrap(), BodyKind::Patch(PatchKind::Apply));
        let err = request_body_kind(Some("text/plain")).unwrap_err();
        assert_eq!(err.code(), http::StatusCode::UNSUPPORTED_MEDIA_TYPE);
        assert!(err.to_string().ends_with("accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"));
        for t in PATCH_TYPES {
            assert!(matches!(request_body_kind(Some(t)).unwrap(), BodyKind::Patch(_)));
        }
    }

    #[test]
    fn encodes_yaml_and_passes_json_through() {
        let json = br#"{"kind":"Pod","metadata":{"name":"p"}}"#.to_vec();
        assert_eq!(JSON.encode_json(json.clone()).unwrap(), json);
        let yaml = String::from_utf8(YAML.encode_json(json).unwrap()).unwrap();
        assert_eq!(yaml, "kind: Pod\nmetadata:\n  name: p\n");
        assert_eq!(YAML.content_type(false), "application/yaml");
        assert_eq!(TABLE.content_type(false), "application/json");
        assert_eq!(PROTOBUF.content_type(true), "application/vnd.kubernetes.protobuf;stream=watch");
    }
}
