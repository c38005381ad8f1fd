//! `streamgauge server` flags for the security extensions: token
//! authentication per domain and TLS on the collection port.

use std::path::PathBuf;

use ::server::run::security::SecurityOptions;
use clap::Args;

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

impl From<&SecurityArgs> for SecurityOptions {
    fn from(a: &SecurityArgs) -> Self {
        SecurityOptions {
            auth_file: a.auth_file.clone(),
            auth_required: a.auth_required,
            tls_cert: a.tls_cert.clone(),
            tls_key: a.tls_key.clone(),
            tls_required: a.tls_required,
        }
    }
}
