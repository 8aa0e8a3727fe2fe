//! How this server reaches a node's kubelet (`--kubelet-*`): the node's address of the first
//! preferred type and its kubelet's port, called over HTTPS presenting the kubelet client
//! certificate and verifying the kubelet against `--kubelet-certificate-authority` (not
//! verifying at all when none is given, as kube-apiserver does).

use serde_json::Value;

use crate::context::ClientCredentials;
use machinery::error::ApiError;
use machinery::webhook::Endpoint;

/// The port a kubelet serves on when its node does not say.
const DEFAULT_PORT: i64 = 10250;

/// The address types tried, in order, when none are configured.
pub const DEFAULT_ADDRESS_TYPES: &str = "Hostname,InternalDNS,InternalIP,ExternalDNS,ExternalIP";

/// The kubelet client's configuration.
#[derive(Clone, Debug, Default)]
pub struct KubeletClient {
    /// `--kubelet-client-certificate` and `--kubelet-client-key`.
    pub credentials: Option<ClientCredentials>,
    /// `--kubelet-certificate-authority`, PEM.
    pub ca_pem: Option<String>,
    /// `--kubelet-preferred-address-types`.
    pub address_types: Vec<String>,
}

impl KubeletClient {
    /// The kubelet of `node` at `path` (with its query): the node's preferred address, the port
    /// it registered (`https:NAME:PORT` in a proxy request may name another).
    pub fn endpoint(&self, node: &Value, port: Option<u16>, path: &str) -> Result<Endpoint, ApiError> {
        let host = self.address(node)?;
        let port = port.map(i64::from).unwrap_or_else(|| node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"].as_i64().filter(|p| *p > 0).unwrap_or(DEFAULT_PORT));
        let host = if host.contains(':') { format!("[{host}]") } else { host };
        let url = format!("https://{host}:{port}{path}");
        let client = self.credentials.as_ref().map(|c| (c.cert.clone(), c.key.clone()));
        let endpoint = Endpoint::new(&url, self.ca_pem.as_deref(), client.clone(), None, None).map_err(ApiError::internal)?;
        match self.ca_pem {
            Some(_) => Ok(endpoint),
            None => endpoint.without_verification(client).map_err(ApiError::internal),
        }
    }

    /// The node's address of the first preferred type that it has.
    fn address(&self, node: &Value) -> Result<String, ApiError> {
        let addresses = node["status"]["addresses"].as_array().map_or(&[][..], Vec::as_slice);
        for kind in &self.address_types {
            if let Some(a) = addresses.iter().find(|a| a["type"] == kind.as_str()).and_then(|a| a["address"].as_str()) {
                return Ok(a.to_string());
            }
        }
        let known: Vec<String> = addresses.iter().map(|a| format!("{{{} {}}}", a["type"].as_str().unwrap_or_default(), a["address"].as_str().unwrap_or_default())).collect();
        Err(ApiError::internal(format!("no preferred addresses found; known addresses: [{}]", known.join(" "))))
    }
}
