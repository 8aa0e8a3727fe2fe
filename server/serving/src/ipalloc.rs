//! Service cluster IPs as Kubernetes (1.33 on) allocates them: from the ServiceCIDRs (the
//! `kubernetes` one that `--service-cluster-ip-range` makes at start, and any an administrator
//! adds), each IP held by an IPAddress object written in the same transaction as its Service,
//! so two Services can never share an IP and `kubectl get ipaddresses` shows every one in use.

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;
use raft_store::Store;
use rand::Rng;
use serde_json::{json, Value};

use machinery::error::{ApiError, ApiResult, Cause};

/// Storage key prefix of the IPAddress objects.
const PREFIX: &str = "/registry/networking.k8s.io/ipaddresses/";
/// Storage key prefix of the ServiceCIDR objects.
const CIDRS: &str = "/registry/networking.k8s.io/servicecidrs/";
/// The ServiceCIDR made from the flag, as kube-apiserver names it.
pub const DEFAULT_CIDR: &str = "kubernetes";

pub struct ServiceIps {
    range: Ipv4Net,
}

impl ServiceIps {
    pub fn new(range: Ipv4Net) -> Self {
        ServiceIps { range }
    }

    /// The storage key of an IP's IPAddress object.
    pub fn key(ip: &str) -> String {
        format!("{PREFIX}{ip}")
    }

    /// The first usable address, which Kubernetes gives the `kubernetes` Service.
    pub fn first(&self) -> Ipv4Addr {
        let base = u32::from(self.range.network());
        Ipv4Addr::from(base + 1)
    }

    /// The default ServiceCIDR object, as the bootstrap creates it.
    pub fn default_cidr(&self) -> Value {
        json!({
            "apiVersion": "networking.k8s.io/v1", "kind": "ServiceCIDR",
            "metadata": {"name": DEFAULT_CIDR},
            "spec": {"cidrs": [self.range.to_string()]},
        })
    }

    /// The ranges Services take IPs from: the flag's first, then every other ServiceCIDR's
    /// IPv4 ranges that is not being deleted.
    pub fn ranges(&self, store: &Store) -> Vec<Ipv4Net> {
        let mut ranges = vec![self.range];
        let listed = store.cache().list(CIDRS, None, None, None, &|_| true).map(|l| l.items).unwrap_or_default();
        for o in listed {
            let Ok(cidr) = serde_json::from_slice::<Value>(&o.data) else { continue };
            if cidr["metadata"]["deletionTimestamp"].is_string() {
                continue;
            }
            let parsed = cidr["spec"]["cidrs"].as_array().into_iter().flatten().filter_map(Value::as_str).filter_map(|c| c.parse::<Ipv4Net>().ok());
            for net in parsed {
                if !ranges.contains(&net) {
                    ranges.push(net);
                }
            }
        }
        ranges
    }

    /// Checks a requested IP lies in one of `ranges`; the cause says why not.
    pub fn check(ranges: &[Ipv4Net], ip: &str) -> Result<(), Cause> {
        let invalid = |detail: &str| Cause::invalid("spec.clusterIPs", ip, detail);
        let parsed: Ipv4Addr = ip.parse().map_err(|_| invalid("must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"))?;
        let usable = |r: &Ipv4Net| r.contains(&parsed) && parsed != r.network() && parsed != r.broadcast();
        if !ranges.iter().any(usable) {
            let listed: Vec<String> = ranges.iter().map(ToString::to_string).collect();
            return Err(invalid(&format!("provided IP is not in the valid range. The range of valid IPs is {}", listed.join(","))));
        }
        Ok(())
    }

    /// A random free address of the first range that has one; the caller retries on a
    /// conflict with a concurrent allocation.
    pub fn candidate(ranges: &[Ipv4Net], taken: &dyn Fn(&str) -> bool) -> ApiResult<String> {
        let mut rng = rand::rng();
        for range in ranges {
            let base = u32::from(range.network());
            let size = 1u64 << (32 - range.prefix_len());
            if size < 4 {
                continue;
            }
            // Random probing, then a linear scan so a nearly full range still finds its last IPs.
            for _ in 0..64 {
                let ip = Ipv4Addr::from(base + rng.random_range(2..(size - 1)) as u32).to_string();
                if !taken(&ip) {
                    return Ok(ip);
                }
            }
            if let Some(ip) = (2..size - 1).map(|off| Ipv4Addr::from(base + off as u32).to_string()).find(|ip| !taken(ip)) {
                return Ok(ip);
            }
        }
        Err(ApiError::Internal("range is full: no more service IPs available".into()))
    }

    /// The IPAddress object that holds `ip` for a Service, stamped as a created object.
    pub fn reservation(ip: &str, namespace: &str, service: &str) -> Value {
        json!({
            "apiVersion": "networking.k8s.io/v1", "kind": "IPAddress",
            "metadata": {
                "name": ip,
                "uid": uuid::Uuid::new_v4().to_string(),
                "creationTimestamp": machinery::meta::now(),
                "labels": {"ipaddress.kubernetes.io/ip-family": "IPv4", "ipaddress.kubernetes.io/managed-by": "ipallocator.k8s.io"},
            },
            "spec": {"parentRef": {"group": "", "resource": "services", "namespace": namespace, "name": service}},
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_stay_in_range_and_skip_taken() {
        let ips = ServiceIps::new("10.96.0.0/29".parse().unwrap());
        assert_eq!(ips.first().to_string(), "10.96.0.1");
        let ranges = ["10.96.0.0/29".parse().unwrap()];
        for _ in 0..20 {
            let ip = ServiceIps::candidate(&ranges, &|ip| ip != "10.96.0.5").unwrap();
            assert_eq!(ip, "10.96.0.5");
        }
        assert!(ServiceIps::candidate(&ranges, &|_| true).is_err());
        assert!(ServiceIps::check(&ranges, "10.96.0.3").is_ok());
        assert!(ServiceIps::check(&ranges, "10.97.0.3").is_err());
        assert!(ServiceIps::check(&ranges, "nope").is_err());
    }

    #[test]
    fn a_full_range_moves_on_to_the_next() {
        let ranges: Vec<Ipv4Net> = vec!["10.96.0.0/30".parse().unwrap(), "10.100.0.0/30".parse().unwrap()];
        let ip = ServiceIps::candidate(&ranges, &|ip| ip.starts_with("10.96.")).unwrap();
        assert_eq!(ip, "10.100.0.2");
        assert!(ServiceIps::check(&ranges, "10.100.0.1").is_ok());
        assert!(ServiceIps::check(&ranges, "10.100.0.3").is_err(), "broadcast");
    }
}
