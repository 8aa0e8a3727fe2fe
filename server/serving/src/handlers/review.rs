//! The review APIs: `SubjectAccessReview`, `LocalSubjectAccessReview`,
//! `SelfSubjectAccessReview`, `SelfSubjectRulesReview` (authorization.k8s.io/v1), answered by
//! the authorizer chain real requests go through, and `SelfSubjectReview`, `TokenReview`
//! (authentication.k8s.io/v1), answered by the authenticators. Created, never stored.

use http::StatusCode;
use serde_json::{json, Map, Value};

use super::reply::Reply;
use access::authz::{Outcome, UserRules};
use access::{Attributes, UserInfo};
use crate::context::Ctx;
use machinery::error::{ApiError, ApiResult, Cause};
use access::request::ResourceRequest;

/// Answers a review: the object as sent, with its `status` filled in.
pub async fn create(ctx: &Ctx, req: &ResourceRequest, obj: Value) -> ApiResult<Reply> {
    let info = req.info;
    let mut obj = (info.ops.decode)(info, obj).map_err(ApiError::BadRequest)?.object;
    let invalid = |causes: Vec<Cause>| ApiError::Invalid { group: info.group.into(), kind: info.kind.into(), name: String::new(), causes };
    let status = match info.kind {
        "SelfSubjectReview" => json!({"userInfo": user_info(&req.user)}),
        "TokenReview" => {
            let token = obj["spec"]["token"].as_str().unwrap_or_default();
            if token.is_empty() {
                return Err(ApiError::bad_request("token is required for TokenReview in authentication"));
            }
            let audiences: Vec<String> = obj["spec"]["audiences"].as_array().into_iter().flatten().filter_map(Value::as_str).map(String::from).collect();
            match ctx.filters.authn.token(token, &audiences).await {
                Ok(found) => json!({"authenticated": true, "user": user_info(&found.user), "audiences": found.audiences}),
                Err(error) => json!({"user": {}, "error": error}),
            }
        }
        "SelfSubjectRulesReview" => {
            let namespace = obj["spec"]["namespace"].as_str().unwrap_or_default();
            if namespace.is_empty() {
                return Err(ApiError::bad_request("no namespace on request"));
            }
            rules_status(ctx.filters.auth.chain.rules_for(&req.user, namespace))
        }
        kind => {
            let spec = &obj["spec"];
            let mut causes = attribute_causes(spec);
            let user = match kind {
                "SubjectAccessReview" => {
                    let user = subject(spec);
                    if user.name.is_empty() && user.groups.is_empty() {
                        causes.push(Cause::invalid("spec.user", "", "at least one of user or group must be specified"));
                    }
                    user
                }
                "LocalSubjectAccessReview" => {
                    if spec.get("nonResourceAttributes").is_some_and(|v| !v.is_null()) {
                        causes.push(Cause::new("FieldValueInvalid", "spec.nonResourceAttributes", "Invalid value: \"object\": disallowed on this kind of request"));
                    }
                    let ns = spec["resourceAttributes"]["namespace"].as_str().unwrap_or_default();
                    if ns != req.namespace.as_deref().unwrap_or_default() {
                        causes.push(Cause::invalid("spec.resourceAttributes.namespace", ns, "must match metadata.namespace"));
                    }
                    subject(spec)
                }
                _ => (*req.user).clone(),
            };
            if !causes.is_empty() {
                return Err(invalid(causes));
            }
            let attrs = attributes(spec, user);
            access_status(ctx.filters.auth.chain.authorize(&attrs).await)
        }
    };
    if let Some(meta) = req.namespace.as_ref().filter(|_| info.namespaced) {
        obj["metadata"]["namespace"] = json!(meta);
    }
    obj["status"] = status;
    // A SelfSubjectReview is stamped with the time it was answered, as Kubernetes' REST does.
    if info.kind == "SelfSubjectReview" {
        obj["metadata"]["creationTimestamp"] = json!(machinery::meta::now());
    }
    Ok(Reply::value(StatusCode::CREATED, &obj))
}

/// Exactly one of `resourceAttributes` and `nonResourceAttributes`.
fn attribute_causes(spec: &Value) -> Vec<Cause> {
    let given = |k: &str| spec.get(k).is_some_and(|v| !v.is_null());
    match (given("resourceAttributes"), given("nonResourceAttributes")) {
        (false, false) => vec![Cause::new(
            "FieldValueRequired",
            "spec.resourceAttributes",
            "Required value: exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )],
        (true, true) => vec![Cause::new(
            "FieldValueInvalid",
            "spec.nonResourceAttributes",
            "Invalid value: \"object\": cannot be specified in combination with resourceAttributes",
        )],
        _ => Vec::new(),
    }
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect()
}

/// The user a (Local)SubjectAccessReview asks about, exactly as given.
fn subject(spec: &Value) -> UserInfo {
    let extra = spec["extra"].as_object().into_iter().flatten().map(|(k, v)| (k.clone(), strings(v))).collect();
    UserInfo {
        name: spec["user"].as_str().unwrap_or_default().into(),
        uid: spec["uid"].as_str().unwrap_or_default().into(),
        groups: strings(&spec["groups"]),
        extra,
    }
}

/// The request a review describes.
fn attributes(spec: &Value, user: UserInfo) -> Attributes {
    let s = |v: &Value, k: &str| v[k].as_str().unwrap_or_default().to_string();
    if let Some(r) = spec.get("resourceAttributes").filter(|v| v.is_object()) {
        return Attributes {
            user,
            verb: s(r, "verb"),
            resource_request: true,
            api_group: s(r, "group"),
            api_version: s(r, "version"),
            resource: s(r, "resource"),
            subresource: s(r, "subresource"),
            namespace: s(r, "namespace"),
            name: s(r, "name"),
            label_selector: r["labelSelector"]["rawSelector"].as_str().map(str::to_string),
            field_selector: r["fieldSelector"]["rawSelector"].as_str().map(str::to_string),
            ..Default::default()
        };
    }
    let n = &spec["nonResourceAttributes"];
    Attributes { user, verb: s(n, "verb"), path: s(n, "path"), ..Default::default() }
}

fn access_status(outcome: Outcome) -> Value {
    let mut status = Map::new();
    match outcome {
        Outcome::Decided(v) => {
            status.insert("allowed".into(), json!(v.allowed()));
            if v.decision == access::authz::Decision::Deny {
                status.insert("denied".into(), json!(true));
            }
            if !v.reason.is_empty() {
                status.insert("reason".into(), json!(v.reason));
            }
        }
        Outcome::Failed(e) => {
            status.insert("allowed".into(), json!(false));
            status.insert("evaluationError".into(), json!(e));
        }
    }
    Value::Object(status)
}

fn rules_status(rules: UserRules) -> Value {
    let resource: Vec<Value> = rules
        .resource
        .iter()
        .map(|r| {
            let mut v = json!({"verbs": r.verbs, "apiGroups": r.api_groups, "resources": r.resources});
            if !r.resource_names.is_empty() {
                v["resourceNames"] = json!(r.resource_names);
            }
            v
        })
        .collect();
    let non_resource: Vec<Value> = rules
        .non_resource
        .iter()
        .map(|r| json!({"verbs": r.verbs, "nonResourceURLs": r.non_resource_urls}))
        .collect();
    let mut status = json!({"resourceRules": resource, "nonResourceRules": non_resource, "incomplete": rules.incomplete});
    if !rules.errors.is_empty() {
        status["evaluationError"] = json!(access::authz::rbac::aggregate(&rules.errors));
    }
    status
}

fn user_info(user: &UserInfo) -> Value {
    let mut v = json!({"username": user.name, "groups": user.groups});
    if !user.uid.is_empty() {
        v["uid"] = json!(user.uid);
    }
    if !user.extra.is_empty() {
        v["extra"] = json!(user.extra);
    }
    v
}
