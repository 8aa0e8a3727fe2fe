//! Objects between the version a request names and the version storage keeps them in: a
//! built-in kind served in an older version too (autoscaling/v1 HorizontalPodAutoscalers,
//! stored as autoscaling/v2) by the kind's own functions; a custom resource by its definition's
//! conversion strategy, with its schema's defaults filled on the way out (a default added to the
//! definition after an object was written shows at once).

use bytes::Bytes;
use raft_store::Store;
use serde_json::Value;

use super::custom::{self, CustomVersion};
use super::ResourceInfo;
use crate::error::{ApiError, ApiResult};

/// How a built-in resource served in one version is stored in another.
pub struct StoredAs {
    /// The version stored, `autoscaling/v2`.
    pub api_version: &'static str,
    /// The served form of a stored object.
    pub from_storage: fn(Value) -> Value,
    /// The stored form of a served object.
    pub to_storage: fn(Value) -> Value,
}

impl StoredAs {
    /// The API group stored (empty for the core group), which names the storage keys.
    pub fn group(&self) -> &'static str {
        self.api_version.rsplit_once('/').map_or("", |(group, _)| group)
    }
}

/// Stored objects as a read returns them. Objects of a kind stored as served (a custom
/// resource of one version and no defaults among them) go out as stored.
pub async fn read_forms(store: &Store, info: &ResourceInfo, data: Vec<Bytes>) -> ApiResult<Vec<Bytes>> {
    let custom = custom::version(info).filter(|v| v.schema.has_defaults || !v.only_version);
    if custom.is_none() && info.stored_as.is_none() {
        return Ok(data);
    }
    let objects = data.iter().map(|d| serde_json::from_slice::<Value>(d)).collect::<Result<Vec<_>, _>>();
    let Ok(objects) = objects else { return Ok(data) };
    let objects = match (info.stored_as, custom) {
        (Some(stored), _) => objects.into_iter().map(stored.from_storage).collect(),
        // Boxed: a conversion webhook's call is a large future, which every caller (each watch
        // among them, for as long as it lives) would otherwise hold room for.
        (None, Some(v)) => Box::pin(from_storage(store, info, &v, objects)).await?,
        (None, None) => objects,
    };
    objects.iter().map(|o| serde_json::to_vec(o).map(Bytes::from).map_err(ApiError::internal)).collect()
}

/// One stored object as a read returns it.
pub async fn read_form(store: &Store, info: &ResourceInfo, data: Bytes) -> ApiResult<Bytes> {
    let mut one = read_forms(store, info, vec![data]).await?;
    one.pop().ok_or_else(|| ApiError::internal("no object converted"))
}

/// A stored object (parsed) in the version `info` serves.
pub async fn in_version(store: &Store, info: &ResourceInfo, obj: Value) -> ApiResult<Value> {
    if let Some(stored) = info.stored_as {
        return Ok((stored.from_storage)(obj));
    }
    let Some(v) = custom::version(info) else { return Ok(obj) };
    let mut one = Box::pin(from_storage(store, info, &v, vec![obj])).await?;
    one.pop().ok_or_else(|| ApiError::internal("no object converted"))
}

async fn from_storage(store: &Store, info: &ResourceInfo, v: &CustomVersion, objects: Vec<Value>) -> ApiResult<Vec<Value>> {
    let mut objects = v.conversion.convert(store, objects, &info.api_version()).await.map_err(ApiError::Internal)?;
    for obj in &mut objects {
        v.schema.default(obj);
    }
    Ok(objects)
}

/// Whether `info`'s objects are stored as they are served (no conversion on the way in).
pub fn stored_as_served(info: &ResourceInfo) -> bool {
    info.stored_as.is_none() && custom::version(info).is_none_or(|v| v.storage_version == info.version)
}

/// An object about to be stored, in the version storage keeps.
pub async fn to_storage(store: &Store, info: &ResourceInfo, obj: Value) -> ApiResult<Value> {
    if let Some(stored) = info.stored_as {
        return Ok((stored.to_storage)(obj));
    }
    let Some(v) = custom::version(info).filter(|v| v.storage_version != info.version) else { return Ok(obj) };
    let storage = format!("{}/{}", info.group, v.storage_version);
    let mut one = v.conversion.convert(store, vec![obj], &storage).await.map_err(ApiError::Internal)?;
    one.pop().ok_or_else(|| ApiError::internal("no object converted"))
}
