//! The admin kubeconfig: the server URL, the CA to trust and the admin client certificate,
//! in the format kubectl and kube-rs read.

use std::path::Path;

use base64::Engine as _;
use serde_json::json;

use super::certs::{write_file, Pki, ADMIN_USER};

const CLUSTER: &str = "kubernetes";

/// The admin kubeconfig YAML for `server_url` (e.g. `https://127.0.0.1:6443`): cluster
/// `kubernetes`, user `kubernetes-admin`, context `kubernetes-admin@kubernetes` (current).
pub fn admin_kubeconfig(server_url: &str, pki: &Pki) -> anyhow::Result<String> {
    let b64 = |pem: &str| base64::engine::general_purpose::STANDARD.encode(pem);
    let context = format!("{ADMIN_USER}@{CLUSTER}");
    let config = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{
            "name": CLUSTER,
            "cluster": {
                "certificate-authority-data": b64(&pki.server_ca_pem),
                "server": server_url,
            },
        }],
        "contexts": [{
            "name": context,
            "context": { "cluster": CLUSTER, "user": ADMIN_USER },
        }],
        "current-context": context,
        "preferences": {},
        "users": [{
            "name": ADMIN_USER,
            "user": {
                "client-certificate-data": b64(&pki.admin_cert_pem),
                "client-key-data": b64(&pki.admin_key_pem),
            },
        }],
    });
    Ok(serde_yaml::to_string(&config)?)
}

/// Writes [`admin_kubeconfig`] to `path` with mode 0600 (replacing any file there), creating
/// the parent directory if needed.
pub fn write_admin_kubeconfig(path: &Path, server_url: &str, pki: &Pki) -> anyhow::Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    write_file(path, &admin_kubeconfig(server_url, pki)?, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tls::certs::{ensure_pki, tests::temp_dir, TlsOptions};
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn kubeconfig_content() {
        let dir = temp_dir("kubeconfig");
        let pki = ensure_pki(&dir, &TlsOptions::default()).unwrap();
        let path = dir.join("admin.conf");
        write_admin_kubeconfig(&path, "https://127.0.0.1:6443", &pki).unwrap();
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );

        let doc: serde_yaml::Value =
            serde_yaml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let decode = |v: &serde_yaml::Value| {
            String::from_utf8(
                base64::engine::general_purpose::STANDARD
                    .decode(v.as_str().unwrap())
                    .unwrap(),
            )
            .unwrap()
        };
        assert_eq!(doc["apiVersion"], "v1");
        assert_eq!(doc["kind"], "Config");
        assert_eq!(doc["current-context"], "kubernetes-admin@kubernetes");
        let cluster = &doc["clusters"][0];
        assert_eq!(cluster["name"], "kubernetes");
        assert_eq!(cluster["cluster"]["server"], "https://127.0.0.1:6443");
        assert_eq!(
            decode(&cluster["cluster"]["certificate-authority-data"]),
            pki.ca_pem
        );
        let context = &doc["contexts"][0];
        assert_eq!(context["name"], "kubernetes-admin@kubernetes");
        assert_eq!(context["context"]["cluster"], "kubernetes");
        assert_eq!(context["context"]["user"], "kubernetes-admin");
        let user = &doc["users"][0];
        assert_eq!(user["name"], "kubernetes-admin");
        assert_eq!(
            decode(&user["user"]["client-certificate-data"]),
            pki.admin_cert_pem
        );
        assert_eq!(decode(&user["user"]["client-key-data"]), pki.admin_key_pem);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
