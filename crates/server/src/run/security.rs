//! `streamgauge server`'s settings for the security extensions: token
//! authentication per domain and TLS on the collection port.

use std::path::PathBuf;

use super::file::FileConfig;
use super::{parse, RunError};
use crate::{AuthSettings, Server, TlsSettings};

/// Token authentication and TLS flags (all off by default, as in the
/// reference). Each field is the flag of the same name.
#[derive(Debug, Clone, Default)]
pub struct SecurityOptions {
    /// `--auth-file`: the token file.
    pub auth_file: Option<PathBuf>,
    /// `--auth-required`: refuse domains the token file does not list.
    pub auth_required: bool,
    /// `--tls-cert`: PEM certificate chain.
    pub tls_cert: Option<PathBuf>,
    /// `--tls-key`: its PEM private key.
    pub tls_key: Option<PathBuf>,
    /// `--tls-required`: refuse plaintext clients.
    pub tls_required: bool,
}

impl SecurityOptions {
    /// Command line over the file's `auth-*` and `tls-*` keys; off by default.
    pub fn resolve(
        &self,
        file: &FileConfig,
    ) -> Result<(Option<AuthSettings>, Option<TlsSettings>), RunError> {
        let path = |flag: &Option<PathBuf>, key: &str| {
            flag.clone().or_else(|| file.get(key).map(PathBuf::from))
        };
        let switch = |flag: bool, key: &str| -> Result<bool, RunError> {
            match (flag, file.get(key)) {
                (true, _) => Ok(true),
                (false, Some(v)) => parse(key, v),
                (false, None) => Ok(false),
            }
        };
        let auth_required = switch(self.auth_required, "auth-required")?;
        let auth = match path(&self.auth_file, "auth-file") {
            Some(file) => Some(AuthSettings {
                file,
                required: auth_required,
            }),
            None if auth_required => bail!("auth-required needs an auth-file"),
            None => None,
        };
        let tls_required = switch(self.tls_required, "tls-required")?;
        let tls = match (
            path(&self.tls_cert, "tls-cert"),
            path(&self.tls_key, "tls-key"),
        ) {
            (Some(cert), Some(key)) => Some(TlsSettings {
                required: tls_required,
                ..TlsSettings::new(cert, key)
            }),
            (None, None) if tls_required => bail!("tls-required needs tls-cert and tls-key"),
            (None, None) => None,
            (Some(_), None) => bail!("tls-cert needs tls-key"),
            (None, Some(_)) => bail!("tls-key needs tls-cert"),
        };
        Ok((auth, tls))
    }
}

/// Re-reads the token file (on SIGHUP), logging the outcome.
pub fn reload_auth(server: &Server) {
    match server.reload_auth() {
        Ok(Some(domains)) => tracing::info!(domains, "auth file re-read"),
        Ok(None) => {}
        Err(e) => {
            tracing::error!(error = %e, "auth file not re-read; previous tokens stay in force")
        }
    }
}
