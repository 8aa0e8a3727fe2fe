//! ServiceCIDRs: validation, the ranges fixed at creation, and kubectl's columns.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::registry::kinds::fields::{age, col, unchanged, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    validate,
    update,
    columns: COLUMNS,
    cells,
    initial_status: Some(|| json!({})),
    ..Strategy::NONE
};

/// ServiceCIDRs: one or two CIDRs (one per IP family), each valid and canonical.
pub fn validate(obj: &Value) -> Vec<Cause> {
    let cidrs: Vec<&Value> = obj["spec"]["cidrs"].as_array().map(|a| a.iter().collect()).unwrap_or_default();
    if cidrs.is_empty() {
        return vec![Cause::new("FieldValueRequired", "spec.cidrs", "Required value: at least one CIDR required")];
    }
    if cidrs.len() > 2 {
        return vec![Cause::new("FieldValueInvalid", "spec.cidrs", "Invalid value: may only hold up to 2 values")];
    }
    let parsed: Vec<Option<ipnet::IpNet>> = cidrs.iter().map(|c| c.as_str().and_then(|s| s.parse().ok())).collect();
    if let [Some(a), Some(b)] = parsed.as_slice() {
        if matches!(a, ipnet::IpNet::V4(_)) == matches!(b, ipnet::IpNet::V4(_)) {
            return vec![Cause::new(
                "FieldValueInvalid",
                "spec.cidrs",
                "Invalid value: may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64",
            )];
        }
    }
    let mut out = Vec::new();
    for (i, (raw, net)) in cidrs.iter().zip(&parsed).enumerate() {
        let shown = raw.as_str().unwrap_or_default();
        match net {
            None => out.push(Cause::invalid(format!("spec.cidrs[{i}]"), shown, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)")),
            Some(n) if n.trunc().to_string() != shown => {
                out.push(Cause::invalid(format!("spec.cidrs[{i}]"), shown, &format!("must be in canonical form (\"{}\")", n.trunc())))
            }
            Some(_) => {}
        }
    }
    out
}

/// ServiceCIDRs keep their ranges.
pub fn update(old: &Value, new: &mut Value) -> Vec<Cause> {
    let mut out = Vec::new();
    unchanged(old, new, "/spec/cidrs", &mut out);
    out
}

pub const COLUMNS: &[Column] = &[col("CIDRs", "string", 0), AGE];

pub fn cells(obj: &Value) -> Vec<Value> {
    let cidrs: Vec<&str> = obj["spec"]["cidrs"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    vec![json!(cidrs.join(",")), age(obj)]
}
