//! The delete verbs: one object, or every object of a collection that the selectors match.

use serde_json::Value;

use super::reply::{ListReply, Reply};
use super::write::{self, DeleteOptions, Propagation};
use crate::context::Ctx;
use crate::error::{ApiError, ApiResult, Cause};
use crate::query::Params;
use crate::request::ResourceRequest;
use crate::selector::Filter;

/// Reads `DeleteOptions` from the body (may be empty) and the query.
pub fn options(params: &Params, body: Option<&Value>) -> ApiResult<DeleteOptions> {
    let mut opts = DeleteOptions { dry_run: params.dry_run()?, ..Default::default() };
    let empty = Value::Null;
    let b = body.unwrap_or(&empty);
    let policy = b["propagationPolicy"].as_str().map(str::to_string).or_else(|| params.get("propagationPolicy").map(str::to_string));
    let orphan = match (b["orphanDependents"].as_bool(), params.get("orphanDependents")) {
        (Some(o), _) => Some(o),
        (None, Some(q)) => Some(q.parse::<bool>().map_err(|_| ApiError::bad_request(format!("invalid orphanDependents {q:?}")))?),
        (None, None) => None,
    };
    let invalid = |value: &str, detail: &str| ApiError::Invalid {
        group: "meta.k8s.io".into(),
        kind: "DeleteOptions".into(),
        name: String::new(),
        causes: vec![Cause::invalid("propagationPolicy", value, detail)],
    };
    opts.propagation = match (policy.as_deref(), orphan) {
        (Some(p), Some(_)) => return Err(invalid(p, "orphanDependents and deletionPropagation cannot be both set")),
        (Some(p), None) => Some(Propagation::parse(p).ok_or_else(|| ApiError::Invalid {
            group: "meta.k8s.io".into(),
            kind: "DeleteOptions".into(),
            name: String::new(),
            causes: vec![Cause::new(
                "FieldValueNotSupported",
                "propagationPolicy",
                format!("Unsupported value: \"{p}\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""),
            )],
        })?),
        (None, Some(true)) => Some(Propagation::Orphan),
        (None, Some(false)) => Some(Propagation::Background),
        (None, None) => None,
    };
    opts.grace_period = match (b["gracePeriodSeconds"].as_i64(), params.get("gracePeriodSeconds")) {
        (Some(g), _) => Some(g),
        (None, Some(q)) => Some(q.parse::<i64>().map_err(|_| ApiError::bad_request(format!("invalid gracePeriodSeconds {q:?}")))?),
        (None, None) => None,
    };
    if let Some(body) = body {
        let pre = &body["preconditions"];
        opts.uid = pre["uid"].as_str().map(str::to_string);
        if let Some(rv) = pre["resourceVersion"].as_str() {
            opts.resource_version = Some(rv.parse().map_err(|_| ApiError::bad_request(format!("invalid resourceVersion precondition {rv:?}")))?);
        }
        if body["dryRun"].as_array().is_some_and(|d| d.iter().any(|v| v == "All")) {
            opts.dry_run = true;
        }
    }
    Ok(opts)
}

pub async fn delete(ctx: &Ctx, req: &ResourceRequest, params: &Params, body: Option<&Value>) -> ApiResult<Reply> {
    write::delete(ctx, req, &options(params, body)?).await
}

/// Deletes every matching object, one transaction each (so each delete is its own event),
/// and answers with the list of what was deleted.
pub async fn delete_collection(ctx: &Ctx, req: &ResourceRequest, params: &Params, body: Option<&Value>) -> ApiResult<Reply> {
    let info = req.info;
    let opts = options(params, body)?;
    let filter = Filter::new(info, params.get("labelSelector"), params.get("fieldSelector"))?;
    let prefix = info.list_prefix(req.namespace.as_deref());
    let rev = ctx.store.linearizable_rev().await?;
    let page = ctx.store.cache().list(&prefix, Some(rev), None, None, &|o| {
        serde_json::from_slice::<Value>(&o.data).is_ok_and(|v| filter.matches(&v))
    })?;
    let mut deleted = Vec::new();
    for obj in page.items {
        let v = write::parse(&obj)?;
        let one = ResourceRequest {
            name: v["metadata"]["name"].as_str().map(str::to_string),
            namespace: v["metadata"]["namespace"].as_str().map(str::to_string).or_else(|| req.namespace.clone()),
            subresource: None,
            ..req.clone()
        };
        match write::delete(ctx, &one, &DeleteOptions { uid: None, resource_version: None, ..opts.clone() }).await {
            Ok(_) => deleted.push(obj.data),
            Err(ApiError::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Reply::List(ListReply { rev: ctx.store.cache().applied(), continue_token: None, remaining: None, items: deleted }))
}
