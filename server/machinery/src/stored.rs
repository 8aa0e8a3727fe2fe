//! A stored object read back from the watch cache or storage: its bytes as JSON.

use raft_store::Object;
use serde_json::Value;

use crate::error::{ApiError, ApiResult};

/// The object's JSON; bytes that do not parse are an internal error.
pub fn parse(obj: &Object) -> ApiResult<Value> {
    serde_json::from_slice(&obj.data).map_err(ApiError::internal)
}

/// `metadata.deletionTimestamp`'s name as [`mentions`] looks for it.
pub const DELETION_TIMESTAMP: &str = "\"deletionTimestamp\"";

/// Whether the stored bytes hold `quoted_name` (a member's name with its quotes, such as
/// `"deletionTimestamp"`): never false for an object that has such a member, so a reader that
/// needs one can skip parsing the objects that do not.
pub fn mentions(obj: &Object, quoted_name: &str) -> bool {
    memchr::memmem::find(&obj.data, quoted_name.as_bytes()).is_some()
}
