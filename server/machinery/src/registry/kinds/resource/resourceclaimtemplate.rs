//! ResourceClaimTemplates: the claim spec they stamp out defaulted and checked as a claim's,
//! their labels and annotations checked, the spec fixed at creation, kubectl's columns, and a
//! DELETE answered with the template.

use serde_json::Value;

use super::resourceclaim;
use crate::error::Cause;
use crate::registry::kinds::fields::{age, unchanged_struct, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated, printed and deleted.
pub const STRATEGY: Strategy = Strategy {
    default: |t| resourceclaim::defaults(&mut t["spec"]["spec"]),
    validate,
    update: fixed_spec,
    columns: COLUMNS,
    cells,
    returns_deleted: true,
    ..Strategy::NONE
};

/// The template is fixed at creation.
fn fixed_spec(old: &Value, new: &mut Value) -> Vec<Cause> {
    let mut out = Vec::new();
    unchanged_struct(old, new, "/spec", "resource.ResourceClaimTemplateSpec", &mut out);
    out
}

pub fn validate(obj: &Value) -> Vec<Cause> {
    let template = &obj["spec"];
    let mut out = Vec::new();
    crate::meta::validate_labels(&template["metadata"]["labels"], "spec.metadata.labels", &mut out);
    out.extend(resourceclaim::validate_spec(&template["spec"], "spec.spec"));
    out
}

pub const COLUMNS: &[Column] = &[AGE];

pub fn cells(obj: &Value) -> Vec<Value> {
    vec![age(obj)]
}
