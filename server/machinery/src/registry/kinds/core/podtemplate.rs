//! PodTemplates: the pod spec's defaults and validation in the template, a DELETE answered with
//! the template, and kubectl's columns.

use serde_json::{json, Value};

use super::pod_spec;
use crate::error::Cause;
use crate::registry::kinds::fields::{col, containers, labels};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, deleted and printed.
pub const STRATEGY: Strategy = Strategy { default: defaults, validate, returns_deleted: true, columns: COLUMNS, cells, warnings: Some(warnings), ..Strategy::NONE };

pub fn defaults(obj: &mut Value) {
    if let Some(spec) = obj.pointer_mut("/template/spec") {
        pod_spec::defaults(spec);
    }
}

pub fn validate(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    pod_spec::validate_template(&obj["template"], "template", &mut out);
    out
}

pub const COLUMNS: &[Column] = &[col("Containers", "string", 0), col("Images", "string", 0), col("Pod Labels", "string", 0)];

pub fn cells(obj: &Value) -> Vec<Value> {
    let template = &obj["template"];
    vec![containers(&template["spec"], "name"), containers(&template["spec"], "image"), json!(labels(&template["metadata"]["labels"]))]
}

/// Kubernetes' warnings: the template's (on update, when it changed).
fn warnings(obj: &Value, old: Option<&Value>) -> Vec<String> {
    match old {
        Some(o) if o["template"] == obj["template"] => Vec::new(),
        _ => super::pod_warnings::template(&obj["template"], "template"),
    }
}
