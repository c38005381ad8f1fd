//! What protects the control endpoint: the token file (created on first
//! start when none is given) and the certificate (self-signed on first
//! start when none is given).

use std::path::PathBuf;

use super::{ControlConfig, ControlError, DEFAULT_STATE_DIR};

fn state_dir(config: &ControlConfig) -> PathBuf {
    config
        .state_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(DEFAULT_STATE_DIR))
}

/// The token file in force: the configured one, or `state_dir/control.tokens`
/// (created with one `* <token> read,control` line if missing).
pub(super) fn tokens(config: &ControlConfig) -> Result<httpkit::tokens::TokenFile, ControlError> {
    Ok(httpkit::token_init::control_tokens(
        config.token_file.as_deref(),
        &state_dir(config).join("control.tokens"),
        "streamgauge inline",
        "--control-token-file",
    )?)
}

/// The endpoint's certificate (`None` with `plain_http`).
pub(super) fn tls(config: &ControlConfig) -> Result<Option<httpkit::tls::ServerTls>, ControlError> {
    if config.plain_http {
        return Ok(None);
    }
    let configured = config.tls.as_ref().map(|(c, k)| (c.as_path(), k.as_path()));
    Ok(Some(httpkit::tls::control_certificate(
        configured,
        &state_dir(config).join("tls"),
        &[],
        "streamgauge inline",
        "--control-tls-cert",
    )?))
}
