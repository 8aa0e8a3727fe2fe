//! The delete verbs: one object, or every object of a collection that the selectors match.

use raft_store::{Action, Cond, Op, StoreError, Txn, TxnResult};
use serde_json::Value;

use super::reply::{ListReply, Reply};
use machinery::delete_options::{DeleteOptions, Propagation};
use super::write;
use access::Attributes;
use crate::context::Ctx;
use machinery::error::{ApiError, ApiResult, Cause};
use machinery::query::Params;
use machinery::registry::convert;
use access::request::ResourceRequest;
use machinery::selector::Filter;

/// Reads `DeleteOptions` from the body (may be empty) and the query.
pub fn options(params: &Params, body: Option<&Value>) -> ApiResult<DeleteOptions> {
    let mut opts = DeleteOptions { dry_run: params.dry_run()?, ..Default::default() };
    let empty = Value::Null;
    let b = body.unwrap_or(&empty);
    // A body of another kind is no DeleteOptions: nothing is deleted.
    if let Some(kind) = b["kind"].as_str().filter(|k| !k.is_empty() && *k != "DeleteOptions") {
        let version = b["apiVersion"].as_str().unwrap_or_default();
        return Err(ApiError::bad_request(format!(
            "no kind \"{kind}\" is registered for version \"{version}\" in scheme \"k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme/register.go:27\""
        )));
    }
    let policy = b["propagationPolicy"].as_str().map(str::to_string).or_else(|| params.get("propagationPolicy").map(str::to_string));
    let orphan = match (b["orphanDependents"].as_bool(), params.get("orphanDependents")) {
        (Some(o), _) => Some(o),
        (None, Some(q)) => Some(q.parse::<bool>().map_err(|_| ApiError::bad_request(format!("invalid orphanDependents {q:?}")))?),
        (None, None) => None,
    };
    let invalid = |value: &str, detail: &str| delete_options_invalid(vec![Cause::invalid("propagationPolicy", value, detail)]);
    opts.propagation = match (policy.as_deref(), orphan) {
        (Some(p), Some(_)) => return Err(invalid(p, "orphanDependents and deletionPropagation cannot be both set")),
        (Some(p), None) => Some(Propagation::parse(p).ok_or_else(|| {
            delete_options_invalid(vec![Cause::new(
                "FieldValueNotSupported",
                "propagationPolicy",
                format!("Unsupported value: \"{p}\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""),
            )])
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
        opts.preconditions = pre.is_object();
        opts.uid = pre["uid"].as_str().map(str::to_string);
        if let Some(rv) = pre["resourceVersion"].as_str() {
            opts.resource_version = Some(rv.parse().map_err(|_| ApiError::bad_request(format!("invalid resourceVersion precondition {rv:?}")))?);
        }
        if body["dryRun"].as_array().is_some_and(|d| d.iter().any(|v| v == "All")) {
            opts.dry_run = true;
        }
    }
    // Without its gate, the option is dropped as Kubernetes drops it.
    if machinery::features::enabled(machinery::features::UNSAFE_DELETION_GATE) {
        opts.unsafe_delete = match (b[UNSAFE].as_bool(), params.get(UNSAFE)) {
            (Some(u), _) => u,
            (None, Some(q)) => q.parse::<bool>().map_err(|_| ApiError::bad_request(format!("invalid {UNSAFE} {q:?}")))?,
            (None, None) => false,
        };
    }
    if opts.unsafe_delete {
        let set = [
            (opts.dry_run, ".dryRun"),
            (policy.is_some(), ".propagationPolicy"),
            (orphan.is_some(), ".orphanDependents"),
            (opts.grace_period.is_some(), ".gracePeriodSeconds"),
            (opts.preconditions, ".preconditions"),
        ];
        let causes: Vec<Cause> = set
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, other)| unsafe_invalid(&format!("cannot be set together with {other}")))
            .collect();
        if !causes.is_empty() {
            return Err(delete_options_invalid(causes));
        }
    }
    Ok(opts)
}

/// The delete option that removes an object storage cannot decode, skipping every check.
const UNSAFE: &str = "ignoreStoreReadErrorWithClusterBreakingPotential";

fn unsafe_invalid(detail: &str) -> Cause {
    Cause::new("FieldValueInvalid", UNSAFE, format!("Invalid value: true: {detail}"))
}

fn delete_options_invalid(causes: Vec<Cause>) -> ApiError {
    ApiError::Invalid { group: "meta.k8s.io".into(), kind: "DeleteOptions".into(), name: String::new(), causes }
}

pub async fn delete(ctx: &Ctx, req: &ResourceRequest, params: &Params, body: Option<&Value>, warnings: &mut Vec<String>) -> ApiResult<Reply> {
    let opts = options(params, body)?;
    if opts.unsafe_delete {
        return unsafe_delete(ctx, req).await;
    }
    if let (None, Some(Some(warning))) = (opts.propagation, req.info.ops.strategy.orphans_by_default) {
        warnings.push(warning.to_string());
    }
    write::delete(ctx, req, &opts).await
}

/// Removes an object whose stored bytes cannot be decoded, without preconditions, finalizers or
/// admission (nothing can be known of it), for a user allowed the
/// `unsafe-delete-ignore-read-errors` verb on it. An object that can be read is refused: the
/// option is for corrupt objects only.
async fn unsafe_delete(ctx: &Ctx, req: &ResourceRequest) -> ApiResult<Reply> {
    let info = req.info;
    if req.subresource.is_some() {
        return Err(ApiError::forbidden(
            info.group,
            info.resource,
            req.name(),
            format!("{UNSAFE} delete option is not allowed on a subresource or non-resource request"),
        ));
    }
    let attrs = Attributes {
        user: (*req.user).clone(),
        verb: "unsafe-delete-ignore-read-errors".into(),
        resource_request: true,
        api_group: info.group.into(),
        api_version: info.version.into(),
        resource: info.resource.into(),
        namespace: req.namespace.clone().unwrap_or_default(),
        name: req.name().into(),
        ..Default::default()
    };
    crate::app::authorize(ctx, &attrs).await?;
    let key = req.key();
    ctx.store.linearizable_rev().await?;
    let corrupt = match ctx.store.cache().get(&key, None) {
        Err(StoreError::Corrupt(objects)) => objects.into_iter().next(),
        Err(e) => return Err(e.into()),
        Ok(_) => None,
    };
    let Some(corrupt) = corrupt else {
        return Err(ApiError::Invalid {
            group: info.group.into(),
            kind: info.resource.into(),
            name: req.name().into(),
            causes: vec![unsafe_invalid("is exclusively used to delete corrupt object(s), try again by removing this option")],
        });
    };
    tracing::warn!(key = %key, rev = corrupt.rev, user = %req.user.name, "unsafe deletion of an object that cannot be decoded");
    let op = Op { key, cond: Cond::Rev(corrupt.rev), action: Action::Delete };
    match super::commit(ctx, Txn::new(vec![op])).await? {
        TxnResult::Ok { .. } => Ok(Reply::deleted(info, req.name(), None)),
        // Replaced or deleted meanwhile: what is there now is not the corrupt object.
        _ => Err(req.not_found()),
    }
}

/// Deletes every matching object, one transaction each (so each delete is its own event),
/// and answers with the list of what was deleted.
pub async fn delete_collection(ctx: &Ctx, req: &ResourceRequest, params: &Params, body: Option<&Value>) -> ApiResult<Reply> {
    let info = req.info;
    let opts = options(params, body)?;
    if opts.unsafe_delete {
        return Err(delete_options_invalid(vec![unsafe_invalid("is not allowed with DELETECOLLECTION, try again after removing the option")]));
    }
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
    let items = convert::read_forms(&ctx.store, info, deleted).await?;
    Ok(Reply::List(ListReply { rev: ctx.store.cache().applied(), continue_token: None, remaining: None, items }))
}
