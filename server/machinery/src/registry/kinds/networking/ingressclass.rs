//! IngressClasses: parameters are cluster-scoped unless said otherwise.

use serde_json::{json, Value};

use crate::registry::kinds::fields::set;
use crate::registry::kinds::Strategy;

/// How the kind is defaulted.
pub const STRATEGY: Strategy = Strategy { default: defaults, ..Strategy::NONE };

pub fn defaults(obj: &mut Value) {
    let parameters = &mut obj["spec"]["parameters"];
    if parameters.is_object() {
        set(parameters, "scope", json!("Cluster"));
    }
}
