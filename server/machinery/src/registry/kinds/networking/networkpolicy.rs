//! NetworkPolicies: ports are TCP unless given, and the policy types follow the rules given;
//! validation of selectors, ports and peers; kubectl's columns.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::registry::kinds::fields::{age, cidr, cidr_problem, col, forbidden, invalid, items_mut, label_selector, parse_cidr, port, port_name, required, selector, set, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated and printed.
pub const STRATEGY: Strategy = Strategy { default: defaults, validate, columns: COLUMNS, cells, warnings: Some(warnings), ..Strategy::NONE };

/// Every port's protocol is TCP unless given; without `policyTypes`, a policy is `Ingress`, and
/// `Egress` too when it has egress rules.
pub fn defaults(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) else { return };
    for direction in ["ingress", "egress"] {
        for rule in items_mut(spec, direction) {
            for port in items_mut(rule, "ports") {
                set(port, "protocol", json!("TCP"));
            }
        }
    }
    if spec["policyTypes"].as_array().is_none_or(Vec::is_empty) {
        let mut types = vec![json!("Ingress")];
        if spec["egress"].as_array().is_some_and(|e| !e.is_empty()) {
            types.push(json!("Egress"));
        }
        spec["policyTypes"] = json!(types);
    }
}

/// The pod selector, each rule's ports and peers, and at most two policy types.
pub fn validate(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = &obj["spec"];
    label_selector(&spec["podSelector"], "spec.podSelector", &mut out);
    for (direction, peers) in [("ingress", "from"), ("egress", "to")] {
        for (i, rule) in spec[direction].as_array().into_iter().flatten().enumerate() {
            let at = format!("spec.{direction}[{i}]");
            for (j, p) in rule["ports"].as_array().into_iter().flatten().enumerate() {
                policy_port(p, &format!("{at}.ports[{j}]"), &mut out);
            }
            for (j, p) in rule[peers].as_array().into_iter().flatten().enumerate() {
                peer(p, &format!("{at}.{peers}[{j}]"), &mut out);
            }
        }
    }
    if spec["policyTypes"].as_array().is_some_and(|t| t.len() > 2) {
        out.push(invalid("spec.policyTypes", &spec["policyTypes"], "may not specify more than two policyTypes"));
    }
    out
}

/// A port by number (up to an end port not below it) or by name (without an end port).
fn policy_port(p: &Value, at: &str, out: &mut Vec<Cause>) {
    let (number, end) = (&p["port"], &p["endPort"]);
    let end_field = format!("{at}.endPort");
    match number {
        Value::Number(_) => {
            port(number, &format!("{at}.port"), out);
            if end.as_i64().is_some_and(|e| Some(e) < number.as_i64()) {
                out.push(invalid(end_field.as_str(), number, "must be greater than or equal to `port`"));
            }
            port(end, &end_field, out);
        }
        Value::String(_) => {
            if !end.is_null() {
                out.push(invalid(end_field, end, "may not be specified when `port` is non-numeric"));
            }
            port_name(number, &format!("{at}.port"), out);
        }
        _ if !end.is_null() => out.push(invalid(end_field, end, "may not be specified when `port` is not specified")),
        _ => {}
    }
}

/// A peer: pods, namespaces, or an IP block alone.
fn peer(p: &Value, at: &str, out: &mut Vec<Cause>) {
    let mut kinds = 0;
    for key in ["podSelector", "namespaceSelector"] {
        if !p[key].is_null() {
            kinds += 1;
            label_selector(&p[key], &format!("{at}.{key}"), out);
        }
    }
    let block = &p["ipBlock"];
    if !block.is_null() {
        kinds += 1;
        ip_block(block, &format!("{at}.ipBlock"), out);
    }
    if kinds == 0 {
        out.push(required(at, "must specify a peer"));
    } else if kinds > 1 && !block.is_null() {
        out.push(forbidden(at, "may not specify both ipBlock and another peer"));
    }
}

/// A CIDR, and exceptions that are strict subsets of it.
fn ip_block(block: &Value, at: &str, out: &mut Vec<Cause>) {
    let Some(range) = block["cidr"].as_str().filter(|c| !c.is_empty()) else {
        out.push(Cause::required(format!("{at}.cidr")));
        return;
    };
    if let Some(problem) = cidr_problem(range) {
        out.push(Cause::invalid(format!("{at}.cidr"), range, problem));
    }
    let Some(range) = network(range) else { return };
    for (i, except) in block["except"].as_array().into_iter().flatten().enumerate() {
        let field = format!("{at}.except[{i}]");
        cidr(except, &field, out);
        match except.as_str().and_then(network) {
            None => {}
            Some(e) if !range.contains(&e.network()) || range.prefix_len() >= e.prefix_len() => out.push(invalid(field, except, "must be a strict subset of `cidr`")),
            Some(_) => {}
        }
    }
}

/// The network a CIDR stands for (its address without the host bits).
fn network(s: &str) -> Option<ipnet::IpNet> {
    parse_cidr(s).and_then(|(ip, bits)| ipnet::IpNet::new(ip, bits).ok()).map(|n| n.trunc())
}

pub const COLUMNS: &[Column] = &[col("Pod-Selector", "string", 0), AGE];

pub fn cells(obj: &Value) -> Vec<Value> {
    vec![json!(selector(&obj["spec"]["podSelector"])), age(obj)]
}

/// Kubernetes' warnings: IP blocks in discouraged forms.
fn warnings(obj: &Value, _: Option<&Value>) -> Vec<String> {
    let mut out = Vec::new();
    for (rules, peers) in [("ingress", "from"), ("egress", "to")] {
        for (i, rule) in obj["spec"][rules].as_array().into_iter().flatten().enumerate() {
            for (j, peer) in rule[peers].as_array().into_iter().flatten().enumerate() {
                let block = &peer["ipBlock"];
                if block.is_null() {
                    continue;
                }
                let at = format!("spec.{rules}[{i}].{peers}[{j}].ipBlock");
                out.extend(crate::registry::kinds::warnings::cidr_warnings(&format!("{at}.cidr"), block["cidr"].as_str().unwrap_or_default()));
                for (k, except) in block["except"].as_array().into_iter().flatten().filter_map(Value::as_str).enumerate() {
                    out.extend(crate::registry::kinds::warnings::cidr_warnings(&format!("{at}.except[{k}]"), except));
                }
            }
        }
    }
    out
}
