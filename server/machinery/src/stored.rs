//! A stored object read back from the watch cache or storage: its bytes as JSON.

use raft_store::Object;
use serde_json::Value;

use crate::error::{ApiError, ApiResult};

/// The object's JSON; bytes that do not parse are an internal error.
pub fn parse(obj: &Object) -> ApiResult<Value> {
    serde_json::from_slice(&obj.data).map_err(ApiError::internal)
}
