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
