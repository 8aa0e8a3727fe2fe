//! VolumeAttachments: not attached until the attacher says so, and a DELETE answered with the
//! attachment.

use serde_json::json;

use crate::registry::kinds::Strategy;

/// How the kind is created and deleted.
pub const STRATEGY: Strategy = Strategy { returns_deleted: true, initial_status: Some(|| json!({"attached": false})), ..Strategy::NONE };
