//! Ingresses: the status a new one starts with.

use serde_json::json;

use crate::registry::kinds::Strategy;

/// How the kind is created.
pub const STRATEGY: Strategy = Strategy { initial_status: Some(|| json!({"loadBalancer": {}})), ..Strategy::NONE };
