//! TLS on the collection port (the TLS extension): certificate loading and
//! the rustls acceptor.
//!
//! TLS and plain OMSP share one port: [`crate::transport`] looks at the
//! first byte a client sends and hands TLS handshakes to the acceptor built
//! here, everything else to the plain OMSP path.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

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

/// Why TLS could not be set up (the project's one PEM loader's errors).
pub use httpkit::tls::TlsError;

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
        let certs = httpkit::tls::load_chain(&settings.cert)?;
        let key = httpkit::tls::load_key(&settings.key)?;
        let mut config = httpkit::tls::server_config(certs, key, &settings.cert, &settings.key)?;
        // The server never writes after the handshake: no session tickets.
        config.send_tls13_tickets = 0;
        Ok(Tls {
            acceptor: TlsAcceptor::from(Arc::new(config)),
            required: settings.required,
            handshake_timeout: settings.handshake_timeout,
        })
    }
}
