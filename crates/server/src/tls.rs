//! TLS on the collection port (the TLS extension): certificate loading and
//! the rustls acceptor.
//!
//! TLS and plain OMSP share one port: [`crate::transport`] looks at the
//! first byte a client sends and hands TLS handshakes to the acceptor built
//! here, everything else to the plain OMSP path.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{self, crypto::ring};
use tokio_rustls::TlsAcceptor;

/// Default time a client gets to complete the TLS handshake.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// What the server is told about TLS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSettings {
    /// PEM file with the certificate chain, leaf first (`--tls-cert`).
    pub cert: PathBuf,
    /// PEM file with the private key: PKCS#8, PKCS#1 or SEC1 (`--tls-key`).
    pub key: PathBuf,
    /// Refuse clients that do not start a TLS handshake (`--tls-required`).
    pub required: bool,
    /// A client that has not completed its handshake by then is dropped.
    pub handshake_timeout: Duration,
}

impl TlsSettings {
    /// TLS with this certificate and key, plaintext still accepted.
    pub fn new(cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> TlsSettings {
        TlsSettings {
            cert: cert.into(),
            key: key.into(),
            required: false,
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
        }
    }
}

/// Why TLS could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read.
    #[error("TLS {what} {path}: {source}")]
    Read {
        /// `certificate` or `key`.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The system error.
        source: std::io::Error,
    },
    /// The private key's group or others may read it (`chmod 600`).
    #[error("TLS key {0}")]
    Exposed(#[from] httpkit::secret::SecretFileError),
    /// A file is not valid PEM, or holds nothing of the expected kind.
    #[error("TLS {what} {path}: {reason}")]
    Pem {
        /// `certificate` or `key`.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// rustls refused the pair (for example a key that does not match the
    /// certificate, or an unsupported key type).
    #[error("TLS certificate {cert} with key {key}: {source}")]
    Config {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
        /// rustls's reason.
        source: rustls::Error,
    },
}

/// A loaded TLS setup, shared by the acceptors.
#[derive(Clone)]
pub struct Tls {
    /// Performs server handshakes.
    pub acceptor: TlsAcceptor,
    /// Refuse plaintext clients.
    pub required: bool,
    /// Bound on the handshake.
    pub handshake_timeout: Duration,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("required", &self.required)
            .field("handshake_timeout", &self.handshake_timeout)
            .finish_non_exhaustive()
    }
}

impl Tls {
    /// Reads the certificate chain and key and builds the acceptor
    /// (TLS 1.2 and 1.3, ring crypto, no client certificates).
    pub fn load(settings: &TlsSettings) -> Result<Tls, TlsError> {
        let certs = load_certs(&settings.cert)?;
        let key = load_key(&settings.key)?;
        let config_err = |source| TlsError::Config {
            cert: settings.cert.clone(),
            key: settings.key.clone(),
            source,
        };
        let mut config =
            rustls::ServerConfig::builder_with_provider(Arc::new(ring::default_provider()))
                .with_safe_default_protocol_versions()
                .map_err(config_err)?
                .with_no_client_auth()
                .with_single_cert(certs, key)
                .map_err(config_err)?;
        // The server never writes after the handshake: no session tickets.
        config.send_tls13_tickets = 0;
        Ok(Tls {
            acceptor: TlsAcceptor::from(Arc::new(config)),
            required: settings.required,
            handshake_timeout: settings.handshake_timeout,
        })
    }
}

fn read(what: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        what,
        path: path.to_owned(),
        source,
    })
}

fn pem_err(what: &'static str, path: &Path, reason: impl ToString) -> TlsError {
    TlsError::Pem {
        what,
        path: path.to_owned(),
        reason: reason.to_string(),
    }
}

fn load_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem = read("certificate", path)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_err("certificate", path, e))?;
    if certs.is_empty() {
        return Err(pem_err(
            "certificate",
            path,
            "no CERTIFICATE block found (want PEM)",
        ));
    }
    Ok(certs)
}

/// Reads the private key; a file that holds one must be owner-only (a
/// certificate given as the key is reported as that, not as exposed).
fn load_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let pem = read("key", path)?;
    let key = PrivateKeyDer::from_pem_slice(&pem).map_err(|e| match e {
        rustls::pki_types::pem::Error::NoItemsFound => pem_err(
            "key",
            path,
            "no PRIVATE KEY block found (want PEM: PKCS#8, PKCS#1 or SEC1)",
        ),
        e => pem_err("key", path, e),
    })?;
    httpkit::secret::check_private(path)?;
    Ok(key)
}
