//! The error every layer answers with: each failure becomes a `metav1.Status` body with the
//! Kubernetes reason and HTTP code (the API server turns it into a response).

use http::StatusCode;
use serde_json::{json, Value};

/// One field-level problem inside an `Invalid` (422) or strict-validation (400) error.
#[derive(Debug, Clone, PartialEq)]
pub struct Cause {
    /// Kubernetes cause type, e.g. `FieldValueRequired`, `FieldValueInvalid`.
    pub reason: &'static str,
    pub message: String,
    pub field: String,
}

impl Cause {
    pub fn new(reason: &'static str, field: impl Into<String>, message: impl Into<String>) -> Self {
        Cause { reason, field: field.into(), message: message.into() }
    }
    pub fn required(field: impl Into<String>) -> Self {
        Cause::new("FieldValueRequired", field, "Required value")
    }
    pub fn invalid(field: impl Into<String>, value: impl std::fmt::Display, detail: &str) -> Self {
        let field = field.into();
        Cause::new("FieldValueInvalid", field, format!("Invalid value: \"{value}\": {detail}"))
    }
}

/// What an admission policy refused: the object, and the policy's own words.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub group: String,
    pub resource: String,
    pub name: String,
    pub cause: String,
}

/// What a request failed on; the `group`/`resource` pair is the one from the request path.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    #[error("{message}")]
    StrictDecoding { message: String },
    #[error("Unauthorized")]
    Unauthorized,
    /// 403; `resource` and `name` (either may be empty) go into the details.
    #[error("{message}")]
    Forbidden { group: String, resource: String, name: String, message: String },
    /// 403 of a create in a namespace being deleted, with Kubernetes' `NamespaceTerminating` cause.
    #[error("{} \"{name}\" is forbidden: unable to create new content in namespace {namespace} because it is being terminated", qualified(.group, .resource))]
    NamespaceTerminating { group: String, resource: String, name: String, namespace: String },
    /// An admission policy refused the write, with the reason it gives (`Invalid` (422),
    /// `Forbidden`, `Unauthorized`, `RequestEntityTooLarge`).
    #[error("{message}")]
    Denied { reason: &'static str, message: String, refusal: Box<Refusal> },
    /// A Status another party decided (an admission webhook's refusal), passed on as it gave it.
    #[error("{message}")]
    Passed { code: u16, reason: String, message: String },
    #[error("{resource} \"{name}\" not found")]
    NotFound { group: String, resource: String, name: String },
    #[error("the server could not find the requested resource")]
    NoRoute,
    #[error("{resource} \"{name}\" already exists")]
    AlreadyExists { group: String, resource: String, name: String },
    #[error("{message}")]
    Conflict { group: String, resource: String, name: String, message: String },
    /// 409 of a server-side apply: one `FieldManagerConflict` cause per field.
    #[error("{message}")]
    ApplyConflict { message: String, causes: Vec<Cause> },
    #[error("{0}")]
    Gone(String),
    /// 410 for a continue token whose revision is compacted: the Status carries a token that
    /// continues from the same key at the latest revision (an inconsistent list).
    #[error("{message}")]
    ContinueExpired { message: String, continue_token: String },
    #[error("the server does not allow this method on the requested resource")]
    MethodNotAllowed,
    #[error("{0}")]
    NotAcceptable(String),
    #[error("{0}")]
    UnsupportedMediaType(String),
    #[error("{0}")]
    TooLarge(String),
    #[error("{kind} \"{name}\" is invalid")]
    Invalid { group: String, kind: String, name: String, causes: Vec<Cause> },
    #[error("{0}")]
    Unprocessable(String),
    /// 429: the request's priority level has no room for it now; retry after a second.
    #[error("{0}")]
    TooManyRequests(String),
    /// 429 of a limit an admission plugin keeps (EventRateLimit), as Kubernetes'
    /// `NewTooManyRequestsError` words it: no retry delay.
    #[error("Too many requests: {0}")]
    LimitReached(String),
    #[error("Timeout: Too large resource version: {requested}, current: {current}")]
    TooLargeResourceVersion { requested: u64, current: u64 },
    #[error("{0}")]
    Timeout(String),
    #[error("{0}")]
    Unavailable(String),
    #[error("{0}")]
    Internal(String),
    /// 500 of a list that met objects storage cannot decode: one cause per object (with
    /// `AllowUnsafeMalformedObjectDeletion`, so that a client can find and delete them).
    #[error("failed to read one or more {} from the storage", qualified(.group, .resource))]
    StoreRead { group: String, resource: String, causes: Vec<Cause> },
}

/// `resource.group`, or `resource` in the core group.
fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() { resource.to_string() } else { format!("{resource}.{group}") }
}

/// A stored object that cannot be decoded, in the words of Kubernetes' storage error.
pub fn corrupt_object(c: &raft_store::CorruptObject) -> String {
    format!(
        "StorageError: corrupt object, Code: 6, Key: {}, ResourceVersion: 0, AdditionalErrorMsg: object not decodable revision={}: {}",
        c.key, c.rev, c.reason
    )
}

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    pub fn bad_request(msg: impl Into<String>) -> Self {
        ApiError::BadRequest(msg.into())
    }
    /// A 403 as Kubernetes' `NewForbidden` words it: `resource.group "name" is forbidden: ...`,
    /// or `forbidden: ...` without a resource.
    pub fn forbidden(group: &str, resource: &str, name: &str, detail: impl std::fmt::Display) -> Self {
        let qualified = qualified(group, resource);
        let message = match (resource.is_empty(), name.is_empty()) {
            (true, _) => format!("forbidden: {detail}"),
            (false, true) => format!("{qualified} is forbidden: {detail}"),
            (false, false) => format!("{qualified} \"{name}\" is forbidden: {detail}"),
        };
        ApiError::Forbidden { group: group.into(), resource: resource.into(), name: name.into(), message }
    }
    pub fn internal(msg: impl std::fmt::Display) -> Self {
        ApiError::Internal(msg.to_string())
    }
    /// The 500 without a reason kube-apiserver answers an error that is not a Status with (an
    /// admission plugin's plain error): the message alone.
    pub fn plain(message: impl Into<String>) -> Self {
        ApiError::Passed { code: 500, reason: String::new(), message: message.into() }
    }

    pub fn code(&self) -> StatusCode {
        use ApiError::*;
        match self {
            BadRequest(_) | StrictDecoding { .. } => StatusCode::BAD_REQUEST,
            Unauthorized => StatusCode::UNAUTHORIZED,
            Forbidden { .. } | NamespaceTerminating { .. } => StatusCode::FORBIDDEN,
            Passed { code, .. } => StatusCode::from_u16(*code).unwrap_or(StatusCode::BAD_REQUEST),
            Denied { reason, .. } => match *reason {
                "Forbidden" => StatusCode::FORBIDDEN,
                "Unauthorized" => StatusCode::UNAUTHORIZED,
                "RequestEntityTooLarge" => StatusCode::PAYLOAD_TOO_LARGE,
                _ => StatusCode::UNPROCESSABLE_ENTITY,
            },
            NotFound { .. } | NoRoute => StatusCode::NOT_FOUND,
            AlreadyExists { .. } | Conflict { .. } | ApplyConflict { .. } => StatusCode::CONFLICT,
            Gone(_) | ContinueExpired { .. } => StatusCode::GONE,
            MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            NotAcceptable(_) => StatusCode::NOT_ACCEPTABLE,
            UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Invalid { .. } | Unprocessable(_) => StatusCode::UNPROCESSABLE_ENTITY,
            TooManyRequests(_) | LimitReached(_) => StatusCode::TOO_MANY_REQUESTS,
            TooLargeResourceVersion { .. } | Timeout(_) => StatusCode::GATEWAY_TIMEOUT,
            Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Internal(_) | StoreRead { .. } => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn reason(&self) -> &str {
        use ApiError::*;
        match self {
            Passed { reason, .. } => reason,
            BadRequest(_) | StrictDecoding { .. } => "BadRequest",
            Unauthorized => "Unauthorized",
            Forbidden { .. } | NamespaceTerminating { .. } => "Forbidden",
            Denied { reason, .. } => reason,
            NotFound { .. } | NoRoute => "NotFound",
            AlreadyExists { .. } => "AlreadyExists",
            Conflict { .. } | ApplyConflict { .. } => "Conflict",
            Gone(_) | ContinueExpired { .. } => "Expired",
            MethodNotAllowed => "MethodNotAllowed",
            NotAcceptable(_) => "NotAcceptable",
            UnsupportedMediaType(_) => "UnsupportedMediaType",
            TooLarge(_) => "RequestEntityTooLarge",
            Invalid { .. } | Unprocessable(_) => "Invalid",
            TooManyRequests(_) | LimitReached(_) => "TooManyRequests",
            TooLargeResourceVersion { .. } | Timeout(_) => "Timeout",
            Unavailable(_) => "ServiceUnavailable",
            Internal(_) => "InternalError",
            StoreRead { .. } => "StorageReadError",
        }
    }

    /// The error a `Status` body with HTTP `code` stands for, as a client reads it: the reasons
    /// a caller acts on (not found, already exists, conflict) as their own variants, any other
    /// passed on as it was given.
    pub fn from_status(code: u16, status: &Value) -> ApiError {
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        let details = &status["details"];
        let (group, resource, name) = (text(&details["group"]), text(&details["kind"]), text(&details["name"]));
        let message = text(&status["message"]);
        match (code, status["reason"].as_str().unwrap_or_default()) {
            (404, "NotFound") => ApiError::NotFound { group, resource, name },
            (409, "AlreadyExists") => ApiError::AlreadyExists { group, resource, name },
            (409, "Conflict") => ApiError::Conflict { group, resource, name, message },
            (_, reason) => ApiError::Passed { code, reason: reason.to_string(), message },
        }
    }

    /// Seconds a client should wait before retrying, when the error carries one.
    pub fn retry_after(&self) -> Option<u64> {
        match self {
            ApiError::TooLargeResourceVersion { .. } | ApiError::TooManyRequests(_) => Some(1),
            ApiError::Unavailable(_) => Some(1),
            _ => None,
        }
    }

    /// The `metav1.Status` body for this error.
    pub fn status(&self) -> Value {
        use ApiError::*;
        let mut details = serde_json::Map::new();
        match self {
            NotFound { group, resource, name }
            | AlreadyExists { group, resource, name }
            | Conflict { group, resource, name, .. } => {
                details.insert("name".into(), json!(name));
                if !group.is_empty() {
                    details.insert("group".into(), json!(group));
                }
                details.insert("kind".into(), json!(resource));
            }
            Invalid { group, kind, name, causes } => {
                // Empty ones left out, as Kubernetes' `StatusDetails` leaves them (a review's
                // error names neither).
                for (k, v) in [("name", name), ("group", group), ("kind", kind)] {
                    if !v.is_empty() {
                        details.insert(k.into(), json!(v));
                    }
                }
                let causes: Vec<Value> = causes
                    .iter()
                    .map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field}))
                    .collect();
                details.insert("causes".into(), Value::Array(causes));
            }
            Forbidden { group, resource, name, .. } => {
                for (k, v) in [("name", name), ("group", group), ("kind", resource)] {
                    if !v.is_empty() {
                        details.insert(k.into(), json!(v));
                    }
                }
            }
            NamespaceTerminating { group, resource, name, namespace } => {
                for (k, v) in [("name", name), ("group", group), ("kind", resource)] {
                    if !v.is_empty() {
                        details.insert(k.into(), json!(v));
                    }
                }
                let cause = json!({"reason": "NamespaceTerminating", "message": format!("namespace {namespace} is being terminated"), "field": "metadata.namespace"});
                details.insert("causes".into(), json!([cause]));
            }
            Denied { refusal, .. } => {
                let Refusal { group, resource, name, cause } = refusal.as_ref();
                for (k, v) in [("name", name), ("group", group), ("kind", resource)] {
                    if !v.is_empty() {
                        details.insert(k.into(), json!(v));
                    }
                }
                details.insert("causes".into(), json!([{"message": cause}]));
            }
            ApplyConflict { causes, .. } => {
                let causes: Vec<Value> = causes.iter().map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field})).collect();
                details.insert("causes".into(), Value::Array(causes));
            }
            TooLargeResourceVersion { .. } => {
                details.insert(
                    "causes".into(),
                    json!([{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}]),
                );
                details.insert("retryAfterSeconds".into(), json!(1));
            }
            TooManyRequests(_) => {
                details.insert("retryAfterSeconds".into(), json!(1));
            }
            StoreRead { group, resource, causes } => {
                if !group.is_empty() {
                    details.insert("group".into(), json!(group));
                }
                details.insert("kind".into(), json!(resource));
                details.insert("name".into(), json!("list"));
                let causes: Vec<Value> = causes
                    .iter()
                    .map(|c| {
                        let mut cause = json!({"reason": c.reason, "message": c.message});
                        if !c.field.is_empty() {
                            cause["field"] = json!(c.field);
                        }
                        cause
                    })
                    .collect();
                details.insert("causes".into(), Value::Array(causes));
            }
            _ => {}
        }
        let message = match self {
            Invalid { group, kind, name, causes } => {
                // The kind qualified by its group, as Kubernetes names it: `Deployment.apps`.
                let kind = if group.is_empty() { kind.clone() } else { format!("{kind}.{group}") };
                // Each message once, as Go's aggregate error words a list that repeats itself.
                let mut parts: Vec<String> = Vec::new();
                for c in causes {
                    let part = if c.field.is_empty() { c.message.clone() } else { format!("{}: {}", c.field, c.message) };
                    if !parts.contains(&part) {
                        parts.push(part);
                    }
                }
                match parts.len() {
                    0 => format!("{kind} \"{name}\" is invalid"),
                    1 => format!("{kind} \"{name}\" is invalid: {}", parts[0]),
                    _ => format!("{kind} \"{name}\" is invalid: [{}]", parts.join(", ")),
                }
            }
            other => other.to_string(),
        };
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": self.reason(),
            "code": self.code().as_u16(),
        });
        if let ContinueExpired { continue_token, .. } = self {
            status["metadata"] = json!({"continue": continue_token});
        }
        // An error that is no Status of Kubernetes' (reason `Unknown`) has no reason.
        if self.reason().is_empty() {
            status.as_object_mut().map(|s| s.remove("reason"));
        }
        // Kubernetes' Forbidden errors always carry details, empty or not.
        if !details.is_empty() || matches!(self, Forbidden { .. }) {
            status["details"] = Value::Object(details);
        }
        status
    }
}

impl From<raft_store::StoreError> for ApiError {
    fn from(e: raft_store::StoreError) -> Self {
        use raft_store::StoreError as S;
        match e {
            S::Compacted { requested, compacted } => ApiError::Gone(format!(
                "The resourceVersion for the provided list is too old (requested {requested}, oldest available {})",
                compacted + 1
            )),
            S::TooLargeResourceVersion { requested, current } => {
                ApiError::TooLargeResourceVersion { requested, current }
            }
            S::NotLeader(m) | S::Unavailable(m) | S::NoSpace(m) => ApiError::Unavailable(m),
            S::Internal(m) => ApiError::Internal(m),
            damaged @ S::Damaged { .. } => ApiError::Internal(damaged.to_string()),
            quota @ S::QuotaExceeded => ApiError::Internal(format!("Internal error occurred: {quota}")),
            S::Corrupt(objects) => ApiError::Internal(format!(
                "Internal error occurred: {}",
                objects.first().map(corrupt_object).unwrap_or_default()
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_status_lists_causes() {
        let e = ApiError::Invalid {
            group: "".into(),
            kind: "Pod".into(),
            name: "p".into(),
            causes: vec![Cause::required("spec.containers")],
        };
        let s = e.status();
        assert_eq!(s["code"], 422);
        assert_eq!(s["reason"], "Invalid");
        assert_eq!(s["details"]["causes"][0]["field"], "spec.containers");
        assert_eq!(s["message"], "Pod \"p\" is invalid: spec.containers: Required value");
        let e = ApiError::Invalid { group: "apps".into(), kind: "Deployment".into(), name: "d".into(), causes: vec![] };
        assert_eq!(e.status()["message"], "Deployment.apps \"d\" is invalid");
        assert_eq!(e.status()["details"]["kind"], "Deployment");
    }

    #[test]
    fn a_reached_limit_has_no_retry_delay() {
        let e = ApiError::LimitReached("limit reached on type Server for key ".into());
        let s = e.status();
        assert_eq!((s["code"].as_u64(), s["reason"].as_str()), (Some(429), Some("TooManyRequests")));
        assert_eq!(s["message"], "Too many requests: limit reached on type Server for key ");
        assert!(s.get("details").is_none() && e.retry_after().is_none(), "{s}");
    }

    #[test]
    fn forbidden_names_the_resource() {
        let s = ApiError::forbidden("apps", "deployments", "d", "User \"u\" cannot get").status();
        assert_eq!(s["message"], "deployments.apps \"d\" is forbidden: User \"u\" cannot get");
        assert_eq!(s["details"], json!({"name": "d", "group": "apps", "kind": "deployments"}));
        let s = ApiError::forbidden("", "", "", "User \"u\" cannot get path \"/metrics\"").status();
        assert_eq!(s["message"], "forbidden: User \"u\" cannot get path \"/metrics\"");
        assert_eq!(s["details"], json!({}));
        assert_eq!(s["code"], 403);
    }

    #[test]
    fn a_status_reads_back_as_the_error_it_stands_for() {
        for e in [
            ApiError::NotFound { group: "apps".into(), resource: "deployments".into(), name: "d".into() },
            ApiError::AlreadyExists { group: "".into(), resource: "configmaps".into(), name: "c".into() },
            ApiError::Conflict { group: "".into(), resource: "configmaps".into(), name: "c".into(), message: "the object has been modified".into() },
        ] {
            let back = ApiError::from_status(e.code().as_u16(), &e.status());
            assert_eq!(back.status(), e.status(), "{e:?} came back as {back:?}");
        }
        let forbidden = ApiError::forbidden("", "pods", "p", "User \"u\" cannot get");
        match ApiError::from_status(403, &forbidden.status()) {
            ApiError::Passed { code: 403, reason, message } => {
                assert_eq!((reason.as_str(), message.as_str()), ("Forbidden", "pods \"p\" is forbidden: User \"u\" cannot get"))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn too_large_rv_is_504_with_retry() {
        let e = ApiError::TooLargeResourceVersion { requested: 10, current: 5 };
        assert_eq!(e.code(), StatusCode::GATEWAY_TIMEOUT);
        assert_eq!(e.retry_after(), Some(1));
        assert!(e.status()["message"].as_str().unwrap().starts_with("Timeout: Too large resource version"));
    }
}
