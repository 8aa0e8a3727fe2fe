//! Reloading `--authorization-config`: the file is read again when it changes
//! ([`crate::file_watch`]); a new configuration that parses, validates and keeps the
//! same non-webhook authorizers replaces the chain, any other is refused with a log line and
//! counted, and the chain in place stays.

use std::path::PathBuf;

use sha2::{Digest, Sha256};

use super::config::{self, Config};
use super::{Chain, Factory};

/// What a reload compares against and builds with.
pub struct Reloader {
    path: PathBuf,
    last_data: Vec<u8>,
    last_config: Config,
    factory: Factory,
    chain: Chain,
    /// `sha256:...` of this server's identity, as the metrics label it.
    apiserver_id_hash: String,
}

impl Reloader {
    pub fn new(path: PathBuf, data: Vec<u8>, config: Config, factory: Factory, chain: Chain, node_id: u64) -> Reloader {
        let apiserver_id_hash = format!("sha256:{:x}", Sha256::digest(format!("apiserver-{node_id}")));
        Reloader { path, last_data: data, last_config: config, factory, chain, apiserver_id_hash }
    }

    /// Reads the file and, if it says something new, puts it in place. Returns what happened,
    /// for the log and the tests.
    pub fn check(&mut self) -> Result<bool, String> {
        let data = std::fs::read(&self.path).map_err(|e| format!("reading {}: {e}", self.path.display()))?;
        if data == self.last_data {
            return Ok(false);
        }
        self.last_data = data.clone();
        let config = config::parse(&data)?;
        if config == self.last_config {
            return Ok(false);
        }
        let (before, after) = (self.last_config.fixed_modes(), config.fixed_modes());
        if before != after {
            let names = |m: &[config::Mode]| m.iter().map(|m| m.as_str()).collect::<Vec<_>>().join(", ");
            return Err(format!(
                "the non-webhook authorizers may not change on reload (started with [{}], the file now has [{}])",
                names(&before),
                names(&after)
            ));
        }
        let authorizers = self.factory.build(&config)?;
        self.chain.replace(authorizers);
        self.last_config = config;
        Ok(true)
    }
}

/// Watches the file until the process ends.
pub fn spawn(mut reloader: Reloader) {
    crate::file_watch::spawn(reloader.path.clone(), move || {
        let metrics = reloader.chain.metrics.clone();
        match reloader.check() {
            Ok(false) => {}
            Ok(true) => {
                tracing::info!(file = %reloader.path.display(), "reloaded the authorization configuration");
                metrics.authorization_config_reload(true, &reloader.apiserver_id_hash);
            }
            Err(e) => {
                tracing::error!(file = %reloader.path.display(), error = %e, "refused to reload the authorization configuration; the previous one stays");
                metrics.authorization_config_reload(false, &reloader.apiserver_id_hash);
            }
        }
    });
}
