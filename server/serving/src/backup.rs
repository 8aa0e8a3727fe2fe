//! `GET /backup`: a consistent copy of the state at the newest committed revision, streamed as
//! a backup file (`raft_store::backup`; `apiserver snapshot save` asks for it). Only members of
//! `system:masters` may take one, whatever else RBAC grants: a backup holds every Secret.

use axum::body::Body;
use futures::TryStreamExt as _;
use axum::response::{IntoResponse, Response};
use http::{header, HeaderValue, StatusCode};

use crate::context::Ctx;
use crate::status_response::StatusResponse;
use access::user::UserInfo;
use machinery::error::ApiError;

/// The path backups are taken from.
pub const PATH: &str = "/backup";

pub async fn serve(ctx: &Ctx, user: &UserInfo) -> Response {
    if !user.groups.iter().any(|g| g == "system:masters") {
        return ApiError::forbidden("", "", "", format!("User \"{}\" cannot get path \"{PATH}\": only members of system:masters may take a backup", user.name)).into_response();
    }
    let (header, pieces) = match ctx.store.backup().await {
        Ok(backup) => backup,
        Err(e) => return ApiError::from(e).into_response(),
    };
    tracing::info!(user = %user.name, revision = header.revision, objects = header.objects, "backup taken");
    let pieces = futures::stream::iter(pieces).map_ok(bytes::Bytes::from);
    let mut resp = (StatusCode::OK, Body::from_stream(pieces)).into_response();
    resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/octet-stream"));
    resp
}
