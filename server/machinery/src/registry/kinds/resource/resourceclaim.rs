//! ResourceClaims: an empty status until allocated, and a DELETE answered with the claim.

use serde_json::json;

use crate::registry::kinds::Strategy;

/// How the kind is created and deleted.
pub const STRATEGY: Strategy = Strategy { returns_deleted: true, initial_status: Some(|| json!({})), ..Strategy::NONE };
