//! TLS for control APIs and for the clients that drive them (rustls with
//! ring, TLS 1.2 and 1.3).
//!
//! Servers: [`ServerTls::load`] reads a PEM certificate chain and key (the
//! key must be owner-only, [`crate::secret`]); [`self_signed`] creates a
//! certificate on a component's first start when the operator gave none,
//! so a control API is never served in clear by default. Either way the
//! component logs the certificate's SHA-256 [`Fingerprint`], which an
//! operator pins in the manager.
//!
//! Clients: [`ClientTls::pinned`] accepts exactly one certificate, named
//! by its fingerprint, whatever its names and dates (the handshake
//! signature is still checked, so only the holder of the key passes);
//! [`ClientTls::ca_file`] checks the chain and the name against the
//! certificates of a PEM file. [`presented_fingerprint`] connects once and
//! tells which certificate a server presents, for first contact.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio_rustls::rustls::client::danger::{
    HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier,
};
use tokio_rustls::rustls::crypto::{ring as ring_provider, CryptoProvider};
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use tokio_rustls::rustls::{self, DigitallySignedStruct, SignatureScheme};
use tokio_rustls::TlsAcceptor;

pub use tokio_rustls::rustls::ClientConfig;

/// Time a client gets to complete the TLS handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The SHA-256 of a certificate's DER encoding.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint(pub [u8; 32]);

impl Fingerprint {
    /// The fingerprint of a DER certificate.
    pub fn of(der: &[u8]) -> Fingerprint {
        let d = ring::digest::digest(&ring::digest::SHA256, der);
        let mut out = [0u8; 32];
        out.copy_from_slice(d.as_ref());
        Fingerprint(out)
    }

    /// Parses 64 hex digits, upper or lower case, with or without `:`
    /// between bytes and an optional `sha256:` or `SHA256 Fingerprint=`
    /// prefix (what `openssl x509 -fingerprint -sha256` prints).
    pub fn parse(text: &str) -> Option<Fingerprint> {
        let t = text.trim();
        let t = t
            .strip_prefix("SHA256 Fingerprint=")
            .or_else(|| t.strip_prefix("sha256 Fingerprint="))
            .or_else(|| t.strip_prefix("sha256:"))
            .unwrap_or(t);
        let hex: String = t.chars().filter(|c| *c != ':').collect();
        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, o) in out.iter_mut().enumerate() {
            *o = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(Fingerprint(out))
    }
}

/// `AB:CD:…` (32 upper-case pairs), as openssl prints it.
impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, b) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(":")?;
            }
            write!(f, "{b:02X}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fingerprint({self})")
    }
}

/// Why TLS could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read or written.
    #[error("TLS {what} {path}: {source}", path = path.display())]
    Io {
        /// `certificate`, `key` or `CA file`.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The system error.
        source: std::io::Error,
    },
    /// The private key's group or others may read it (`chmod 600`).
    #[error("TLS key {0}")]
    Exposed(#[from] crate::secret::SecretFileError),
    /// A file is not valid PEM, or holds nothing of the expected kind.
    #[error("TLS {what} {path}: {reason}", path = path.display())]
    Pem {
        /// `certificate`, `key` or `CA file`.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// rustls refused the setup (an unusable CA, no protocol version).
    #[error("TLS setup: {0}")]
    Config(#[from] rustls::Error),
    /// rustls refused a certificate with its key (a key that does not
    /// match the certificate, an unsupported key type).
    #[error("TLS certificate {cert} with key {key}: {source}", cert = cert.display(), key = key.display())]
    Pair {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
        /// rustls's reason.
        source: rustls::Error,
    },
    /// The self-signed certificate could not be generated.
    #[error("TLS self-signed certificate: {0}")]
    Generate(String),
}

/// A loaded server certificate: the acceptor and what to tell operators.
#[derive(Clone)]
pub struct ServerTls {
    /// Performs server handshakes.
    pub acceptor: TlsAcceptor,
    /// SHA-256 of the leaf certificate, for pinning.
    pub fingerprint: Fingerprint,
    /// Bound on a client's handshake.
    pub handshake_timeout: Duration,
}

impl fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerTls")
            .field("fingerprint", &self.fingerprint)
            .finish_non_exhaustive()
    }
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(ring_provider::default_provider())
}

impl ServerTls {
    /// Reads the PEM certificate chain (leaf first) and private key
    /// (PKCS#8, PKCS#1 or SEC1; owner-only) and builds the acceptor.
    pub fn load(cert: &Path, key: &Path) -> Result<ServerTls, TlsError> {
        let certs = read_certs("certificate", cert)?;
        let fingerprint = Fingerprint::of(&certs[0]);
        let key_der = read_key(key)?;
        let mut config = server_config(certs, key_der, cert, key)?;
        // Control APIs resume nothing: no session tickets to keep.
        config.send_tls13_tickets = 0;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(ServerTls {
            acceptor: TlsAcceptor::from(Arc::new(config)),
            fingerprint,
            handshake_timeout: HANDSHAKE_TIMEOUT,
        })
    }
}

/// A server configuration (TLS 1.2 and 1.3, ring, no client certificates)
/// for a certificate chain and its key, read from the files named (for
/// the error).
pub fn server_config(
    certs: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    cert_file: &Path,
    key_file: &Path,
) -> Result<rustls::ServerConfig, TlsError> {
    rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|source| TlsError::Pair {
            cert: cert_file.to_owned(),
            key: key_file.to_owned(),
            source,
        })
}

/// The certificate of a control API: `configured` (certificate, key) if
/// given, else one made once in `dir` ([`self_signed`], for `names`).
/// A creation is told on standard error with the fingerprint to pin
/// (`who`: the program, `setting`: what names a certificate there); the
/// fingerprint is logged at every start.
pub fn control_certificate(
    configured: Option<(&Path, &Path)>,
    dir: &Path,
    names: &[String],
    who: &str,
    setting: &str,
) -> Result<ServerTls, TlsError> {
    let tls = match configured {
        Some((cert, key)) => ServerTls::load(cert, key)?,
        None => {
            let made = self_signed(dir, names)?;
            let tls = ServerTls::load(&made.cert, &made.key)?;
            if made.created {
                eprintln!(
                    "{who}: no {setting} given; created a self-signed certificate {} with \
                     SHA-256 fingerprint {} (pin it in the manager)",
                    made.cert.display(),
                    tls.fingerprint
                );
            }
            tls
        }
    };
    tracing::info!(fingerprint = %tls.fingerprint, "control API certificate");
    Ok(tls)
}

/// Where a component keeps a certificate it made itself.
#[derive(Debug, Clone)]
pub struct SelfSigned {
    /// The certificate (PEM).
    pub cert: PathBuf,
    /// Its key (PEM, 0600).
    pub key: PathBuf,
    /// Whether this call generated them.
    pub created: bool,
}

/// The certificate `dir/cert.pem` with its key `dir/key.pem`, generated
/// (ECDSA P-256, self-signed, valid for `names` and `localhost`,
/// `127.0.0.1`, `::1`) when the certificate is missing; `dir` is created
/// owner-only. Clients pin it by fingerprint, so the names matter only to
/// clients that check them.
pub fn self_signed(dir: &Path, names: &[String]) -> Result<SelfSigned, TlsError> {
    let cert = dir.join("cert.pem");
    let key = dir.join("key.pem");
    if cert.exists() {
        return Ok(SelfSigned {
            cert,
            key,
            created: false,
        });
    }
    let io = |what, path: &Path| {
        let path = path.to_owned();
        move |source| TlsError::Io { what, path, source }
    };
    crate::token_init::private_dir(dir).map_err(io("directory", dir))?;
    let mut sans: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
    sans.extend(names.iter().filter(|n| !n.is_empty()).cloned());
    sans.dedup();
    let made =
        rcgen::generate_simple_self_signed(sans).map_err(|e| TlsError::Generate(e.to_string()))?;
    // The key first: a certificate without its key would be kept forever.
    crate::secret::write_private(&key, made.key_pair.serialize_pem()).map_err(io("key", &key))?;
    std::fs::write(&cert, made.cert.pem()).map_err(io("certificate", &cert))?;
    Ok(SelfSigned {
        cert,
        key,
        created: true,
    })
}

/// Reads a PEM certificate chain (leaf first); an error names the file and
/// what is wrong. The one PEM reader of the project's TLS listeners.
pub fn load_chain(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    read_certs("certificate", path)
}

/// Reads a PEM private key (PKCS#8, PKCS#1 or SEC1), which must be
/// owner-only ([`crate::secret`]); a certificate given as the key is
/// reported as that, not as exposed.
pub fn load_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    read_key(path)
}

/// The fingerprint of the first certificate in a PEM file (the leaf of a
/// chain), for a client that pins the certificate it was given.
pub fn fingerprint_of_file(path: &Path) -> Result<Fingerprint, TlsError> {
    Ok(Fingerprint::of(&read_certs("certificate", path)?[0]))
}

fn read(what: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Io {
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

fn read_certs(what: &'static str, path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem = read(what, path)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_err(what, path, e))?;
    if certs.is_empty() {
        return Err(pem_err(what, path, "no CERTIFICATE block found (want PEM)"));
    }
    Ok(certs)
}

/// Reads a private key; a file that holds one must be owner-only.
fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let pem = read("key", path)?;
    let key = PrivateKeyDer::from_pem_slice(&pem).map_err(|e| match e {
        rustls::pki_types::pem::Error::NoItemsFound => pem_err(
            "key",
            path,
            "no PRIVATE KEY block found (want PEM: PKCS#8, PKCS#1 or SEC1)",
        ),
        e => pem_err("key", path, e),
    })?;
    crate::secret::check_private(path)?;
    Ok(key)
}

/// How a client decides that it talks to the right server.
#[derive(Clone)]
pub struct ClientTls {
    /// The rustls configuration (shared by connections).
    pub config: Arc<ClientConfig>,
}

impl fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ClientTls")
    }
}

impl ClientTls {
    /// Accepts only the certificate whose SHA-256 is `pin`.
    pub fn pinned(pin: Fingerprint) -> ClientTls {
        ClientTls::with_verifier(Arc::new(PinnedVerifier::new(Some(pin))))
    }

    /// Accepts certificates issued for the server's name by one of the
    /// certificates in the PEM file `path`.
    pub fn ca_file(path: &Path) -> Result<ClientTls, TlsError> {
        let mut roots = rustls::RootCertStore::empty();
        for c in read_certs("CA file", path)? {
            roots.add(c)?;
        }
        let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(
            Arc::new(roots),
            provider(),
        )
        .build()
        .map_err(|e| pem_err("CA file", path, e))?;
        Ok(ClientTls::with_verifier(verifier))
    }

    fn with_verifier(verifier: Arc<dyn ServerCertVerifier>) -> ClientTls {
        let mut config = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .expect("ring supports the default protocol versions")
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        ClientTls {
            config: Arc::new(config),
        }
    }
}

/// The error a pinned client reports for another certificate.
#[derive(Debug, thiserror::Error)]
#[error(
    "the server presented a certificate with SHA-256 fingerprint {presented}, \
     but {pinned} is pinned: if the device's certificate was replaced on purpose, \
     confirm the new fingerprint; otherwise something else answers at this address"
)]
pub struct PinMismatch {
    /// What the server presented.
    pub presented: Fingerprint,
    /// What the client expects.
    pub pinned: Fingerprint,
}

/// Checks the end-entity certificate's digest (or, without a pin,
/// records it) and the handshake signature made with its key.
#[derive(Debug)]
struct PinnedVerifier {
    pin: Option<Fingerprint>,
    seen: std::sync::Mutex<Option<Fingerprint>>,
    algorithms: rustls::crypto::WebPkiSupportedAlgorithms,
}

impl PinnedVerifier {
    fn new(pin: Option<Fingerprint>) -> PinnedVerifier {
        PinnedVerifier {
            pin,
            seen: std::sync::Mutex::new(None),
            algorithms: provider().signature_verification_algorithms,
        }
    }
}

impl ServerCertVerifier for PinnedVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let presented = Fingerprint::of(end_entity);
        *self.seen.lock().unwrap_or_else(|e| e.into_inner()) = Some(presented);
        match self.pin {
            Some(pinned) if pinned != presented => Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::Other(rustls::OtherError(Arc::new(PinMismatch {
                    presented,
                    pinned,
                }))),
            )),
            _ => Ok(ServerCertVerified::assertion()),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// The server name rustls sends for `host` (an address or a DNS name).
pub fn server_name(host: &str) -> Result<ServerName<'static>, String> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(bare.to_owned()).map_err(|e| format!("{host:?}: {e}"))
}

/// Connects to `host:port`, completes a TLS handshake and answers the
/// SHA-256 of the certificate presented (its key proved by the
/// handshake). Nothing is sent beyond the handshake: no request, no
/// credential. Blocking; bounded by `timeout` per step.
pub fn presented_fingerprint(
    host: &str,
    port: u16,
    timeout: Duration,
) -> Result<Fingerprint, String> {
    use std::net::ToSocketAddrs;
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let addr = (bare, port)
        .to_socket_addrs()
        .map_err(|e| format!("{host}: {e}"))?
        .next()
        .ok_or_else(|| format!("{host}: no address"))?;
    let mut tcp =
        std::net::TcpStream::connect_timeout(&addr, timeout).map_err(|e| format!("{addr}: {e}"))?;
    tcp.set_read_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    tcp.set_write_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    let verifier = Arc::new(PinnedVerifier::new(None));
    let config = ClientTls::with_verifier(verifier.clone()).config;
    let mut conn =
        rustls::ClientConnection::new(config, server_name(host)?).map_err(|e| e.to_string())?;
    while conn.is_handshaking() {
        conn.complete_io(&mut tcp)
            .map_err(|e| format!("{addr}: TLS handshake: {e}"))?;
    }
    let seen = *verifier.seen.lock().unwrap_or_else(|e| e.into_inner());
    seen.ok_or_else(|| format!("{addr}: no certificate presented"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_parse_in_the_forms_people_paste() {
        let f = Fingerprint::of(b"cert");
        let shown = f.to_string();
        assert_eq!(shown.len(), 32 * 3 - 1);
        for form in [
            shown.clone(),
            shown.to_lowercase(),
            shown.replace(':', ""),
            format!("sha256:{}", shown.replace(':', "").to_lowercase()),
            format!("SHA256 Fingerprint={shown}"),
        ] {
            assert_eq!(Fingerprint::parse(&form), Some(f), "{form}");
        }
        assert_eq!(Fingerprint::parse(&shown[3..]), None);
        assert_eq!(Fingerprint::parse(&shown.replace('A', "G")), None);
    }

    #[test]
    fn self_signed_once_key_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("tls");
        let a = self_signed(&d, &["node1".into()]).unwrap();
        assert!(a.created);
        let mode = std::fs::metadata(&a.key).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let one = ServerTls::load(&a.cert, &a.key).unwrap().fingerprint;
        let b = self_signed(&d, &[]).unwrap();
        assert!(!b.created);
        assert_eq!(ServerTls::load(&b.cert, &b.key).unwrap().fingerprint, one);
        assert_eq!(fingerprint_of_file(&b.cert).unwrap(), one);
        std::fs::set_permissions(&a.key, std::fs::Permissions::from_mode(0o640)).unwrap();
        let e = ServerTls::load(&a.cert, &a.key).unwrap_err().to_string();
        assert!(e.contains("chmod 600"), "{e}");
    }
}
