//! The read verbs: get and list, at the revision their resourceVersion semantics ask for.

use http::StatusCode;
use raft_store::StoreError;

use super::reply::{ListReply, Reply};
use super::scale;
use crate::context::Ctx;
use machinery::error::{ApiError, ApiResult, Cause};
use machinery::query::{self, Params, ReadAt};
use machinery::registry::{self, ResourceInfo};
use access::request::ResourceRequest;
use machinery::selector::Filter;

pub async fn get(ctx: &Ctx, req: &ResourceRequest, params: &Params) -> ApiResult<Reply> {
    let at = query::get_read(params)?;
    ctx.read_rev(&at).await?;
    let obj = ctx.store.cache().get(&req.key(), None)?.ok_or_else(|| req.not_found())?;
    match req.subresource.as_deref() {
        Some("scale") => Ok(Reply::value(StatusCode::OK, &scale::from_object(req.info, &super::write::parse(&obj)?)?)),
        _ => Ok(Reply::object(StatusCode::OK, registry::convert::read_form(&ctx.store, req.info, obj.data).await?)),
    }
}

const CONTINUE_EXPIRED: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

pub async fn list(ctx: &Ctx, req: &ResourceRequest, params: &Params) -> ApiResult<Reply> {
    let info = req.info;
    let prefix = info.list_prefix(req.namespace.as_deref());
    let at = query::list_read(params, &prefix)?;
    let filter = Filter::new(info, params.get("labelSelector"), params.get("fieldSelector"))?;
    let limit = params.uint("limit")?.map(|l| l as usize);
    let rev = ctx.read_rev(&at).await?;
    let (exact, after) = match &at {
        ReadAt::Exact(_) => (Some(rev), None),
        ReadAt::Continue { after, .. } => (Some(rev), Some(after.as_str())),
        _ => (None, None),
    };
    let everything = filter.is_everything();
    let keep = |o: &raft_store::Object| filter.matches_stored(&o.data);
    let page = ctx.store.cache().list(&prefix, exact, after, limit, &keep).map_err(|e| match (e, &at) {
        (StoreError::Compacted { .. }, ReadAt::Continue { after, .. }) => {
            ApiError::ContinueExpired { message: CONTINUE_EXPIRED.into(), continue_token: query::encode_continue(None, &prefix, after) }
        }
        (StoreError::Compacted { .. }, _) => ApiError::Gone("The resourceVersion for the provided list is too old.".to_string()),
        (StoreError::Corrupt(objects), _) if machinery::features::enabled(machinery::features::UNSAFE_DELETION_GATE) => store_read(info, &objects),
        (e, _) => e.into(),
    })?;
    let continue_token = page.continue_after.as_deref().map(|k| query::encode_continue(Some(page.rev), &prefix, k));
    let remaining = (continue_token.is_some() && everything).then_some(page.remaining);
    Ok(Reply::List(ListReply {
        rev: page.rev,
        continue_token,
        remaining,
        items: registry::convert::read_forms(&ctx.store, info, page.items.into_iter().map(|o| o.data).collect()).await?,
    }))
}

/// The 500 naming every object of a list that cannot be decoded, so that each can be found and
/// deleted; a last cause says when there were more than storage names.
fn store_read(info: &ResourceInfo, objects: &[raft_store::CorruptObject]) -> ApiError {
    let mut causes: Vec<Cause> = objects
        .iter()
        .take(raft_store::MAX_CORRUPT)
        .map(|c| Cause::new("UnexpectedServerResponse", c.key.clone(), machinery::error::corrupt_object(c)))
        .collect();
    if objects.len() > raft_store::MAX_CORRUPT {
        causes.push(Cause::new("TooMany", "", "too many errors, the list is truncated"));
    }
    ApiError::StoreRead { group: info.group.to_string(), resource: info.resource.to_string(), causes }
}
