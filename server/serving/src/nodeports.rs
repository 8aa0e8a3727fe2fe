//! Service node ports, as kube-apiserver allocates them: every NodePort and LoadBalancer Service
//! (unless `allocateLoadBalancerNodePorts` is false) gets a port from `--service-node-port-range`
//! for each of its ports that names none, and a LoadBalancer whose external traffic policy is
//! `Local` one for `healthCheckNodePort`; a port it names must lie in the range and be free.
//! Each port in use is held by a reservation key written in the same transaction as its
//! Service (and removed with it), so two Services can never share a node port, whichever node
//! they were written through.

use std::collections::BTreeSet;
use std::ops::RangeInclusive;

use raft_store::{Action, Cache, Cond, Op};
use rand::Rng;
use serde_json::{json, Value};

use machinery::error::{ApiError, ApiResult, Cause};

/// Storage key prefix of the reservations.
pub const PREFIX: &str = "/registry/ranges/servicenodeports/";

/// The range node ports are given from.
pub struct NodePorts {
    range: RangeInclusive<u16>,
}

/// What a Service's write does to the reservations: the keys to take with it (absent until
/// then) and the keys to give back.
#[derive(Debug, Default)]
pub struct Plan {
    pub take: Vec<Op>,
    pub give_back: Vec<Op>,
}

impl NodePorts {
    pub fn new(range: RangeInclusive<u16>) -> NodePorts {
        NodePorts { range }
    }

    /// `--service-node-port-range`: `30000-32767` (or a single port).
    pub fn parse(flag: &str) -> Result<RangeInclusive<u16>, String> {
        let (low, high) = flag.split_once('-').unwrap_or((flag, flag));
        let port = |s: &str| s.trim().parse::<u16>().map_err(|_| format!("{flag:?} is not a port range (e.g. 30000-32767)"));
        let (low, high) = (port(low)?, port(high)?);
        if low == 0 || low > high {
            return Err(format!("{flag:?} is not a port range (e.g. 30000-32767)"));
        }
        Ok(low..=high)
    }

    /// The storage key of a port's reservation.
    pub fn key(port: u16) -> String {
        format!("{PREFIX}{port}")
    }

    /// Gives the Service `new` (a create when `old` is `None`) the node ports it lacks and says
    /// which reservations its write takes and gives back. Ports it names are checked against
    /// the range and the reservations (ports the Service already held stay its own).
    pub fn plan(&self, cache: &Cache, old: Option<&Value>, new: &mut Value, namespace: &str, name: &str) -> ApiResult<Plan> {
        let held = old.map(ports_of).unwrap_or_default();
        let taken = |port: u16| !held.contains(&port) && cache.get(&Self::key(port), None).ok().flatten().is_some();
        let mut causes = Vec::new();
        let mut chosen = BTreeSet::new();
        // A port the Service names: in the range and free; a port it leaves out: a free one.
        let mut claim = |given: &mut Value, field: String, chosen: &mut BTreeSet<u16>| -> ApiResult<()> {
            match given.as_u64().filter(|n| *n != 0) {
                Some(n) => {
                    let port = u16::try_from(n).unwrap_or(0);
                    if !self.range.contains(&port) {
                        let (low, high) = (self.range.start(), self.range.end());
                        causes.push(Cause::new("FieldValueInvalid", field, format!("Invalid value: {n}: provided port is not in the valid range. The range of valid ports is {low}-{high}")));
                    } else if taken(port) {
                        causes.push(Cause::new("FieldValueInvalid", field, format!("Invalid value: {n}: provided port is already allocated")));
                    } else {
                        chosen.insert(port);
                    }
                }
                None => {
                    let port = self.candidate(&|port| chosen.contains(&port) || taken(port))?;
                    *given = json!(port);
                    chosen.insert(port);
                }
            }
            Ok(())
        };
        if wants(new) {
            for (i, p) in new.get_mut("spec").and_then(|s| s.get_mut("ports")).and_then(Value::as_array_mut).into_iter().flatten().enumerate() {
                claim(&mut p["nodePort"], format!("spec.ports[{i}].nodePort"), &mut chosen)?;
            }
        }
        if wants_health_check(new) {
            claim(&mut new["spec"]["healthCheckNodePort"], "spec.healthCheckNodePort".into(), &mut chosen)?;
        }
        if !causes.is_empty() {
            return Err(ApiError::Invalid { group: String::new(), kind: "Service".into(), name: name.into(), causes });
        }
        let reservation = serde_json::to_vec(&json!({"namespace": namespace, "name": name})).map_err(ApiError::internal)?;
        Ok(Plan {
            take: chosen
                .difference(&held)
                .map(|port| Op { key: Self::key(*port), cond: Cond::Absent, action: Action::Put(reservation.clone().into()) })
                .collect(),
            give_back: held.difference(&chosen).map(|port| release(*port)).collect(),
        })
    }

    /// A random free port, then the first free one (so a nearly full range still finds its
    /// last ports); the caller retries on a conflict with a concurrent allocation.
    fn candidate(&self, taken: &dyn Fn(u16) -> bool) -> ApiResult<u16> {
        let mut rng = rand::rng();
        for _ in 0..64 {
            let port = rng.random_range(self.range.clone());
            if !taken(port) {
                return Ok(port);
            }
        }
        self.range.clone().find(|p| !taken(*p)).ok_or_else(|| ApiError::Internal("range is full: no more node ports available".into()))
    }
}

/// Whether a Service is given node ports.
pub fn wants(obj: &Value) -> bool {
    match obj["spec"]["type"].as_str() {
        Some("NodePort") => true,
        Some("LoadBalancer") => obj["spec"]["allocateLoadBalancerNodePorts"] != false,
        _ => false,
    }
}

/// Whether a Service is given a health check node port: a LoadBalancer that keeps traffic on
/// the node it arrives at.
pub fn wants_health_check(obj: &Value) -> bool {
    obj["spec"]["type"] == "LoadBalancer" && obj["spec"]["externalTrafficPolicy"] == "Local"
}

/// The node ports a Service holds, its health check port included.
pub fn ports_of(obj: &Value) -> BTreeSet<u16> {
    let ports = obj["spec"]["ports"].as_array().into_iter().flatten().map(|p| &p["nodePort"]);
    ports.chain(std::iter::once(&obj["spec"]["healthCheckNodePort"])).filter_map(Value::as_u64).filter(|n| *n != 0).filter_map(|n| u16::try_from(n).ok()).collect()
}

/// The operation that gives a port back.
pub fn release(port: u16) -> Op {
    Op { key: NodePorts::key(port), cond: Cond::Any, action: Action::Delete }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_as_kube_apiserver_reads_them() {
        assert_eq!(NodePorts::parse("30000-32767").unwrap(), 30000..=32767);
        assert_eq!(NodePorts::parse("30000").unwrap(), 30000..=30000);
        assert!(NodePorts::parse("32767-30000").is_err());
        assert!(NodePorts::parse("a-b").is_err());
    }

    #[test]
    fn candidates_stay_in_range_and_skip_taken() {
        let ports = NodePorts::new(30000..=30003);
        for _ in 0..20 {
            assert_eq!(ports.candidate(&|p| p != 30002).unwrap(), 30002);
        }
        assert!(ports.candidate(&|_| true).is_err());
        assert!(!wants(&json!({"spec": {"type": "LoadBalancer", "allocateLoadBalancerNodePorts": false}})));
        assert!(wants(&json!({"spec": {"type": "LoadBalancer"}})));
    }

    #[test]
    fn a_local_load_balancer_holds_its_health_check_port_too() {
        let lb = json!({"spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local", "healthCheckNodePort": 30005, "ports": [{"port": 80, "nodePort": 30001}]}});
        assert!(wants_health_check(&lb));
        assert_eq!(ports_of(&lb).into_iter().collect::<Vec<_>>(), [30001, 30005]);
        assert!(!wants_health_check(&json!({"spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Cluster"}})));
    }
}
