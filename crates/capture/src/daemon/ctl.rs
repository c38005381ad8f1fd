//! Blocking client of the control API, for `streamgauge capture ctl`: the
//! project's HTTP client ([`httpkit::client::Client`]: bearer token, JSON
//! bodies, JSON errors turned back into one line) pointed at a daemon.

use httpkit::client::Client;

/// Why a request failed (the shared client's error).
pub use httpkit::client::ClientError as CtlError;

/// What to check when no daemon answers.
const HINT: &str =
    "is `streamgauge capture --config FILE` running, and is --url its `listen` address?";

/// A client for one daemon.
#[derive(Debug, Clone)]
pub struct CtlClient(Client);

impl CtlClient {
    /// A client for `base` (`https://127.0.0.1:7300` with
    /// [`CtlClient::with_tls`], `http://127.0.0.1:7300` for a
    /// `plain_http` daemon). The token of a token file the daemon
    /// created is [`httpkit::token_init::own_token`].
    pub fn new(base: &str, token: Option<String>) -> CtlClient {
        CtlClient(Client::new(base, "capture daemon", HINT).with_token(token))
    }

    /// Verifies an `https` daemon with `tls` (its pinned fingerprint, or
    /// a CA file).
    pub fn with_tls(self, tls: Option<httpkit::tls::ClientTls>) -> CtlClient {
        CtlClient(self.0.with_tls(tls))
    }

    /// `GET path`: the body bytes of a 2xx answer.
    pub fn get_bytes(&self, path: &str) -> Result<Vec<u8>, CtlError> {
        self.0.get_bytes(path)
    }

    /// `GET path`: the body of a 2xx answer as text.
    pub fn get(&self, path: &str) -> Result<String, CtlError> {
        self.0.get(path)
    }

    /// `POST path` with a JSON body.
    pub fn post(&self, path: &str, body: &str) -> Result<String, CtlError> {
        self.0.post(path, body)
    }

    /// `DELETE path`.
    pub fn delete(&self, path: &str) -> Result<String, CtlError> {
        self.0.delete(path)
    }
}

/// A boxed cause.
type Cause = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why `capture ctl` could not ask (or write what it was given).
#[derive(Debug, thiserror::Error)]
pub enum CtlRunError {
    /// A step failed; `context` names the flag or file.
    #[error("{context}")]
    Step {
        /// The flag or file.
        context: String,
        /// What went wrong.
        #[source]
        source: Cause,
    },
    /// The flags do not say enough; the message says what to give.
    #[error("{0}")]
    Invalid(String),
    /// The request failed.
    #[error(transparent)]
    Http(#[from] CtlError),
}

fn step<E: Into<Cause>>(context: impl Into<String>) -> impl FnOnce(E) -> CtlRunError {
    let context = context.into();
    move |e| CtlRunError::Step {
        context,
        source: e.into(),
    }
}

/// How to reach a daemon (the flags of `streamgauge capture ctl`).
#[derive(Debug, Clone, Default)]
pub struct CtlOptions {
    /// The control API's URL.
    pub url: String,
    /// Bearer token.
    pub token: Option<String>,
    /// Token file whose own token to use instead (`--token-file`).
    pub token_file: Option<std::path::PathBuf>,
    /// Pinned SHA-256 fingerprint of the daemon's certificate.
    pub fingerprint: Option<String>,
    /// The daemon's certificate, whose fingerprint to pin.
    pub cert: Option<std::path::PathBuf>,
    /// CA certificates to verify the daemon with.
    pub ca_file: Option<std::path::PathBuf>,
}

impl CtlOptions {
    /// The bearer token: `token`, or the one in `token_file`.
    fn token(&self) -> Result<Option<String>, CtlRunError> {
        let Some(path) = &self.token_file else {
            return Ok(self.token.clone());
        };
        match httpkit::token_init::own_token(path).map_err(step("--token-file"))? {
            Some(t) => Ok(Some(t)),
            None => Err(CtlRunError::Invalid(format!(
                "--token-file {}: no line with a plain token",
                path.display()
            ))),
        }
    }

    /// How the daemon's certificate is verified.
    fn tls(&self) -> Result<Option<httpkit::tls::ClientTls>, CtlRunError> {
        use httpkit::tls::{ClientTls, Fingerprint};
        if let Some(fp) = &self.fingerprint {
            let pin = Fingerprint::parse(fp).ok_or_else(|| {
                CtlRunError::Invalid(format!(
                    "--fingerprint {fp:?}: want 64 hex digits, with or without ':'"
                ))
            })?;
            return Ok(Some(ClientTls::pinned(pin)));
        }
        if let Some(cert) = &self.cert {
            let pin = httpkit::tls::fingerprint_of_file(cert).map_err(step("--cert"))?;
            return Ok(Some(ClientTls::pinned(pin)));
        }
        if let Some(ca) = &self.ca_file {
            return Ok(Some(ClientTls::ca_file(ca).map_err(step("--ca-file"))?));
        }
        if self.url.starts_with("https://") {
            return Err(CtlRunError::Invalid(format!(
                "{} is HTTPS: give the daemon's certificate fingerprint (--fingerprint, printed at its \
                 first start), its certificate (--cert DATA_DIR/.control/tls/cert.pem) or --ca-file",
                self.url
            )));
        }
        Ok(None)
    }

    /// A client with the token and certificate check these options give.
    pub fn client(&self) -> Result<CtlClient, CtlRunError> {
        Ok(CtlClient::new(&self.url, self.token()?).with_tls(self.tls()?))
    }
}

/// One `capture ctl` request.
#[derive(Debug, Clone)]
pub enum Request {
    /// `GET /api/v1/capabilities`.
    Capabilities,
    /// Create a session from a configuration file, for an experiment, with
    /// archive targets (comma-separated).
    Create(std::path::PathBuf, Option<String>, Option<String>),
    /// List the sessions.
    List,
    /// `GET` a session (`""`) or one of its parts (`/status`, `/log`, `/files`).
    Get(String, &'static str),
    /// `POST` a session action (`/start`, `/pause`, `/resume`, `/stop`).
    Post(String, &'static str),
    /// Delete a session.
    Delete(String),
    /// Download a session's file to a path (default: its name).
    Download(String, String, Option<std::path::PathBuf>),
}

/// Sends `request`; returns what to print (the daemon's JSON answer, or
/// what was downloaded where).
pub fn send(c: &CtlClient, request: &Request) -> Result<String, CtlRunError> {
    let s = |id: &str, what: &str| format!("/api/v1/sessions/{id}{what}");
    Ok(match request {
        Request::Capabilities => c.get("/api/v1/capabilities")?,
        Request::Create(file, experiment, archive) => {
            let text = std::fs::read_to_string(file)
                .map_err(step(format!("reading {}", file.display())))?;
            let params: Vec<String> = [("experiment", experiment), ("archive", archive)]
                .into_iter()
                .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k}={v}")))
                .collect();
            let q = if params.is_empty() {
                String::new()
            } else {
                format!("?{}", params.join("&"))
            };
            c.post(&format!("/api/v1/sessions{q}"), &text)?
        }
        Request::List => c.get("/api/v1/sessions")?,
        Request::Get(id, what) => c.get(&s(id, what))?,
        Request::Post(id, what) => c.post(&s(id, what), "{}")?,
        Request::Delete(id) => c.delete(&s(id, ""))?,
        Request::Download(id, name, output) => {
            let bytes = c.get_bytes(&s(id, &format!("/files/{name}")))?;
            let path = output
                .clone()
                .unwrap_or_else(|| std::path::PathBuf::from(name));
            std::fs::write(&path, &bytes).map_err(step(format!("writing {}", path.display())))?;
            format!("{} bytes written to {}", bytes.len(), path.display())
        }
    })
}
