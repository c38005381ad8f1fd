//! `streamgauge server` flags for the security extensions: token
//! authentication per domain and TLS on the collection port.

use std::path::PathBuf;

use ::server::{AuthSettings, Server, TlsSettings};
use anyhow::{bail, Result};
use clap::Args;

use super::file::FileConfig;
use super::parse;

/// Token authentication and TLS (all off by default, as in the reference).
#[derive(Debug, Args)]
pub struct SecurityArgs {
    /// Token file: '<domain> <token> [scopes]' lines (token may be 'sha256:<hex>'; scopes: collect (default), read, control, comma-separated; read lines may use a glob as domain, control lines '*'). Clients of a listed domain must send a matching 'x-streamgauge-auth' header key; HTTP clients send 'Authorization: Bearer <token>'. Re-read on SIGHUP.
    #[arg(long, value_name = "FILE")]
    pub auth_file: Option<PathBuf>,
    /// Also refuse clients of domains the --auth-file does not list.
    #[arg(long)]
    pub auth_required: bool,
    /// PEM certificate chain: accept TLS on the listening port(s), beside plaintext.
    #[arg(long, value_name = "PEM", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Refuse plaintext clients (needs --tls-cert and --tls-key).
    #[arg(long)]
    pub tls_required: bool,
}

impl SecurityArgs {
    /// Command line over the file's `auth-*` and `tls-*` keys; off by default.
    pub fn resolve(
        &self,
        file: &FileConfig,
    ) -> Result<(Option<AuthSettings>, Option<TlsSettings>)> {
        let path = |flag: &Option<PathBuf>, key: &str| {
            flag.clone().or_else(|| file.get(key).map(PathBuf::from))
        };
        let switch = |flag: bool, key: &str| -> Result<bool> {
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
