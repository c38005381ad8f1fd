//! What protects the control API: the token file (created on first start
//! when none is configured) and the TLS certificate (self-signed on first
//! start when none is configured).

use super::{DaemonConfig, DaemonError};

/// The token file in force, created with one `* <token> read,control`
/// line when the configuration names none and it does not exist yet.
pub(super) fn tokens(config: &DaemonConfig) -> Result<httpkit::tokens::TokenFile, DaemonError> {
    let Some(path) = config.token_file.as_deref() else {
        let path = config.effective_token_file();
        let init = httpkit::token_init::load_or_create(&path, "*", "read,control")?;
        if init.created {
            eprintln!(
                "streamgauge capture: no token_file configured; created {} with a control token \
                 (clients: --token-file {})",
                path.display(),
                path.display()
            );
            tracing::warn!(path = %path.display(), "control token file created");
        }
        return Ok(init.tokens);
    };
    httpkit::tokens::TokenFile::load(path)
        .map_err(|e| DaemonError::Tokens(httpkit::token_init::TokenInitError::Load(e)))
}

/// The certificate of the control API (`None` with `plain_http`).
pub(super) fn tls(config: &DaemonConfig) -> Result<Option<httpkit::tls::ServerTls>, DaemonError> {
    if config.plain_http {
        return Ok(None);
    }
    let tls = match (&config.tls_cert, &config.tls_key) {
        (Some(cert), Some(key)) => httpkit::tls::ServerTls::load(cert, key)?,
        _ => {
            let dir = config.data_dir.join(".control").join("tls");
            let made = httpkit::tls::self_signed(&dir, &[super::hostname()])?;
            let tls = httpkit::tls::ServerTls::load(&made.cert, &made.key)?;
            if made.created {
                eprintln!(
                    "streamgauge capture: no tls_cert configured; created a self-signed \
                     certificate {} with SHA-256 fingerprint {} (pin it in the manager)",
                    made.cert.display(),
                    tls.fingerprint
                );
            }
            tls
        }
    };
    tracing::info!(fingerprint = %tls.fingerprint, "control API certificate");
    Ok(Some(tls))
}
