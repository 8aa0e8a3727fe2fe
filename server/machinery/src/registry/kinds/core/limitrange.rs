//! LimitRanges: a container limit's default and default request come from its maximum; each
//! type once, and the bounds of each resource in order (min, default request, default, max).

use std::cmp::Ordering;
use std::collections::BTreeSet;

use serde_json::Value;

use crate::error::Cause;
use crate::expr::quantity::{parse, Quantity};
use crate::registry::kinds::fields::{duplicate, forbidden, invalid, qualified_name, required};
use crate::registry::kinds::Strategy;

/// How the kind is defaulted and validated.
pub const STRATEGY: Strategy = Strategy { default: defaults, validate, ..Strategy::NONE };

/// The limit types Kubernetes defines (any other must have a domain).
const TYPES: &[&str] = &["Pod", "Container", "PersistentVolumeClaim"];

pub fn validate(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let mut seen = Vec::new();
    for (i, item) in obj["spec"]["limits"].as_array().into_iter().flatten().enumerate() {
        let at = format!("spec.limits[{i}]");
        let kind = item["type"].as_str().unwrap_or_default();
        let before = out.len();
        qualified_name(&item["type"], &format!("{at}.type"), &mut out);
        if out.len() == before && !kind.contains('/') && !TYPES.contains(&kind) {
            out.push(invalid(format!("{at}.type"), &item["type"], "must be a standard limit type or fully qualified"));
        }
        if seen.contains(&kind) {
            out.push(duplicate(format!("{at}.type"), &item["type"]));
        }
        seen.push(kind);
        if kind == "Pod" {
            for field in ["default", "defaultRequest"] {
                if item[field].as_object().is_some_and(|m| !m.is_empty()) {
                    out.push(forbidden(format!("{at}.{field}"), "may not be specified when `type` is 'Pod'"));
                }
            }
        }
        if kind == "PersistentVolumeClaim" && item["min"]["storage"].is_null() && item["max"]["storage"].is_null() {
            out.push(required(format!("{at}.limits"), "either minimum or maximum storage value is required, but neither was provided"));
        }
        bounds(item, kind, &at, &mut out);
    }
    out
}

/// Each resource's bounds agree: min ≤ default request ≤ default ≤ max, a ratio of at least 1.
fn bounds(item: &Value, kind: &str, at: &str, out: &mut Vec<Cause>) {
    let fields: &[&str] = if kind == "Pod" { &["max", "min", "maxLimitRequestRatio"] } else { &["max", "min", "default", "defaultRequest", "maxLimitRequestRatio"] };
    let resources: BTreeSet<&String> = fields.iter().flat_map(|f| item[*f].as_object().into_iter().flat_map(|m| m.keys())).collect();
    for r in resources {
        let get = |field: &str| -> Option<(&Value, Quantity)> {
            if kind == "Pod" && field.starts_with("default") {
                return None;
            }
            let v = &item[field][r];
            Some((v, parse(v.as_str()?).ok()?))
        };
        let (min, max, default, request, ratio) = (get("min"), get("max"), get("default"), get("defaultRequest"), get("maxLimitRequestRatio"));
        let text = |q: &(&Value, Quantity)| q.0.as_str().unwrap_or_default().to_string();
        let key = |field: &str| format!("{at}.{field}[{r}]");
        // `a` above `b` is refused at `field`, showing `a`'s value or `b`'s as Kubernetes does.
        let mut above = |a: &Option<(&Value, Quantity)>, b: &Option<(&Value, Quantity)>, field: &str, show_a: bool, words: (&str, &str)| {
            if let (Some(a), Some(b)) = (a, b) {
                if a.1.compare(&b.1) == Ordering::Greater {
                    let shown = if show_a { a.0 } else { b.0 };
                    out.push(invalid(key(field), shown, &format!("{} value {} is greater than {} value {}", words.0, text(a), words.1, text(b))));
                }
            }
        };
        above(&min, &max, "min", true, ("min", "max"));
        above(&min, &request, "defaultRequest", false, ("min", "default request"));
        above(&request, &max, "defaultRequest", true, ("default request", "max"));
        above(&request, &default, "defaultRequest", true, ("default request", "default limit"));
        above(&min, &default, "default", true, ("min", "default"));
        above(&default, &max, "default", false, ("default", "max"));
        if let Some(q) = ratio.as_ref().filter(|q| q.1.compare(&Quantity::Small { value: 1, scale: 0 }) == Ordering::Less) {
            out.push(invalid(key("maxLimitRequestRatio"), q.0, &format!("ratio {} is less than 1", text(q))));
        }
    }
}

/// For each `Container` item, `default` takes what `max` names and it lacks, and
/// `defaultRequest` what `default` names and it lacks.
pub fn defaults(obj: &mut Value) {
    for item in obj.get_mut("spec").and_then(|s| s.get_mut("limits")).and_then(Value::as_array_mut).into_iter().flatten() {
        if item["type"] != "Container" {
            continue;
        }
        fill(item, "default", "max");
        fill(item, "defaultRequest", "default");
    }
}

fn fill(item: &mut Value, into: &str, from: &str) {
    let Some(source) = item[from].as_object().cloned() else { return };
    for (resource, quantity) in source {
        if item[into][&resource].is_null() {
            item[into][&resource] = quantity;
        }
    }
}
