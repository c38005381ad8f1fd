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
    if let Some(p) = &config.token_file {
        return httpkit::tokens::TokenFile::load(p)
            .map_err(|e| ControlError::Tokens(httpkit::token_init::TokenInitError::Load(e)));
    }
    let path = state_dir(config).join("control.tokens");
    let init = httpkit::token_init::load_or_create(&path, "*", "read,control")?;
    if init.created {
        eprintln!(
            "streamgauge inline: no --control-token-file given; created {} with a control token \
             (clients: --token-file {})",
            path.display(),
            path.display()
        );
        tracing::warn!(path = %path.display(), "control token file created");
    }
    Ok(init.tokens)
}

/// The endpoint's certificate (`None` with `plain_http`).
pub(super) fn tls(config: &ControlConfig) -> Result<Option<httpkit::tls::ServerTls>, ControlError> {
    if config.plain_http {
        return Ok(None);
    }
    let tls = match &config.tls {
        Some((cert, key)) => httpkit::tls::ServerTls::load(cert, key)?,
        None => {
            let made = httpkit::tls::self_signed(&state_dir(config).join("tls"), &[])?;
            let tls = httpkit::tls::ServerTls::load(&made.cert, &made.key)?;
            if made.created {
                eprintln!(
                    "streamgauge inline: no --control-tls-cert given; created a self-signed \
                     certificate {} with SHA-256 fingerprint {} (pin it in the manager)",
                    made.cert.display(),
                    tls.fingerprint
                );
            }
            tls
        }
    };
    tracing::info!(fingerprint = %tls.fingerprint, "control endpoint certificate");
    Ok(Some(tls))
}
