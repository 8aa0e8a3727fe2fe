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
    // Kubernetes names neither the kind nor the object in a review's errors: `.GROUP "" is invalid`.
    let invalid = |causes: Vec<Cause>| ApiError::Invalid { group: info.group.into(), kind: String::new(), name: String::new(), causes };
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
            // In Kubernetes' order: the spec, the metadata, then a local review's own checks.
            let mut causes = attribute_causes(spec);
            let local = kind == "LocalSubjectAccessReview";
            let asked = (kind != "SelfSubjectAccessReview").then(|| subject(spec));
            if asked.as_ref().is_some_and(|user| user.name.is_empty() && user.groups.is_empty()) {
                causes.push(Cause::invalid("spec.user", "", "at least one of user or group must be specified"));
            }
            causes.extend(metadata_cause(&obj["metadata"], local));
            let user = match asked {
                Some(user) if local => {
                    if let Some(r) = spec.get("resourceAttributes").filter(|v| !v.is_null()) {
                        let ns = r["namespace"].as_str().unwrap_or_default();
                        if ns != req.namespace.as_deref().unwrap_or_default() {
                            causes.push(Cause::invalid("spec.resourceAttributes.namespace", ns, "must match metadata.namespace"));
                        }
                    }
                    if let Some(n) = spec.get("nonResourceAttributes").filter(|v| !v.is_null()) {
                        causes.push(Cause::new("FieldValueInvalid", "spec.nonResourceAttributes", format!("Invalid value: {}: disallowed on this kind of request", non_resource_value(n))));
                    }
                    user
                }
                Some(user) => user,
                None => (*req.user).clone(),
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
    // Kubernetes answers a rules review with a new object: its spec (the namespace) left out.
    if info.kind == "SelfSubjectRulesReview" {
        obj["spec"] = json!({});
    }
    // A SelfSubjectReview is stamped with the time it was answered, as Kubernetes' REST does.
    if info.kind == "SelfSubjectReview" {
        obj["metadata"]["creationTimestamp"] = json!(machinery::meta::now());
    }
    Ok(Reply::value(StatusCode::CREATED, &obj))
}

/// Exactly one of `resourceAttributes` and `nonResourceAttributes`.
fn attribute_causes(spec: &Value) -> Vec<Cause> {
    let given = |k: &str| spec.get(k).filter(|v| !v.is_null());
    match (given("resourceAttributes"), given("nonResourceAttributes")) {
        (None, None) => vec![Cause::new(
            "FieldValueInvalid",
            "spec.resourceAttributes",
            "Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )],
        (Some(_), Some(n)) => vec![Cause::new(
            "FieldValueInvalid",
            "spec.nonResourceAttributes",
            format!("Invalid value: {}: cannot be specified in combination with resourceAttributes", non_resource_value(n)),
        )],
        _ => Vec::new(),
    }
}

/// `nonResourceAttributes` as Kubernetes shows the value in an error: its internal form, whose
/// fields have no JSON names.
fn non_resource_value(n: &Value) -> String {
    let s = |k: &str| n[k].as_str().unwrap_or_default().to_string();
    json!({"Path": s("path"), "Verb": s("verb")}).to_string()
}

/// An access review's metadata must be empty (a local one's but for its namespace).
fn metadata_cause(meta: &Value, local: bool) -> Option<Cause> {
    let mut rest = meta.as_object().cloned().unwrap_or_default();
    rest.remove("managedFields");
    if local {
        rest.remove("namespace");
    }
    // Go's zero values count as empty, as an empty `ObjectMeta` holds them.
    rest.retain(|_, v| !v.is_null() && *v != json!("") && *v != json!({}) && *v != json!([]) && *v != json!(0));
    let message = if local { "must be empty except for namespace" } else { "must be empty" };
    (!rest.is_empty()).then(|| Cause::new("FieldValueInvalid", "metadata", format!("Invalid value: {meta}: {message}")))
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
