//! EndpointSlices: ports are unnamed TCP ports unless given, and every endpoint has conditions.

use serde_json::{json, Value};

use crate::registry::kinds::fields::set;
use crate::registry::kinds::Strategy;

/// How the kind is defaulted.
pub const STRATEGY: Strategy = Strategy { default: defaults, ..Strategy::NONE };

pub fn defaults(obj: &mut Value) {
    for port in obj["ports"].as_array_mut().into_iter().flatten() {
        set(port, "name", json!(""));
        set(port, "protocol", json!("TCP"));
    }
    for endpoint in obj["endpoints"].as_array_mut().into_iter().flatten() {
        set(endpoint, "conditions", json!({}));
    }
}
