//! Reloading `--authentication-config` when it changes ([`crate::file_watch`]): a new file that
//! parses and validates replaces the JWT authenticators (once their issuers' keys are fetched,
//! or after [`READY_WAIT`]) and the anonymous settings; any other is refused with a log line
//! saying why, and the configuration in place stays.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use super::config::{self, Anonymous};
use super::jwt::{JwtAuthenticator, Jwts};

/// How long new authenticators get to fetch their keys before they replace the old ones anyway.
const READY_WAIT: Duration = Duration::from_secs(10);

pub struct Reloader {
    pub path: PathBuf,
    /// The file as last read.
    pub data: Vec<u8>,
    pub sa_issuers: Vec<String>,
    pub jwts: Arc<Jwts>,
    pub anonymous: Arc<RwLock<Anonymous>>,
    /// Anonymous access when the file has no `anonymous` section.
    pub default_anonymous: Anonymous,
    /// Whether `--anonymous-auth` was given (then the file may not have the section).
    pub flag_set: bool,
}

impl Reloader {
    /// Reads the file; a new valid configuration is put in place (in the background, once its
    /// issuers answer). Returns whether it changed, or why it was refused.
    fn check(&mut self, generation: Arc<AtomicU64>) -> Result<bool, String> {
        let data = std::fs::read(&self.path).map_err(|e| format!("reading {}: {e}", self.path.display()))?;
        if data == self.data {
            return Ok(false);
        }
        self.data = data;
        let parsed = config::parse(&self.data, &self.sa_issuers)?;
        if parsed.anonymous.is_some() && self.flag_set {
            return Err("anonymous is configured in the authentication configuration file and --anonymous-auth flag is set".into());
        }
        let anonymous = parsed.anonymous.unwrap_or_else(|| self.default_anonymous.clone());
        let authenticators: Vec<JwtAuthenticator> = parsed.jwt.into_iter().map(JwtAuthenticator::start).collect();
        let mine = generation.fetch_add(1, Ordering::SeqCst) + 1;
        let (jwts, target) = (self.jwts.clone(), self.anonymous.clone());
        tokio::spawn(async move {
            let started = Instant::now();
            while !authenticators.iter().all(JwtAuthenticator::ready) && started.elapsed() < READY_WAIT {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            // A later reload wins over this one.
            if generation.load(Ordering::SeqCst) == mine {
                let issuers: Vec<&str> = authenticators.iter().map(JwtAuthenticator::issuer).collect();
                tracing::info!(?issuers, "the reloaded JWT authenticators are in place");
                jwts.replace(authenticators);
                *target.write().unwrap_or_else(|p| p.into_inner()) = anonymous;
            }
        });
        Ok(true)
    }
}

/// Watches the file until the process ends.
pub fn spawn(mut reloader: Reloader) {
    let generation = Arc::new(AtomicU64::new(0));
    crate::file_watch::spawn(reloader.path.clone(), move || match reloader.check(generation.clone()) {
        Ok(false) => {}
        Ok(true) => tracing::info!(file = %reloader.path.display(), "reloading the authentication configuration"),
        Err(e) => tracing::error!(file = %reloader.path.display(), error = %e, "refused to reload the authentication configuration; the previous one stays"),
    });
}
