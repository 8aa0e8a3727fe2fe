//! DeviceClasses: selectors that compile, configuration for a named driver, kubectl's columns,
//! and a DELETE answered with the class.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::error::Cause;
use crate::expr::check::check;
use crate::expr::types::{Obj, Ty};
use crate::registry::kinds::fields::{age, cel, dns_subdomain, invalid, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is validated, printed and deleted.
pub const STRATEGY: Strategy = Strategy { validate, columns: COLUMNS, cells, returns_deleted: true, ..Strategy::NONE };

pub fn validate(obj: &Value) -> Vec<Cause> {
    let spec = &obj["spec"];
    let mut out = Vec::new();
    selectors(&spec["selectors"], "spec.selectors", &mut out);
    configs(&spec["config"], "spec.config", &mut out);
    out
}

/// Each selector's CEL expression compiles with `device` declared, and gives a bool or what is
/// only known when evaluated (an attribute's value, what a library function returns).
pub(super) fn selectors(list: &Value, at: &str, out: &mut Vec<Cause>) {
    for (i, s) in list.as_array().into_iter().flatten().enumerate() {
        let (field, expression) = (format!("{at}[{i}].cel.expression"), &s["cel"]["expression"]);
        let before = out.len();
        cel(expression, &field, out);
        let Some(source) = expression.as_str().filter(|_| out.len() == before) else { continue };
        match check(source, &[("device", device())]) {
            Err(issues) => out.push(invalid(field, expression, &format!("compilation failed: {issues}"))),
            Ok(ty) if ty != Ty::Bool && ty != Ty::Dyn => {
                out.push(invalid(field, expression, &format!("must evaluate to bool or the unknown type, not {ty}")));
            }
            Ok(_) => {}
        }
    }
}

/// The type of `device` in a selector, as Kubernetes declares it: attribute values are known
/// only when evaluated, and so are capacities here (quantities).
fn device() -> Ty {
    let by_domain = |value: Ty| Ty::Map(Box::new(Ty::String), Box::new(Ty::Map(Box::new(Ty::String), Box::new(value))));
    let fields = BTreeMap::from([
        ("driver".to_string(), Ty::String),
        ("allowMultipleAllocations".to_string(), Ty::Bool),
        ("attributes".to_string(), by_domain(Ty::Dyn)),
        ("capacity".to_string(), by_domain(Ty::Dyn)),
    ]);
    Ty::Object(Obj::Fields { name: "kubernetes.DRADevice".into(), fields: Arc::new(fields) })
}

/// Each opaque configuration names its driver (a DNS subdomain) and has parameters.
pub(super) fn configs(list: &Value, at: &str, out: &mut Vec<Cause>) {
    for (i, c) in list.as_array().into_iter().flatten().enumerate() {
        let opaque = &c["opaque"];
        if !opaque.is_object() {
            continue;
        }
        let at = format!("{at}[{i}].opaque");
        if opaque["driver"].as_str().is_none_or(str::is_empty) {
            out.push(Cause::required(format!("{at}.driver")));
        } else {
            dns_subdomain(&opaque["driver"], &format!("{at}.driver"), out);
        }
        if opaque["parameters"].is_null() {
            out.push(Cause::required(format!("{at}.parameters")));
        }
    }
}

pub const COLUMNS: &[Column] = &[AGE];

pub fn cells(obj: &Value) -> Vec<Value> {
    vec![age(obj)]
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn refusals(expression: &str) -> Vec<String> {
        let mut out = Vec::new();
        selectors(&json!([{"cel": {"expression": expression}}]), "spec.selectors", &mut out);
        out.into_iter().map(|c| c.message).collect()
    }

    #[test]
    fn selectors_compile_with_device_declared() {
        for ok in [
            "device.driver == 'gpu.example.com' && device.attributes['gpu.example.com'].model == 'a100'",
            "device.capacity['gpu.example.com'].memory.compareTo(quantity('10Gi')) >= 0",
            "device.attributes['gpu.example.com'].enabled",
            "cel.bind(dra, device.attributes['dra.example.com'], dra.a && dra.b)",
            "device.allowMultipleAllocations",
        ] {
            assert_eq!(refusals(ok), Vec::<String>::new(), "{ok}");
        }
        assert_eq!(refusals("device.driver"), ["Invalid value: \"device.driver\": must evaluate to bool or the unknown type, not string"]);
        assert_eq!(
            refusals("device.name == 'x'"),
            ["Invalid value: \"device.name == 'x'\": compilation failed: ERROR: <input>:1:7: undefined field 'name'\n | device.name == 'x'\n | ......^"]
        );
    }
}
