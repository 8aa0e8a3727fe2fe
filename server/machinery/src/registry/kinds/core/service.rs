//! Services: defaults (type, session affinity, cluster IPs, IP families, traffic policies,
//! target ports), validation, the cluster IPs and node ports an update keeps, and kubectl's
//! columns.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::registry::kinds::fields::{age, col, dns_label, duplicate, int, invalid, ip, items_mut, port, port_name, qualified_name, set, unsupported, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    default: defaults,
    validate,
    update,
    columns: COLUMNS,
    cells,
    returns_deleted: true,
    initial_status: Some(|| json!({"loadBalancer": {}})),
    warnings: Some(warnings),
    ..Strategy::NONE
};

pub fn defaults(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) else { return };
    set(spec, "type", json!("ClusterIP"));
    set(spec, "sessionAffinity", json!("None"));
    match spec["sessionAffinity"].as_str() {
        Some("None") => {
            spec.as_object_mut().map(|s| s.remove("sessionAffinityConfig"));
        }
        Some("ClientIP") if spec["sessionAffinityConfig"]["clientIP"]["timeoutSeconds"].is_null() => {
            spec["sessionAffinityConfig"] = json!({"clientIP": {"timeoutSeconds": 10800}});
        }
        _ => {}
    }
    // A cluster IP asked for alone is the first of the cluster IPs.
    if let Some(ip) = spec["clusterIP"].as_str().filter(|ip| !ip.is_empty()).map(str::to_string) {
        if spec["clusterIPs"].as_array().is_none_or(Vec::is_empty) {
            spec["clusterIPs"] = json!([ip]);
        }
    }
    if spec["type"] != "ExternalName" {
        set(spec, "ipFamilyPolicy", json!("SingleStack"));
        set(spec, "ipFamilies", json!(["IPv4"]));
        set(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    if external(spec) {
        set(spec, "externalTrafficPolicy", json!("Cluster"));
    }
    if spec["type"] == "LoadBalancer" {
        set(spec, "allocateLoadBalancerNodePorts", json!(true));
    }
    if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
        for p in ports {
            set(p, "protocol", json!("TCP"));
            // A zero node port is an unset one.
            if p["nodePort"] == 0 {
                p.as_object_mut().map(|o| o.remove("nodePort"));
            }
            // An unset, zero or empty target port (Protobuf clients send a zero) is the port.
            if matches!(&p["targetPort"], Value::Null) || p["targetPort"] == 0 || p["targetPort"] == "" {
                p["targetPort"] = p["port"].clone();
            }
        }
    }
}

/// Ports (named, each name once, when more than one), the selector's labels, cluster IPs that
/// agree with `clusterIP`, and a supported type.
pub fn validate(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = &obj["spec"];
    let ty = spec["type"].as_str().unwrap_or("ClusterIP");
    let headless = spec["clusterIP"].as_str() == Some("None");
    let ports = spec["ports"].as_array().map_or(&[][..], Vec::as_slice);
    if ty != "ExternalName" && !headless && ports.is_empty() {
        out.push(Cause::required("spec.ports"));
    }
    let mut names = Vec::new();
    for (i, p) in ports.iter().enumerate() {
        service_port(p, &format!("spec.ports[{i}]"), ports.len() > 1, &mut names, &mut out);
    }
    crate::meta::validate_labels(&spec["selector"], "spec.selector", &mut out);
    if ty != "ExternalName" {
        cluster_ips(spec, &mut out);
    }
    if !matches!(ty, "ClusterIP" | "NodePort" | "LoadBalancer" | "ExternalName") {
        out.push(unsupported("spec.type".into(), ty, &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]));
    }
    out
}

/// A port: its name (a DNS label, once in the Service), number and target.
fn service_port<'a>(p: &'a Value, at: &str, name_required: bool, names: &mut Vec<&'a str>, out: &mut Vec<Cause>) {
    match p["name"].as_str().filter(|n| !n.is_empty()) {
        None if name_required => out.push(Cause::required(format!("{at}.name"))),
        None => {}
        Some(name) => {
            dns_label(&p["name"], &format!("{at}.name"), out);
            if names.contains(&name) {
                out.push(duplicate(format!("{at}.name"), &p["name"]));
            } else {
                names.push(name);
            }
        }
    }
    port(&json!(p["port"].as_i64().unwrap_or(0)), &format!("{at}.port"), out);
    match &p["targetPort"] {
        Value::String(_) => port_name(&p["targetPort"], &format!("{at}.targetPort"), out),
        target => port(target, &format!("{at}.targetPort"), out),
    }
    qualified_name(&p["appProtocol"], &format!("{at}.appProtocol"), out);
}

/// `clusterIPs` starts with `clusterIP` (and is empty without it); each is an IP address but
/// a first `None`, and there are at most two.
fn cluster_ips(spec: &Value, out: &mut Vec<Cause>) {
    let list = &spec["clusterIPs"];
    let ips = list.as_array().map_or(&[][..], Vec::as_slice);
    match spec["clusterIP"].as_str().filter(|ip| !ip.is_empty()) {
        Some(_) if ips.is_empty() => out.push(Cause::required("spec.clusterIPs")),
        Some(first) if ips[0] != first => out.push(invalid("spec.clusterIPs", list, "first value must match `clusterIP`")),
        None if !ips.is_empty() => out.push(invalid("spec.clusterIPs", list, "must be empty when `clusterIP` is not specified")),
        _ => {}
    }
    for (i, ip_) in ips.iter().enumerate() {
        if i == 0 && ip_ == "None" {
            if ips.len() > 1 {
                out.push(invalid("spec.clusterIPs", list, "'None' must be the first and only value"));
            }
            continue;
        }
        ip(ip_, &format!("spec.clusterIPs[{i}]"), out);
    }
    if ips.len() > 2 {
        out.push(invalid("spec.clusterIPs", list, "may only hold up to 2 values"));
    }
}

/// Whether a Service's type takes traffic from outside the cluster (node ports, load balancers).
fn external(spec: &Value) -> bool {
    matches!(spec["type"].as_str(), Some("NodePort" | "LoadBalancer"))
}

/// A service keeps its cluster IPs (an update that leaves them out keeps the allocated ones,
/// and one that changes them is refused) and its node ports (a port that leaves its node port
/// out keeps the one it had). A Service whose type no longer uses them loses its node ports,
/// external traffic policy and load balancer settings, unless the update changed them itself.
pub fn update(old: &Value, new: &mut Value) -> Vec<Cause> {
    let mut out = Vec::new();
    if !new["spec"].is_object() {
        return out;
    }
    type_dependent(old, new);
    if new["spec"]["type"] == "ExternalName" {
        return out;
    }
    for field in ["clusterIP", "clusterIPs"] {
        let now = &new["spec"][field];
        let unset = now.is_null() || now == "" || now.as_array().is_some_and(Vec::is_empty);
        if unset && !old["spec"][field].is_null() {
            new["spec"][field] = old["spec"][field].clone();
        }
    }
    if old["spec"]["type"] != "ExternalName" && !(headless(old) && headless(new)) {
        kept_cluster_ips(&old["spec"]["clusterIPs"], &new["spec"]["clusterIPs"], &mut out);
    }
    out
}

fn headless(obj: &Value) -> bool {
    obj["spec"]["clusterIP"] == "None"
}

/// The cluster IPs a Service had stay; a second one may come or go.
fn kept_cluster_ips(was: &Value, now: &Value, out: &mut Vec<Cause>) {
    let (old_ips, new_ips) = (was.as_array().map_or(&[][..], Vec::as_slice), now.as_array().map_or(&[][..], Vec::as_slice));
    const CHANGED: &str = "may not change once set";
    if old_ips.len() == new_ips.len() {
        out.extend((0..old_ips.len()).filter(|&i| old_ips[i] != new_ips[i]).map(|i| invalid(format!("spec.clusterIPs[{i}]"), now, CHANGED)));
    } else if !old_ips.is_empty() && new_ips.is_empty() {
        out.push(invalid("spec.clusterIPs[0]", now, "primary clusterIP can not be unset"));
    } else if !old_ips.is_empty() && old_ips[0] != new_ips[0] {
        out.push(invalid("spec.clusterIPs[0]", now, CHANGED));
    }
}

/// Node ports (and the health check's) kept from `old`, or dropped with the type that used them.
fn type_dependent(old: &Value, new: &mut Value) {
    let (was, spec) = (&old["spec"], &mut new["spec"]);
    let same_port = |a: &Value, b: &Value| a["port"] == b["port"] && a["protocol"] == b["protocol"];
    let old_ports = was["ports"].as_array().cloned().unwrap_or_default();
    let uses_node_ports = external(spec);
    for p in items_mut(spec, "ports") {
        let before = old_ports.iter().find(|o| same_port(o, p)).map(|o| o["nodePort"].clone()).unwrap_or(Value::Null);
        if uses_node_ports && p["nodePort"].is_null() && !before.is_null() {
            p["nodePort"] = before;
        } else if !uses_node_ports && external(was) && p["nodePort"] == before {
            p.as_object_mut().map(|o| o.remove("nodePort"));
        }
    }
    let health_check = |s: &Value| s["type"] == "LoadBalancer" && s["externalTrafficPolicy"] == "Local";
    if health_check(spec) && health_check(was) && spec["healthCheckNodePort"].is_null() && !was["healthCheckNodePort"].is_null() {
        spec["healthCheckNodePort"] = was["healthCheckNodePort"].clone();
    }
    // No longer a local load balancer, the health check port left as it was goes.
    if health_check(was) && !health_check(spec) && spec["healthCheckNodePort"] == was["healthCheckNodePort"] {
        spec.as_object_mut().map(|o| o.remove("healthCheckNodePort"));
    }
    if !uses_node_ports && external(was) {
        for field in ["externalTrafficPolicy", "healthCheckNodePort"] {
            if spec[field] == was[field] {
                spec.as_object_mut().map(|o| o.remove(field));
            }
        }
    }
    if spec["type"] != "LoadBalancer" && was["type"] == "LoadBalancer" {
        for field in ["allocateLoadBalancerNodePorts", "loadBalancerClass"] {
            if spec[field] == was[field] {
                spec.as_object_mut().map(|o| o.remove(field));
            }
        }
    }
}

pub const COLUMNS: &[Column] = &[
    col("Type", "string", 0),
    col("Cluster-IP", "string", 0),
    col("External-IP", "string", 0),
    col("Port(s)", "string", 0),
    AGE,
    col("Selector", "string", 1),
];

pub fn cells(obj: &Value) -> Vec<Value> {
    let spec = &obj["spec"];
    let ports: Vec<String> = spec["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| match p["nodePort"].as_i64() {
            Some(n) => format!("{}:{n}/{}", int(&p["port"]), p["protocol"].as_str().unwrap_or("TCP")),
            None => format!("{}/{}", int(&p["port"]), p["protocol"].as_str().unwrap_or("TCP")),
        })
        .collect();
    let selector = spec["selector"]
        .as_object()
        .map(|m| m.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default())).collect::<Vec<_>>().join(","))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "<none>".into());
    vec![
        json!(spec["type"].as_str().unwrap_or("ClusterIP")),
        json!(spec["clusterIP"].as_str().unwrap_or("<none>")),
        json!("<none>"),
        json!(if ports.is_empty() { "<none>".to_string() } else { ports.join(",") }),
        age(obj),
        json!(selector),
    ]
}

/// Kubernetes' warnings: a deprecated annotation, addresses in discouraged forms, fields a
/// headless or ExternalName Service ignores, deprecated external IPs and traffic distribution.
fn warnings(obj: &Value, _: Option<&Value>) -> Vec<String> {
    use crate::registry::kinds::warnings::{cidr_warnings, ip_warnings};
    let spec = &obj["spec"];
    let mut out = Vec::new();
    if obj["metadata"]["annotations"].get("service.kubernetes.io/topology-aware-hints").is_some() {
        out.push("annotation service.kubernetes.io/topology-aware-hints is deprecated, please use service.kubernetes.io/topology-mode instead".into());
    }
    let ips: Vec<&str> = spec["clusterIPs"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    if ips.first().is_some_and(|ip| !ip.is_empty() && *ip != "None") {
        for (i, ip) in ips.iter().enumerate() {
            out.extend(ip_warnings(&format!("spec.clusterIPs[{i}]"), ip));
        }
    }
    let kind = spec["type"].as_str().unwrap_or("ClusterIP");
    let headless = kind == "ClusterIP" && spec["clusterIP"] == "None";
    let external: Vec<&str> = spec["externalIPs"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    if headless {
        if spec["loadBalancerIP"].as_str().is_some_and(|s| !s.is_empty()) {
            out.push("spec.loadBalancerIP is ignored for headless services".into());
        }
        if !external.is_empty() {
            out.push("spec.externalIPs is ignored for headless services".into());
        }
        if spec["sessionAffinity"].as_str().is_some_and(|a| a != "None") {
            out.push("spec.SessionAffinity is ignored for headless services".into());
        }
    }
    for (i, ip) in external.iter().enumerate() {
        out.extend(ip_warnings(&format!("spec.externalIPs[{i}]"), ip));
    }
    if !external.is_empty() && !headless && kind != "ExternalName" {
        out.push("spec.externalIPs is deprecated and may no longer be implemented in some clusters".into());
    }
    if let Some(ip) = spec["loadBalancerIP"].as_str().filter(|s| !s.is_empty()) {
        out.extend(ip_warnings("spec.loadBalancerIP", ip));
    }
    for (i, cidr) in spec["loadBalancerSourceRanges"].as_array().into_iter().flatten().filter_map(Value::as_str).enumerate() {
        out.extend(cidr_warnings(&format!("spec.loadBalancerSourceRanges[{i}]"), cidr));
    }
    if kind == "ExternalName" && !external.is_empty() {
        out.push("spec.externalIPs is ignored when spec.type is \"ExternalName\"".into());
    }
    if kind != "ExternalName" && spec["externalName"].as_str().is_some_and(|n| !n.is_empty()) {
        out.push("spec.externalName is ignored when spec.type is not \"ExternalName\"".into());
    }
    if spec["trafficDistribution"] == "PreferClose" {
        out.push("spec.trafficDistribution: \"PreferClose\" is deprecated; use \"PreferSameZone\"".into());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_ports_stay_with_their_type() {
        let old = json!({"spec": {"type": "NodePort", "externalTrafficPolicy": "Cluster", "ports": [{"port": 80, "protocol": "TCP", "nodePort": 30080}]}});
        let mut kept = json!({"spec": {"type": "NodePort", "externalTrafficPolicy": "Cluster", "ports": [{"port": 80, "protocol": "TCP"}]}});
        assert!(update(&old, &mut kept).is_empty());
        assert_eq!(kept["spec"]["ports"][0]["nodePort"], 30080);
        let mut cluster = json!({"spec": {"type": "ClusterIP", "externalTrafficPolicy": "Cluster", "ports": [{"port": 80, "protocol": "TCP", "nodePort": 30080}]}});
        update(&old, &mut cluster);
        assert_eq!(cluster["spec"], json!({"type": "ClusterIP", "ports": [{"port": 80, "protocol": "TCP"}]}));
    }

    #[test]
    fn defaults_of_services() {
        let mut s = json!({"spec": {"ports": [{"port": 80}]}});
        defaults(&mut s);
        assert_eq!(s["spec"]["type"], "ClusterIP");
        assert_eq!(s["spec"]["sessionAffinity"], "None");
        assert_eq!(s["spec"]["ports"][0]["targetPort"], 80);
        let mut s = json!({"spec": {"ports": [{"port": 80, "targetPort": 0}, {"port": 81, "targetPort": "web"}]}});
        defaults(&mut s);
        assert_eq!(s["spec"]["ports"][0]["targetPort"], 80);
        assert_eq!(s["spec"]["ports"][1]["targetPort"], "web");
    }
}
