//! The server's PKI: a cluster CA, a serving certificate and an admin client certificate kept
//! under `DATA_DIR/pki/` (created on first start, reused afterwards), with the kube-apiserver
//! overrides `--tls-cert-file`, `--tls-private-key-file` and `--client-ca-file`.

use std::fmt;
use std::fs;
use std::io::Write;
use std::net::IpAddr;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{bail, Context};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::CertificateDer;
use x509_parser::prelude::{FromDer, GeneralName, X509Certificate};

/// Subject CN of the generated cluster CA (as kubeadm names it).
pub const CA_COMMON_NAME: &str = "kubernetes";
/// Subject CN of the generated admin client certificate.
pub const ADMIN_USER: &str = "kubernetes-admin";
/// Subject O of the generated admin client certificate.
pub const ADMIN_GROUP: &str = "system:masters";

const CA_VALIDITY: Duration = Duration::from_secs(10 * 365 * 24 * 3600);
const LEAF_VALIDITY: Duration = Duration::from_secs(365 * 24 * 3600);
/// Certificates start this long before "now", tolerating clock skew between hosts.
const BACKDATE: Duration = Duration::from_secs(5 * 60);

/// Names every generated serving certificate carries, besides [`TlsOptions::extra_sans`].
const DEFAULT_SANS: &[&str] = &[
    "localhost",
    "127.0.0.1",
    "::1",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
];

/// TLS settings from the command line, mirroring kube-apiserver's flags.
#[derive(Clone, Debug, Default)]
pub struct TlsOptions {
    /// `--tls-cert-file`: serving certificate chain (PEM), leaf first.
    pub cert_file: Option<PathBuf>,
    /// `--tls-private-key-file`: key of `cert_file` (PEM).
    pub key_file: Option<PathBuf>,
    /// `--client-ca-file`: CA bundle (PEM) that client certificates are verified against.
    pub client_ca_file: Option<PathBuf>,
    /// Extra subject alternative names (DNS names or IP addresses) for the generated serving
    /// certificate, e.g. the bind address, the host name, a load balancer's name.
    /// Unspecified addresses (`0.0.0.0`, `::`) are ignored.
    pub extra_sans: Vec<String>,
    /// Names of this node's peer (Raft) address; when not empty, `pki/peer.crt` is issued for
    /// them, for mutual TLS between replicas.
    pub peer_sans: Vec<String>,
}

impl TlsOptions {
    /// The files `ensure_pki` served from (given by flag, else generated under `DATA_DIR/pki`),
    /// which the running server follows.
    pub fn sources(&self, data_dir: &Path, proxy_ca: Option<PathBuf>, sni: Vec<super::SniCertKey>) -> super::Sources {
        let dir = data_dir.join("pki");
        super::Sources {
            serving_cert: self.cert_file.clone().unwrap_or_else(|| dir.join("apiserver.crt")),
            serving_key: self.key_file.clone().unwrap_or_else(|| dir.join("apiserver.key")),
            client_ca: self.client_ca_file.clone().unwrap_or_else(|| dir.join("ca.crt")),
            proxy_ca,
            sni,
        }
    }
}

/// The certificates and keys the server runs with, all PEM.
#[derive(Clone)]
pub struct Pki {
    /// The cluster CA certificate (generated, or `pki/ca.crt` if one was put there).
    pub ca_pem: String,
    /// The CA certificates a client should trust to verify the serving certificate:
    /// `ca_pem` for a generated serving certificate; for `--tls-cert-file`, those of the
    /// cluster CA, the client CA bundle and the chain itself that issued a certificate of the chain.
    pub server_ca_pem: String,
    /// The serving certificate chain, leaf first.
    pub serving_cert_pem: String,
    /// The serving certificate's private key.
    pub serving_key_pem: String,
    /// The CA bundle that client certificates are verified against.
    pub client_ca_pem: String,
    /// The admin client certificate (CN `kubernetes-admin`, O `system:masters`).
    pub admin_cert_pem: String,
    /// The admin client certificate's private key.
    pub admin_key_pem: String,
    /// The peer certificate and key (PEM), when this node has peers.
    pub peer: Option<(String, String)>,
}

impl fmt::Debug for Pki {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pki")
            .field("ca_pem", &self.ca_pem)
            .field("server_ca_pem", &self.server_ca_pem)
            .field("serving_cert_pem", &self.serving_cert_pem)
            .field("serving_key_pem", &"<redacted>")
            .field("client_ca_pem", &self.client_ca_pem)
            .field("admin_cert_pem", &self.admin_cert_pem)
            .field("admin_key_pem", &"<redacted>")
            .field("peer", &self.peer.as_ref().map(|(cert, _)| (cert, "<redacted>")))
            .finish()
    }
}

/// Loads the PKI from `data_dir/pki/`, generating whatever is missing: the CA (`ca.crt`,
/// `ca.key`) when neither file exists, the serving certificate (`apiserver.crt`,
/// `apiserver.key`) unless `--tls-cert-file` is given, and the admin client certificate
/// (`admin.crt`, `admin.key`). Existing files are reused as they are, except that a generated
/// serving certificate lacking one of the requested names is reissued by the same CA.
/// Placing a shared `ca.crt`/`ca.key` in each node's directory before the first start gives
/// all nodes of a cluster one CA.
pub fn ensure_pki(data_dir: &Path, opts: &TlsOptions) -> anyhow::Result<Pki> {
    let dir = data_dir.join("pki");
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let ca = CaFiles::load_or_create(&dir)?;

    let (serving_cert_pem, serving_key_pem) = match (&opts.cert_file, &opts.key_file) {
        (Some(cert), Some(key)) => (read(cert)?, read(key)?),
        (None, None) => ensure_named_leaf(
            &dir,
            "apiserver",
            &ca,
            &serving_sans(&opts.extra_sans),
            "kube-apiserver",
            vec![ExtendedKeyUsagePurpose::ServerAuth],
        )?,
        _ => bail!("--tls-cert-file and --tls-private-key-file must be given together"),
    };
    let client_ca_pem = match &opts.client_ca_file {
        Some(path) => read(path)?,
        None => ca.cert_pem.clone(),
    };
    let (admin_cert_pem, admin_key_pem) = ensure_leaf(
        &dir,
        "admin",
        &ca,
        |_| false,
        || {
            let mut params = leaf_params(Vec::new())?;
            params.distinguished_name = name(&[
                (DnType::CommonName, ADMIN_USER),
                (DnType::OrganizationName, ADMIN_GROUP),
            ]);
            params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
            Ok(params)
        },
    )?;

    let server_ca_pem = if opts.cert_file.is_some() {
        issuers_of(&serving_cert_pem, &[&ca.cert_pem, &client_ca_pem, &serving_cert_pem])?
            .unwrap_or_else(|| {
                tracing::warn!("no known CA issued the --tls-cert-file certificate; the admin kubeconfig will trust the cluster CA only");
                ca.cert_pem.clone()
            })
    } else {
        ca.cert_pem.clone()
    };
    // Fail at start, not at the first handshake, when a file holds no certificate.
    for (what, pem) in [
        ("serving certificate", &serving_cert_pem),
        ("client CA", &client_ca_pem),
    ] {
        if parse_certs(pem)?.is_empty() {
            bail!("the {what} file holds no PEM certificate");
        }
    }
    // Replicas authenticate each other with one certificate, as server and as client.
    let peer = match opts.peer_sans.is_empty() {
        true => None,
        false => Some(ensure_named_leaf(
            &dir,
            "peer",
            &ca,
            &serving_sans(&opts.peer_sans),
            "apiserver-peer",
            vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth],
        )?),
    };
    Ok(Pki {
        peer,
        ca_pem: ca.cert_pem,
        server_ca_pem,
        serving_cert_pem,
        serving_key_pem,
        client_ca_pem,
        admin_cert_pem,
        admin_key_pem,
    })
}

/// The cluster CA as found in (or written to) the pki directory. The key may be absent when
/// the CA is managed elsewhere; then every leaf must already exist.
struct CaFiles {
    cert_pem: String,
    key_pem: Option<String>,
}

impl CaFiles {
    fn load_or_create(dir: &Path) -> anyhow::Result<Self> {
        let (cert_path, key_path) = (dir.join("ca.crt"), dir.join("ca.key"));
        match (cert_path.exists(), key_path.exists()) {
            (true, has_key) => Ok(Self {
                cert_pem: read(&cert_path)?,
                key_pem: has_key.then(|| read(&key_path)).transpose()?,
            }),
            (false, true) => bail!(
                "{} exists but {} does not",
                key_path.display(),
                cert_path.display()
            ),
            (false, false) => {
                let key = KeyPair::generate()?;
                let mut params = CertificateParams::default();
                params.distinguished_name = name(&[(DnType::CommonName, CA_COMMON_NAME)]);
                params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
                params.key_usages = vec![
                    KeyUsagePurpose::KeyCertSign,
                    KeyUsagePurpose::CrlSign,
                    KeyUsagePurpose::DigitalSignature,
                ];
                set_validity(&mut params, CA_VALIDITY);
                let cert_pem = params.self_signed(&key)?.pem();
                let key_pem = key.serialize_pem();
                write_file(&key_path, &key_pem, true)?;
                write_file(&cert_path, &cert_pem, false)?;
                tracing::info!(dir = %dir.display(), "generated cluster CA");
                Ok(Self {
                    cert_pem,
                    key_pem: Some(key_pem),
                })
            }
        }
    }

    /// Signs `params` for a fresh key; returns (certificate PEM, key PEM).
    fn issue(&self, params: &CertificateParams) -> anyhow::Result<(String, String)> {
        let Some(ca_key_pem) = &self.key_pem else {
            bail!("ca.key is missing, so no certificate can be issued");
        };
        let ca_key = KeyPair::from_pem(ca_key_pem).context("ca.key must be a PKCS#8 PEM key")?;
        let issuer = Issuer::from_ca_cert_pem(&self.cert_pem, ca_key).context("parsing ca.crt")?;
        let key = KeyPair::generate()?;
        Ok((params.signed_by(&key, &issuer)?.pem(), key.serialize_pem()))
    }
}

/// A leaf certificate `dir/<base>.crt` for `sans`, reissued when it lacks one of them.
fn ensure_named_leaf(
    dir: &Path,
    base: &str,
    ca: &CaFiles,
    sans: &[String],
    common_name: &str,
    usages: Vec<ExtendedKeyUsagePurpose>,
) -> anyhow::Result<(String, String)> {
    let lacks_a_name = |cert_pem: &str| match cert_names(cert_pem) {
        Ok(have) => sans
            .iter()
            .any(|want| !have.iter().any(|h| san_eq(h, want))),
        Err(_) => true,
    };
    ensure_leaf(dir, base, ca, lacks_a_name, || {
        let mut params = leaf_params(sans.to_vec())?;
        params.distinguished_name = name(&[(DnType::CommonName, common_name)]);
        params.extended_key_usages = usages;
        Ok(params)
    })
}

/// Reuses `dir/<base>.crt` and `dir/<base>.key` unless either is missing or `reissue` says the
/// certificate no longer fits; otherwise issues one from `params` and writes both files.
fn ensure_leaf(
    dir: &Path,
    base: &str,
    ca: &CaFiles,
    reissue: impl Fn(&str) -> bool,
    params: impl FnOnce() -> anyhow::Result<CertificateParams>,
) -> anyhow::Result<(String, String)> {
    let (cert_path, key_path) = (
        dir.join(format!("{base}.crt")),
        dir.join(format!("{base}.key")),
    );
    if cert_path.exists() && key_path.exists() {
        let cert_pem = read(&cert_path)?;
        if !reissue(&cert_pem) {
            return Ok((cert_pem, read(&key_path)?));
        }
        tracing::info!(cert = %cert_path.display(), "reissuing: the certificate lacks a requested name");
    }
    let (cert_pem, key_pem) = ca.issue(&params()?)?;
    write_file(&key_path, &key_pem, true)?;
    write_file(&cert_path, &cert_pem, false)?;
    tracing::info!(cert = %cert_path.display(), "generated certificate");
    Ok((cert_pem, key_pem))
}

fn serving_sans(extra: &[String]) -> Vec<String> {
    let mut sans: Vec<String> = Vec::new();
    let extra = extra
        .iter()
        .map(|s| s.trim().trim_start_matches('[').trim_end_matches(']'));
    for san in DEFAULT_SANS.iter().copied().chain(extra) {
        let unspecified = san.parse::<IpAddr>().is_ok_and(|ip| ip.is_unspecified());
        if !san.is_empty() && !unspecified && !sans.iter().any(|s| san_eq(s, san)) {
            sans.push(san.to_string());
        }
    }
    sans
}

/// Compares two names: IP addresses by value, DNS names case-insensitively.
fn san_eq(a: &str, b: &str) -> bool {
    match (a.parse::<IpAddr>(), b.parse::<IpAddr>()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a.eq_ignore_ascii_case(b),
    }
}

fn leaf_params(sans: Vec<String>) -> anyhow::Result<CertificateParams> {
    let mut params = CertificateParams::new(sans).context("invalid subject alternative name")?;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.use_authority_key_identifier_extension = true;
    set_validity(&mut params, LEAF_VALIDITY);
    Ok(params)
}

fn set_validity(params: &mut CertificateParams, validity: Duration) {
    let now = SystemTime::now();
    params.not_before = (now - BACKDATE).into();
    params.not_after = (now + validity).into();
}

fn name(parts: &[(DnType, &str)]) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    for (ty, value) in parts {
        dn.push(ty.clone(), *value);
    }
    dn
}

/// The DNS names and IP addresses in the first certificate's subject alternative names.
fn cert_names(cert_pem: &str) -> anyhow::Result<Vec<String>> {
    let certs = parse_certs(cert_pem)?;
    let der = certs.first().context("no certificate")?;
    let (_, cert) = X509Certificate::from_der(der)?;
    let mut names = Vec::new();
    if let Some(ext) = cert.subject_alternative_name()? {
        for gn in &ext.value.general_names {
            match gn {
                GeneralName::DNSName(dns) => names.push(dns.to_string()),
                GeneralName::IPAddress(b) => match b.len() {
                    4 => names.push(IpAddr::from(<[u8; 4]>::try_from(*b)?).to_string()),
                    16 => names.push(IpAddr::from(<[u8; 16]>::try_from(*b)?).to_string()),
                    _ => {}
                },
                _ => {}
            }
        }
    }
    Ok(names)
}

/// The certificates among `candidates` (PEM bundles) that signed some certificate of
/// `chain_pem`, as one PEM bundle, or `None` when there are none.
fn issuers_of(chain_pem: &str, candidates: &[&str]) -> anyhow::Result<Option<String>> {
    let chain_der = parse_certs(chain_pem)?;
    let mut chain = Vec::new();
    for der in &chain_der {
        chain.push(X509Certificate::from_der(der)?.1);
    }
    let mut found: Vec<CertificateDer<'static>> = Vec::new();
    for bundle in candidates {
        for der in parse_certs(bundle)? {
            let (_, ca) = X509Certificate::from_der(&der)?;
            let signed = |cert: &X509Certificate| {
                cert.issuer().as_raw() == ca.subject().as_raw()
                    && cert.verify_signature(Some(ca.public_key())).is_ok()
            };
            if chain.iter().any(signed) && !found.contains(&der) {
                found.push(der);
            }
        }
    }
    if found.is_empty() {
        return Ok(None);
    }
    Ok(Some(
        found
            .iter()
            .map(|der| pem_encode("CERTIFICATE", der))
            .collect(),
    ))
}

/// Every certificate in a PEM bundle, in order.
pub(crate) fn parse_certs(pem: &str) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    rustls_pemfile::certs(&mut pem.as_bytes())
        .collect::<Result<_, _>>()
        .context("reading PEM certificates")
}

fn pem_encode(label: &str, der: &[u8]) -> String {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).expect("base64 is ASCII"));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

fn read(path: &Path) -> anyhow::Result<String> {
    fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

/// `DATA_DIR/pki/sa.key`, generated unless it exists: the key service-account tokens are
/// signed with when `--service-account-signing-key-file` is not given.
pub fn ensure_service_account_key(data_dir: &Path) -> anyhow::Result<PathBuf> {
    let path = data_dir.join("pki").join("sa.key");
    if !path.exists() {
        let pem = access::serviceaccount::keys::generate().map_err(anyhow::Error::msg)?;
        fs::create_dir_all(data_dir.join("pki"))?;
        write_file(&path, &pem, true)?;
    }
    Ok(path)
}

/// Writes `contents` to `path` through a temporary file and a rename, so a crash never
/// leaves a half-written file; private files get mode 0600.
pub(crate) fn write_file(path: &Path, contents: &str, private: bool) -> anyhow::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let _ = fs::remove_file(&tmp);
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(if private { 0o600 } else { 0o644 })
        .open(&tmp)
        .with_context(|| format!("creating {}", tmp.display()))?;
    file.write_all(contents.as_bytes())?;
    file.sync_all()?;
    fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    pub(crate) fn temp_dir(tag: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("apiserver-tls-{tag}-{}", uuid::Uuid::new_v4()));
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn subject(cert_pem: &str) -> (Vec<String>, Vec<String>, bool) {
        let der = parse_certs(cert_pem).unwrap().remove(0);
        let (_, cert) = X509Certificate::from_der(&der).unwrap();
        let cn = cert
            .subject()
            .iter_common_name()
            .map(|a| a.as_str().unwrap().to_string())
            .collect();
        let o = cert
            .subject()
            .iter_organization()
            .map(|a| a.as_str().unwrap().to_string())
            .collect();
        (cn, o, cert.is_ca())
    }

    #[test]
    fn generates_then_reuses() {
        let dir = temp_dir("pki");
        let opts = TlsOptions {
            extra_sans: vec![
                "10.1.2.3".into(),
                "0.0.0.0".into(),
                "api.example.com".into(),
            ],
            ..Default::default()
        };
        let pki = ensure_pki(&dir, &opts).unwrap();
        for f in [
            "ca.crt",
            "ca.key",
            "apiserver.crt",
            "apiserver.key",
            "admin.crt",
            "admin.key",
        ] {
            let mode = fs::metadata(dir.join("pki").join(f))
                .unwrap()
                .permissions()
                .mode()
                & 0o777;
            assert_eq!(mode, if f.ends_with(".key") { 0o600 } else { 0o644 }, "{f}");
        }
        assert_eq!(
            subject(&pki.ca_pem),
            (vec!["kubernetes".into()], vec![], true)
        );
        assert_eq!(
            subject(&pki.admin_cert_pem),
            (vec![ADMIN_USER.into()], vec![ADMIN_GROUP.into()], false)
        );
        let names = cert_names(&pki.serving_cert_pem).unwrap();
        for want in [
            "localhost",
            "127.0.0.1",
            "::1",
            "10.1.2.3",
            "api.example.com",
        ] {
            assert!(
                names.iter().any(|n| n == want),
                "{want} missing from {names:?}"
            );
        }
        assert!(!names.iter().any(|n| n == "0.0.0.0"));
        assert_eq!(pki.client_ca_pem, pki.ca_pem);
        assert_eq!(pki.server_ca_pem, pki.ca_pem);
        assert!(!format!("{pki:?}").contains("PRIVATE KEY"));

        let again = ensure_pki(&dir, &opts).unwrap();
        assert_eq!(again.ca_pem, pki.ca_pem);
        assert_eq!(again.serving_cert_pem, pki.serving_cert_pem);
        assert_eq!(again.admin_key_pem, pki.admin_key_pem);

        // A new name reissues only the serving certificate, from the same CA.
        let more = TlsOptions {
            extra_sans: vec!["lb.example.com".into()],
            ..Default::default()
        };
        let third = ensure_pki(&dir, &more).unwrap();
        assert_eq!(third.ca_pem, pki.ca_pem);
        assert_eq!(third.admin_cert_pem, pki.admin_cert_pem);
        assert_ne!(third.serving_cert_pem, pki.serving_cert_pem);
        assert!(cert_names(&third.serving_cert_pem)
            .unwrap()
            .iter()
            .any(|n| n == "lb.example.com"));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn peer_certificate_only_for_cluster_members() {
        let dir = temp_dir("peer");
        assert!(ensure_pki(&dir, &TlsOptions::default()).unwrap().peer.is_none());
        let opts = TlsOptions { peer_sans: vec!["node-2.internal".into()], ..Default::default() };
        let pki = ensure_pki(&dir, &opts).unwrap();
        let (cert, _) = pki.peer.expect("a peer certificate");
        let names = cert_names(&cert).unwrap();
        assert!(names.iter().any(|n| n == "node-2.internal") && names.iter().any(|n| n == "127.0.0.1"), "{names:?}");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn overrides_are_used() {
        let other = temp_dir("other");
        let other_pki = ensure_pki(&other, &TlsOptions::default()).unwrap();
        let dir = temp_dir("override");
        let opts = TlsOptions {
            cert_file: Some(other.join("pki/apiserver.crt")),
            key_file: Some(other.join("pki/apiserver.key")),
            client_ca_file: Some(other.join("pki/ca.crt")),
            ..Default::default()
        };
        let pki = ensure_pki(&dir, &opts).unwrap();
        assert_eq!(pki.serving_cert_pem, other_pki.serving_cert_pem);
        assert_eq!(pki.client_ca_pem, other_pki.ca_pem);
        assert_eq!(pki.server_ca_pem, other_pki.ca_pem);
        assert_ne!(pki.ca_pem, other_pki.ca_pem);
        assert!(!dir.join("pki/apiserver.crt").exists());

        let half = TlsOptions {
            cert_file: opts.cert_file.clone(),
            ..Default::default()
        };
        assert!(ensure_pki(&dir, &half).is_err());
        fs::remove_dir_all(&dir).unwrap();
        fs::remove_dir_all(&other).unwrap();
    }
}
