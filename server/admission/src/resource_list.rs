//! Resource lists (`{"cpu": "500m", "memory": "1Gi"}`) as Kubernetes' quota helpers compute
//! with them: read from an object, added, subtracted, masked, compared, printed as its refusal
//! messages print them (sorted `name=value`, joined with commas) and written back as JSON.

use std::collections::BTreeMap;

use machinery::expr::amount::Amount;
use serde_json::{Map, Value};

/// Amounts by resource name, in name order.
pub type ResourceList = BTreeMap<String, Amount>;

/// The list a JSON object holds; a value that is not a quantity is left out (validation
/// refused it before anything stored it).
pub fn read(v: &Value) -> ResourceList {
    v.as_object().into_iter().flatten().filter_map(|(k, v)| Some((k.clone(), Amount::parse(v.as_str()?).ok()?))).collect()
}

/// The list as JSON, each amount in its canonical form.
pub fn write(list: &ResourceList) -> Value {
    Value::Object(list.iter().map(|(k, v)| (k.clone(), Value::String(v.to_string()))).collect::<Map<_, _>>())
}

/// quota.Add: every resource of either, summed where both have it.
pub fn add(a: &ResourceList, b: &ResourceList) -> ResourceList {
    let mut out = a.clone();
    add_into(&mut out, b);
    out
}

/// Adds `b` to `into`, resource by resource.
pub fn add_into(into: &mut ResourceList, b: &ResourceList) {
    for (k, v) in b {
        let sum = into.get(k).map_or_else(|| v.clone(), |mine| mine.plus(v));
        into.insert(k.clone(), sum);
    }
}

/// For each resource of `b`, the larger of the two amounts.
pub fn max_into(into: &mut ResourceList, b: &ResourceList) {
    for (k, v) in b {
        if into.get(k).is_none_or(|mine| v.compare(mine).is_gt()) {
            into.insert(k.clone(), v.clone());
        }
    }
}

/// quota.SubtractWithNonNegativeResult: `a - b` for `a`'s resources, never below zero.
pub fn subtract_non_negative(a: &ResourceList, b: &ResourceList) -> ResourceList {
    a.iter()
        .map(|(k, v)| {
            let diff = b.get(k).map_or_else(|| v.clone(), |other| v.minus(other));
            (k.clone(), if diff.sign() < 0 { Amount::zero() } else { diff })
        })
        .collect()
}

/// quota.Mask: only the resources named.
pub fn mask<'a>(list: &ResourceList, names: impl IntoIterator<Item = &'a String>) -> ResourceList {
    names.into_iter().filter_map(|n| Some((n.clone(), list.get(n)?.clone()))).collect()
}

/// quota.RemoveZeros.
pub fn remove_zeros(list: ResourceList) -> ResourceList {
    list.into_iter().filter(|(_, v)| !v.is_zero()).collect()
}

/// quota.LessThanOrEqual: the resources of `a` that `b` has and `a` exceeds (none: within).
pub fn exceeded(a: &ResourceList, b: &ResourceList) -> Vec<String> {
    a.iter().filter(|(k, v)| b.get(*k).is_some_and(|limit| v.compare(limit).is_gt())).map(|(k, _)| k.clone()).collect()
}

/// quota.Equals: the same resources with equal amounts.
pub fn equal(a: &ResourceList, b: &ResourceList) -> bool {
    a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| w == v))
}

/// `cpu=500m,memory=1Gi`, as the quota refusals print a list.
pub fn pretty(list: &ResourceList) -> String {
    list.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn computes_as_the_quota_helpers_do() {
        let a = read(&json!({"cpu": "500m", "memory": "1Gi", "pods": "1"}));
        let b = read(&json!({"cpu": "1", "pods": "2", "junk": "x"}));
        assert_eq!(pretty(&add(&a, &b)), "cpu=1500m,memory=1Gi,pods=3");
        assert_eq!(pretty(&subtract_non_negative(&a, &b)), "cpu=0,memory=1Gi,pods=0");
        assert_eq!(exceeded(&a, &b), Vec::<String>::new());
        assert_eq!(exceeded(&b, &a), ["cpu", "pods"]);
        assert_eq!(pretty(&mask(&a, &["cpu".to_string(), "nope".to_string()])), "cpu=500m");
        assert_eq!(pretty(&remove_zeros(subtract_non_negative(&a, &b))), "memory=1Gi");
        assert_eq!(write(&add(&a, &b)), json!({"cpu": "1500m", "memory": "1Gi", "pods": "3"}));
        assert!(equal(&a, &read(&json!({"cpu": "0.5", "memory": "1024Mi", "pods": "1"}))));
    }
}
