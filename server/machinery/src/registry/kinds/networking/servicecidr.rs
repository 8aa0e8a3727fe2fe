//! ServiceCIDRs: validation, the ranges fixed at creation, and kubectl's columns.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::registry::kinds::fields::{age, col, invalid, invalid_shown, parse_cidr, AGE, CIDR, IMMUTABLE};
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
    let list = &obj["spec"]["cidrs"];
    let cidrs: Vec<&str> = list.as_array().into_iter().flatten().map(|c| c.as_str().unwrap_or_default()).collect();
    if cidrs.is_empty() {
        return vec![Cause::new("FieldValueRequired", "spec.cidrs", "Required value: at least one CIDR required")];
    }
    if cidrs.len() > 2 {
        return vec![invalid_shown("spec.cidrs", &format!("{{\"CIDRs\":{list}}}"), "may only hold up to 2 values")];
    }
    let mut out = Vec::new();
    for (i, c) in cidrs.iter().enumerate() {
        strict_cidr(c, &format!("spec.cidrs[{i}]"), &mut out);
    }
    let family = |c: &str| parse_cidr(c).map(|(ip, _)| ip.is_ipv4());
    if let [a, b] = cidrs[..] {
        if family(a).is_some() && family(a) == family(b) {
            out.push(invalid("spec.cidrs", list, "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"));
        }
    }
    out
}

/// A CIDR as new fields take one: no IPv4-mapped IPv6 address, no bits set beyond the prefix,
/// in canonical form.
fn strict_cidr(s: &str, field: &str, out: &mut Vec<Cause>) {
    let Some((ip, bits)) = parse_cidr(s) else {
        out.push(Cause::invalid(field, s, CIDR));
        return;
    };
    let network = ipnet::IpNet::new(ip, bits).map(|n| n.trunc());
    match &network {
        _ if ip.to_canonical() != ip => out.push(Cause::invalid(field, s, "must not have an IPv4-mapped IPv6 address")),
        Ok(n) if n.addr() != ip => out.push(Cause::invalid(field, s, "must not have bits set beyond the prefix length")),
        Ok(n) if n.to_string() != s => out.push(Cause::invalid(field, s, &format!("must be in canonical form (\"{n}\")"))),
        _ => {}
    }
}

/// ServiceCIDRs keep their ranges; one of a single family may gain the other family's.
pub fn update(old: &Value, new: &mut Value) -> Vec<Cause> {
    let (was, now) = (&old["spec"]["cidrs"], &new["spec"]["cidrs"]);
    let (was_list, now_list) = (was.as_array().cloned().unwrap_or_default(), now.as_array().cloned().unwrap_or_default());
    let kept = match (was_list.len(), now_list.len()) {
        (a, b) if a == b => a,
        (1, 2) => 1,
        _ => return vec![invalid("spec.cidrs", now, IMMUTABLE)],
    };
    (0..kept).filter(|&i| was_list[i] != now_list[i]).map(|i| invalid(format!("spec.cidrs[{i}]"), &now_list[i], IMMUTABLE)).collect()
}

pub const COLUMNS: &[Column] = &[col("CIDRs", "string", 0), AGE];

pub fn cells(obj: &Value) -> Vec<Value> {
    let cidrs: Vec<&str> = obj["spec"]["cidrs"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    vec![json!(cidrs.join(",")), age(obj)]
}
