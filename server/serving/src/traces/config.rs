//! `--tracing-config-file`: kube-apiserver's `TracingConfiguration` (`apiserver.config.k8s.io`
//! `v1`, `v1beta1` or `v1alpha1`): the OTLP/gRPC `endpoint` (default `localhost:4317`) and
//! `samplingRatePerMillion` (default 0: only requests whose privileged client asks are traced),
//! read and checked with kube-apiserver's messages.

use std::path::Path;

use serde::Deserialize;

/// What the file configures.
#[derive(Debug, Clone, PartialEq)]
pub struct TracingConfig {
    /// `host:port` of the OTLP/gRPC receiver, reached without TLS (as kube-apiserver's exporter
    /// reaches it: a collector beside the server).
    pub endpoint: String,
    pub sampling_rate_per_million: u32,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct File {
    api_version: String,
    kind: String,
    #[serde(default)]
    endpoint: Option<String>,
    #[serde(default)]
    sampling_rate_per_million: Option<i64>,
}

const VERSIONS: [&str; 3] = ["apiserver.config.k8s.io/v1", "apiserver.config.k8s.io/v1beta1", "apiserver.config.k8s.io/v1alpha1"];
const DEFAULT_ENDPOINT: &str = "localhost:4317";
const MAX_RATE: i64 = 1_000_000;

impl TracingConfig {
    /// Reads and checks the file, with kube-apiserver's messages.
    pub fn load(path: &Path) -> Result<TracingConfig, String> {
        let data = std::fs::read(path).map_err(|e| format!("failed to read tracing config: unable to read tracing configuration from {:?}: {e}", path.display().to_string()))?;
        Self::parse(&data)
    }

    fn parse(data: &[u8]) -> Result<TracingConfig, String> {
        let decoding = |e: &dyn std::fmt::Display| format!("failed to read tracing config: unable to decode tracing configuration data: {e}");
        let file: File = serde_yaml::from_slice(data).map_err(|e| decoding(&e))?;
        if !VERSIONS.contains(&file.api_version.as_str()) || file.kind != "TracingConfiguration" {
            return Err(decoding(&format!("no kind \"{}\" is registered for version \"{}\" in scheme", file.kind, file.api_version)));
        }
        let mut errors = Vec::new();
        if let Some(rate) = file.sampling_rate_per_million {
            if rate < 0 {
                errors.push(format!("samplingRatePerMillion: Invalid value: {rate}: sampling rate must be positive"));
            }
            if rate > MAX_RATE {
                errors.push(format!("samplingRatePerMillion: Invalid value: {rate}: sampling rate per million must be less than or equal to one million"));
            }
        }
        let endpoint = match &file.endpoint {
            Some(endpoint) => match target(endpoint) {
                Ok(target) => target,
                Err(why) => {
                    errors.push(format!("endpoint: Invalid value: {endpoint:?}: {why}"));
                    String::new()
                }
            },
            None => DEFAULT_ENDPOINT.to_string(),
        };
        match errors.len() {
            0 => Ok(TracingConfig { endpoint, sampling_rate_per_million: file.sampling_rate_per_million.unwrap_or(0) as u32 }),
            1 => Err(format!("failed to validate tracing configuration: {}", errors[0])),
            _ => Err(format!("failed to validate tracing configuration: [{}]", errors.join(", "))),
        }
    }
}

/// The `host:port` a gRPC target names: `host:port` or `dns:///host:port` (gRPC's naming);
/// other schemes are refused as kube-apiserver refuses them, `unix` ones as not served here.
fn target(endpoint: &str) -> Result<String, String> {
    let (scheme, rest) = match endpoint.split_once("//") {
        Some((scheme, rest)) => (scheme.trim_end_matches(':'), rest),
        None => ("dns", endpoint),
    };
    match scheme {
        "dns" => {
            // `dns://authority/host:port`: the authority (a DNS server) is not used.
            let host_port = rest.rsplit('/').next().unwrap_or(rest);
            match host_port.rsplit_once(':') {
                Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => Ok(host_port.to_string()),
                _ => Err(format!("endpoint {host_port:?} has no host and port")),
            }
        }
        "unix" | "unix-abstract" => Err("unix endpoints are not supported by this server; use host:port".to_string()),
        other => Err(format!(
            "unsupported scheme: {other}.  Options are none, dns, unix, or unix-abstract.  See https://github.com/grpc/grpc/blob/master/doc/naming.md"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<TracingConfig, String> {
        TracingConfig::parse(text.as_bytes())
    }

    #[test]
    fn defaults_and_forms_of_the_endpoint() {
        let c = parse("apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\n").unwrap();
        assert_eq!(c, TracingConfig { endpoint: "localhost:4317".into(), sampling_rate_per_million: 0 });
        let c = parse("apiVersion: apiserver.config.k8s.io/v1beta1\nkind: TracingConfiguration\nendpoint: dns:///collector:4317\nsamplingRatePerMillion: 100\n").unwrap();
        assert_eq!(c, TracingConfig { endpoint: "collector:4317".into(), sampling_rate_per_million: 100 });
    }

    #[test]
    fn kube_apiservers_refusals() {
        let e = parse("apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nsamplingRatePerMillion: 2000000\n").unwrap_err();
        assert_eq!(e, "failed to validate tracing configuration: samplingRatePerMillion: Invalid value: 2000000: sampling rate per million must be less than or equal to one million");
        let e = parse("apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nsamplingRatePerMillion: -1\nendpoint: http://x:1\n").unwrap_err();
        assert!(e.starts_with("failed to validate tracing configuration: [samplingRatePerMillion: Invalid value: -1: sampling rate must be positive, endpoint: Invalid value: \"http://x:1\": unsupported scheme: http."), "{e}");
        let e = parse("apiVersion: v1\nkind: TracingConfiguration\n").unwrap_err();
        assert!(e.contains("no kind \"TracingConfiguration\" is registered for version \"v1\""), "{e}");
        let e = parse("apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nsampling: 1\n").unwrap_err();
        assert!(e.starts_with("failed to read tracing config: unable to decode tracing configuration data"), "{e}");
    }
}
