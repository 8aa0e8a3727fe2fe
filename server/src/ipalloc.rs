//! Service cluster IPs: allocated from `--service-cluster-ip-range`, each one reserved by a key
//! written in the same transaction as its Service, so two Services can never share an IP.

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;
use rand::Rng;

use crate::error::{ApiError, ApiResult, Cause};

/// Storage key prefix of the IP reservations.
const PREFIX: &str = "/registry/ipallocations/";

pub struct ServiceIps {
    range: Ipv4Net,
}

impl ServiceIps {
    pub fn new(range: Ipv4Net) -> Self {
        ServiceIps { range }
    }

    /// The reservation key of an IP.
    pub fn key(ip: &str) -> String {
        format!("{PREFIX}{ip}")
    }

    /// The first usable address, which Kubernetes gives the `kubernetes` Service.
    pub fn first(&self) -> Ipv4Addr {
        let base = u32::from(self.range.network());
        Ipv4Addr::from(base + 1)
    }

    /// Checks a requested IP lies in the range; the cause says why not.
    pub fn check(&self, ip: &str) -> Result<(), Cause> {
        let invalid = |detail: &str| Cause::invalid("spec.clusterIPs", ip, detail);
        let parsed: Ipv4Addr = ip.parse().map_err(|_| invalid("must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"))?;
        if !self.range.contains(&parsed) || parsed == self.range.network() || parsed == self.range.broadcast() {
            return Err(invalid(&format!("provided IP is not in the valid range. The range of valid IPs is {}", self.range)));
        }
        Ok(())
    }

    /// A random candidate address; the caller retries on a reservation conflict.
    pub fn candidate(&self, taken: &dyn Fn(&str) -> bool) -> ApiResult<String> {
        let base = u32::from(self.range.network());
        let size = 1u64 << (32 - self.range.prefix_len());
        if size < 4 {
            return Err(ApiError::Internal("service IP range is too small".into()));
        }
        let mut rng = rand::rng();
        // Random probing, then a linear scan so a nearly full range still finds its last IPs.
        for _ in 0..64 {
            let ip = Ipv4Addr::from(base + rng.random_range(2..(size - 1)) as u32).to_string();
            if !taken(&ip) {
                return Ok(ip);
            }
        }
        (2..size - 1)
            .map(|off| Ipv4Addr::from(base + off as u32).to_string())
            .find(|ip| !taken(ip))
            .ok_or_else(|| ApiError::Internal("range is full: no more service IPs available".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_stay_in_range_and_skip_taken() {
        let ips = ServiceIps::new("10.96.0.0/29".parse().unwrap());
        assert_eq!(ips.first().to_string(), "10.96.0.1");
        for _ in 0..20 {
            let ip = ips.candidate(&|ip| ip != "10.96.0.5").unwrap();
            assert_eq!(ip, "10.96.0.5");
        }
        assert!(ips.candidate(&|_| true).is_err());
        assert!(ips.check("10.96.0.3").is_ok());
        assert!(ips.check("10.97.0.3").is_err());
        assert!(ips.check("nope").is_err());
    }
}
