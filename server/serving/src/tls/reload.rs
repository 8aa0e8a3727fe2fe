//! Certificates that change on disk take effect without a restart, as kube-apiserver's dynamic
//! certificates do: the serving certificate and key, the SNI certificates, the client CA and the
//! request-header (proxy) CA are read again every second; when any file changed and the new set
//! builds a configuration, new handshakes use it. Established connections keep the session they
//! have. A set that does not build (a certificate written before its key, say) is reported once
//! and the configuration in force stays.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use anyhow::Context;

use super::config::{server_config, Material, Tls, TlsFlags};
use super::sni::{SniCertKey, SniPem};

/// How often the files are looked at.
const RELOAD_INTERVAL: Duration = Duration::from_secs(1);

/// The files the TLS configuration is read from.
#[derive(Debug, Clone)]
pub struct Sources {
    pub serving_cert: PathBuf,
    pub serving_key: PathBuf,
    pub client_ca: PathBuf,
    pub proxy_ca: Option<PathBuf>,
    pub sni: Vec<SniCertKey>,
}

impl Sources {
    fn paths(&self) -> Vec<&PathBuf> {
        let sni = self.sni.iter().flat_map(|s| [&s.cert_file, &s.key_file]);
        [&self.serving_cert, &self.serving_key, &self.client_ca].into_iter().chain(&self.proxy_ca).chain(sni).collect()
    }

    fn material(&self, contents: &[String]) -> Material {
        let mut files = contents.iter().cloned();
        let mut next = || files.next().unwrap_or_default();
        let (serving_cert_pem, serving_key_pem, client_ca_pem) = (next(), next(), next());
        let proxy_ca_pem = self.proxy_ca.as_ref().map(|_| next());
        let sni = self.sni.iter().map(|s| SniPem { cert_pem: next(), key_pem: next(), patterns: s.patterns.clone() }).collect();
        Material { serving_cert_pem, serving_key_pem, client_ca_pem, proxy_ca_pem, sni }
    }

    /// The configuration the files hold now.
    pub fn load(&self, flags: &TlsFlags) -> anyhow::Result<Tls> {
        let paths: Vec<PathBuf> = self.paths().into_iter().cloned().collect();
        server_config(&self.material(&read_all(&paths)?), flags)
    }
}

/// The TLS configuration in force; each new connection takes the current one.
pub struct DynamicTls {
    current: RwLock<Arc<Tls>>,
}

impl DynamicTls {
    /// A configuration that never changes.
    pub fn fixed(tls: Tls) -> Arc<DynamicTls> {
        Arc::new(DynamicTls { current: RwLock::new(Arc::new(tls)) })
    }

    pub fn current(&self) -> Arc<Tls> {
        self.current.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn replace(&self, tls: Tls) {
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(tls);
    }

    /// Loads `sources` and keeps following them for as long as the returned task runs.
    pub fn follow(sources: Sources, flags: TlsFlags) -> anyhow::Result<(Arc<DynamicTls>, tokio::task::JoinHandle<()>)> {
        let dynamic = DynamicTls::fixed(sources.load(&flags)?);
        let this = dynamic.clone();
        let paths = sources.paths().into_iter().cloned().collect();
        let task = follow_files(paths, "serving certificates", move |contents| {
            this.replace(server_config(&sources.material(contents), &flags)?);
            Ok(())
        })?;
        Ok((dynamic, task))
    }
}

/// Every file's contents, in order.
fn read_all(paths: &[PathBuf]) -> anyhow::Result<Vec<String>> {
    paths.iter().map(|p| std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))).collect()
}

/// Reads `paths` every second and, when their contents changed, hands them (in order) to
/// `apply`; a set `apply` refuses is reported once and tried again only once it changes.
pub fn follow_files(
    paths: Vec<PathBuf>,
    what: &'static str,
    apply: impl Fn(&[String]) -> anyhow::Result<()> + Send + 'static,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    let read = move || read_all(&paths);
    let mut seen = read()?;
    Ok(tokio::spawn(async move {
        let mut refused: Option<Vec<String>> = None;
        loop {
            tokio::time::sleep(RELOAD_INTERVAL).await;
            // A file being replaced may be missing for a moment.
            let Ok(now) = read() else { continue };
            if now == seen || refused.as_ref() == Some(&now) {
                continue;
            }
            match apply(&now) {
                Ok(()) => {
                    tracing::info!(what, "certificates reloaded");
                    seen = now;
                    refused = None;
                }
                Err(err) => {
                    tracing::warn!(what, error = format!("{err:#}"), "changed certificates not loaded; the previous ones stay in force");
                    refused = Some(now);
                }
            }
        }
    }))
}
