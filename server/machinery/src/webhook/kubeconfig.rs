//! Where a webhook is and how to reach it, read from a kubeconfig file (the current context's
//! cluster and user) or from the in-cluster service account, as Kubernetes' webhook clients do.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use serde::Deserialize;

use super::Endpoint;

#[derive(Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
struct Kubeconfig {
    #[serde(default)]
    clusters: Vec<Named<Cluster>>,
    #[serde(default)]
    users: Vec<Named<User>>,
    #[serde(default)]
    contexts: Vec<Named<Context>>,
    #[serde(default)]
    current_context: String,
}

#[derive(Deserialize)]
struct Named<T> {
    name: String,
    #[serde(alias = "cluster", alias = "user", alias = "context")]
    value: T,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
struct Cluster {
    server: String,
    certificate_authority: Option<PathBuf>,
    certificate_authority_data: Option<String>,
    tls_server_name: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
struct User {
    client_certificate: Option<PathBuf>,
    client_certificate_data: Option<String>,
    client_key: Option<PathBuf>,
    client_key_data: Option<String>,
    token: Option<String>,
    #[serde(rename = "tokenFile")]
    token_file: Option<PathBuf>,
}

#[derive(Deserialize, Default)]
struct Context {
    cluster: String,
    #[serde(default)]
    user: String,
}

/// Reads the kubeconfig at `path`: its current context (or its only context) names the cluster
/// (server URL, CA) and the user (client certificate, bearer token) the webhook is called with.
pub fn load(path: &Path) -> Result<Endpoint, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let config: Kubeconfig = serde_yaml::from_str(&text).map_err(|e| format!("parsing kubeconfig {}: {e}", path.display()))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let context = match (config.current_context.as_str(), config.contexts.as_slice()) {
        ("", [only]) => &only.value,
        ("", _) => return Err(format!("kubeconfig {}: no current-context", path.display())),
        (name, contexts) => &contexts
            .iter()
            .find(|c| c.name == name)
            .ok_or_else(|| format!("kubeconfig {}: context {name:?} not found", path.display()))?
            .value,
    };
    let cluster = &config
        .clusters
        .iter()
        .find(|c| c.name == context.cluster)
        .ok_or_else(|| format!("kubeconfig {}: cluster {:?} not found", path.display(), context.cluster))?
        .value;
    let default_user = User::default();
    let user = match context.user.as_str() {
        "" => &default_user,
        name => &config
            .users
            .iter()
            .find(|u| u.name == name)
            .ok_or_else(|| format!("kubeconfig {}: user {name:?} not found", path.display()))?
            .value,
    };
    let ca = pem_of(dir, &cluster.certificate_authority, &cluster.certificate_authority_data)?;
    let cert = pem_of(dir, &user.client_certificate, &user.client_certificate_data)?;
    let key = pem_of(dir, &user.client_key, &user.client_key_data)?;
    let token = match (&user.token, &user.token_file) {
        (Some(t), _) => Some(t.clone()),
        (None, Some(file)) => Some(read(dir, file)?.trim().to_string()),
        (None, None) => None,
    };
    let client = match (cert, key) {
        (Some(cert), Some(key)) => Some((cert, key)),
        (None, None) => None,
        _ => return Err(format!("kubeconfig {}: client-certificate and client-key must be given together", path.display())),
    };
    Endpoint::new(&cluster.server, ca.as_deref(), client, token, cluster.tls_server_name.as_deref())
}

/// The API server of the cluster this process runs in, reached with its service account, as
/// Kubernetes' in-cluster configuration does.
pub fn in_cluster() -> Result<Endpoint, String> {
    const DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
    let host = std::env::var("KUBERNETES_SERVICE_HOST").map_err(|_| "KUBERNETES_SERVICE_HOST is not set: not running in a cluster".to_string())?;
    let port = std::env::var("KUBERNETES_SERVICE_PORT").map_err(|_| "KUBERNETES_SERVICE_PORT is not set: not running in a cluster".to_string())?;
    let dir = Path::new(DIR);
    let token = read(dir, Path::new("token"))?.trim().to_string();
    let ca = read(dir, Path::new("ca.crt"))?;
    let host = if host.contains(':') { format!("[{host}]") } else { host };
    Endpoint::new(&format!("https://{host}:{port}"), Some(&ca), None, Some(token), None)
}

fn read(dir: &Path, file: &Path) -> Result<String, String> {
    let path = dir.join(file);
    std::fs::read_to_string(&path).map_err(|e| format!("reading {}: {e}", path.display()))
}

/// A PEM block given as a file (relative to the kubeconfig's directory) or as base64 data.
fn pem_of(dir: &Path, file: &Option<PathBuf>, data: &Option<String>) -> Result<Option<String>, String> {
    match (data, file) {
        (Some(data), _) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(data.trim())
                .map_err(|e| format!("decoding base64 data: {e}"))?;
            String::from_utf8(bytes).map(Some).map_err(|_| "base64 data is not PEM text".to_string())
        }
        (None, Some(file)) => read(dir, file).map(Some),
        (None, None) => Ok(None),
    }
}

/// The TLS settings for a server: its CA (or this machine's roots) and an optional client
/// certificate.
pub(super) fn tls_config(ca: Option<&str>, client: Option<(String, String)>) -> Result<Arc<rustls::ClientConfig>, String> {
    tls_config_verifying(ca, client, true)
}

/// [`tls_config`], or without verifying the server's certificate when `verify` is false.
pub(super) fn tls_config_verifying(ca: Option<&str>, client: Option<(String, String)>, verify: bool) -> Result<Arc<rustls::ClientConfig>, String> {
    let mut roots = rustls::RootCertStore::empty();
    match ca {
        Some(pem) => {
            for cert in certs(pem)? {
                roots.add(cert).map_err(|e| format!("certificate authority: {e}"))?;
            }
        }
        None => {
            for cert in rustls_native_certs::load_native_certs().certs {
                let _ = roots.add(cert);
            }
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let versions = rustls::ClientConfig::builder_with_provider(provider.clone()).with_safe_default_protocol_versions().map_err(|e| e.to_string())?;
    let builder = if verify {
        versions.with_root_certificates(roots)
    } else {
        versions.dangerous().with_custom_certificate_verifier(Arc::new(super::insecure::AnyCertificate(provider)))
    };
    let mut config = match client {
        Some((cert, key)) => {
            let key: PrivateKeyDer<'static> = rustls_pemfile::private_key(&mut key.as_bytes())
                .map_err(|e| format!("client key: {e}"))?
                .ok_or("client key: no private key in PEM")?;
            builder.with_client_auth_cert(certs(&cert)?, key).map_err(|e| format!("client certificate: {e}"))?
        }
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

fn certs(pem: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs: Vec<_> = rustls_pemfile::certs(&mut pem.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|e| format!("reading PEM certificates: {e}"))?;
    if certs.is_empty() {
        return Err("no certificate in PEM data".into());
    }
    Ok(certs)
}

/// The name a server's certificate must carry: the URL's host unless the kubeconfig overrides it.
pub(super) fn server_name(host: &str, overridden: Option<&str>) -> Result<ServerName<'static>, String> {
    let name = overridden.unwrap_or(host).trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(name.to_string()).map_err(|e| format!("server name {name:?}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_current_context() {
        let dir = tempfile::tempdir().unwrap();
        let ca = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        let ca_b64 = base64::engine::general_purpose::STANDARD.encode(ca.cert.pem());
        let path = dir.path().join("webhook.kubeconfig");
        std::fs::write(dir.path().join("token"), "s3cret\n").unwrap();
        std::fs::write(
            &path,
            format!(
                "apiVersion: v1\nkind: Config\ncurrent-context: webhook\nclusters:\n- name: authz\n  cluster:\n    server: https://127.0.0.1:9443/authorize\n    certificate-authority-data: {ca_b64}\nusers:\n- name: apiserver\n  user:\n    tokenFile: token\ncontexts:\n- name: other\n  context: {{cluster: nowhere}}\n- name: webhook\n  context:\n    cluster: authz\n    user: apiserver\n"
            ),
        )
        .unwrap();
        let e = load(&path).unwrap();
        assert_eq!(e.url(), "https://127.0.0.1:9443/authorize");
        assert_eq!(e.token.as_deref(), Some("s3cret"));
    }

    #[test]
    fn refuses_what_it_cannot_use() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k");
        for (text, want) in [
            ("clusters: []\ncontexts: []\n", "no current-context"),
            ("current-context: x\ncontexts: []\n", "context \"x\" not found"),
            ("current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\n", "cluster \"c\" not found"),
            (": : :", "parsing kubeconfig"),
        ] {
            std::fs::write(&path, text).unwrap();
            let err = load(&path).unwrap_err();
            assert!(err.contains(want), "{text}: {err}");
        }
        assert!(load(&dir.path().join("missing")).unwrap_err().contains("reading"));
    }
}
