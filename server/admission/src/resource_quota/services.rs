//! What a Service uses of quota: `services` and `count/services`, its node ports
//! (`services.nodeports`: every port of a NodePort Service, and of a LoadBalancer unless it
//! allocates none, then those that have one) and `services.loadbalancers`.

use serde_json::Value;

use crate::resource_list::ResourceList;
use machinery::expr::amount::Amount;

pub const RESOURCES: &[&str] = &["count/services", "services", "services.nodeports", "services.loadbalancers"];

/// The type that matters to quota (another type counts as none).
pub fn quota_type(service: &Value) -> &str {
    match service["spec"]["type"].as_str() {
        Some(t @ ("NodePort" | "LoadBalancer")) => t,
        _ => "",
    }
}

pub fn usage(service: &Value) -> ResourceList {
    let ports = service["spec"]["ports"].as_array().map_or(&[][..], Vec::as_slice);
    let (node_ports, balancers) = match quota_type(service) {
        "NodePort" => (ports.len(), 0),
        "LoadBalancer" if service["spec"]["allocateLoadBalancerNodePorts"] == false => {
            (ports.iter().filter(|p| p["nodePort"].as_i64().is_some_and(|n| n != 0)).count(), 1)
        }
        "LoadBalancer" => (ports.len(), 1),
        _ => (0, 0),
    };
    ResourceList::from([
        ("count/services".to_string(), Amount::count(1)),
        ("services".to_string(), Amount::count(1)),
        ("services.loadbalancers".to_string(), Amount::count(balancers)),
        ("services.nodeports".to_string(), Amount::count(node_ports as i64)),
    ])
}
