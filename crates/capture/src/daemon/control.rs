//! What protects the control API: the token file (created on first start
//! when none is configured) and the TLS certificate (self-signed on first
//! start when none is configured).

use super::{DaemonConfig, DaemonError};

/// The token file in force, created with one `* <token> read,control`
/// line when the configuration names none and it does not exist yet.
pub(super) fn tokens(config: &DaemonConfig) -> Result<httpkit::tokens::TokenFile, DaemonError> {
    Ok(httpkit::token_init::control_tokens(
        config.token_file.as_deref(),
        &config.effective_token_file(),
        "streamgauge capture",
        "token_file",
    )?)
}

/// The certificate of the control API (`None` with `plain_http`).
pub(super) fn tls(config: &DaemonConfig) -> Result<Option<httpkit::tls::ServerTls>, DaemonError> {
    if config.plain_http {
        return Ok(None);
    }
    let configured = config.tls_cert.as_deref().zip(config.tls_key.as_deref());
    Ok(Some(httpkit::tls::control_certificate(
        configured,
        &config.data_dir.join(".control").join("tls"),
        &[super::hostname()],
        "streamgauge capture",
        "tls_cert",
    )?))
}
