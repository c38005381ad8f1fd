//! The blocking client command-line tools use to talk to our endpoints
//! (`streamgauge control`, `streamgauge proxy ctl`, …).
//!
//! It sends the bearer token when one is given, marks bodies as JSON (the
//! servers refuse anything else for state-changing requests), and turns our
//! JSON error bodies back into one readable line.

use std::time::Duration;

use ureq::Agent;
/// The body of an answer from [`Client::open`], read as it comes.
pub use ureq::Body;

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Nothing answered (refused, unreachable, timed out).
    #[error("no {what} at {url}: {reason}; {hint}")]
    Unreachable {
        /// The endpoint's name, for people.
        what: String,
        /// The URL tried.
        url: String,
        /// The transport's error.
        reason: String,
        /// What to check.
        hint: String,
    },
    /// The server's certificate was refused (not the pinned one, or not
    /// issued by the CA given): nothing was sent to it.
    #[error("{what} at {url} is not trusted: {reason}")]
    Certificate {
        /// The endpoint's name, for people.
        what: String,
        /// The URL tried.
        url: String,
        /// Why the certificate was refused (both fingerprints for a pin).
        reason: String,
    },
    /// The server answered with an error status.
    #[error("{url} answered {status} ({code}): {message}")]
    Status {
        /// The URL.
        url: String,
        /// HTTP status.
        status: u16,
        /// Our stable error code (or `http` for a non-JSON answer).
        code: String,
        /// The server's explanation.
        message: String,
    },
}

/// A client for one endpoint.
#[derive(Debug, Clone)]
pub struct Client {
    /// Shared connection state.
    agent: Agent,
    /// `http://host:port`, no trailing slash.
    base: String,
    /// Bearer token, if any.
    token: Option<String>,
    /// The endpoint's name in messages ("proxy control endpoint").
    what: String,
    /// What to check when nothing answers.
    hint: String,
}

impl Client {
    /// A client for `base` (`http://127.0.0.1:9000` or `127.0.0.1:9000`;
    /// `https://…` needs [`Client::with_tls`]).
    pub fn new(base: &str, what: &str, hint: &str) -> Client {
        let agent = agent(None);
        let base = if base.contains("://") {
            base.trim_end_matches('/').to_owned()
        } else {
            format!("http://{}", base.trim_end_matches('/'))
        };
        Client {
            agent,
            base,
            token: None,
            what: what.to_owned(),
            hint: hint.to_owned(),
        }
    }

    /// Verifies `https` servers with `tls` (a pinned fingerprint or a CA
    /// file, [`crate::tls::ClientTls`]).
    pub fn with_tls(mut self, tls: Option<crate::tls::ClientTls>) -> Client {
        self.agent = agent(tls);
        self
    }

    /// The base URL requests go to.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// Sends this bearer token with every request.
    pub fn with_token(mut self, token: Option<String>) -> Client {
        self.token = token.filter(|t| !t.is_empty());
        self
    }

    /// `GET path`: the body of a 2xx answer.
    pub fn get(&self, path: &str) -> Result<String, ClientError> {
        self.get_bytes(path).map(text)
    }

    /// `GET path`: the body bytes of a 2xx answer (downloads).
    pub fn get_bytes(&self, path: &str) -> Result<Vec<u8>, ClientError> {
        let url = format!("{}{path}", self.base);
        let result = self.auth(self.agent.get(&url)).call();
        self.finish(&url, result)
    }

    /// `POST path` with a JSON body: the body of a 2xx answer.
    pub fn post_json(&self, path: &str, body: &serde_json::Value) -> Result<String, ClientError> {
        self.post(path, &body.to_string())
    }

    /// `POST path` with a body that is already JSON text.
    pub fn post(&self, path: &str, json: &str) -> Result<String, ClientError> {
        let url = format!("{}{path}", self.base);
        let result = self
            .auth(self.agent.post(&url))
            .content_type("application/json")
            .send(json);
        self.finish(&url, result).map(text)
    }

    /// `PATCH path` with a body that is already JSON text.
    pub fn patch(&self, path: &str, json: &str) -> Result<String, ClientError> {
        let url = format!("{}{path}", self.base);
        let result = self
            .auth(self.agent.patch(&url))
            .content_type("application/json")
            .send(json);
        self.finish(&url, result).map(text)
    }

    /// `DELETE path` (marked JSON, as every state-changing request must be).
    pub fn delete(&self, path: &str) -> Result<String, ClientError> {
        let url = format!("{}{path}", self.base);
        let result = self
            .auth(self.agent.delete(&url))
            .header("Content-Type", "application/json")
            .call();
        self.finish(&url, result).map(text)
    }

    /// `GET path` with these request headers, for bodies read as they
    /// come (downloads, live tails): the answer whatever its status, its
    /// body not read yet. Connecting (TLS included) times out after
    /// [`OPEN_CONNECT_TIMEOUT`]; nothing else does, as a live tail lasts
    /// as long as its reader.
    pub fn open(
        &self,
        path: &str,
        headers: &[(ureq::http::HeaderName, ureq::http::HeaderValue)],
    ) -> Result<ureq::http::Response<ureq::Body>, ClientError> {
        let url = format!("{}{path}", self.base);
        let mut req = self
            .auth(self.agent.get(&url))
            .config()
            .timeout_global(None)
            .timeout_connect(Some(OPEN_CONNECT_TIMEOUT))
            .build();
        for (name, value) in headers {
            req = req.header(name, value);
        }
        req.call().map_err(|e| self.failed(&url, e))
    }

    fn auth<B>(&self, req: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        match &self.token {
            Some(t) => req.header("Authorization", format!("Bearer {t}")),
            None => req,
        }
    }

    fn finish(
        &self,
        url: &str,
        result: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> Result<Vec<u8>, ClientError> {
        let mut response = result.map_err(|e| self.failed(url, e))?;
        let status = response.status().as_u16();
        let body = response
            .body_mut()
            .with_config()
            .limit(1 << 32)
            .read_to_vec()
            .unwrap_or_default();
        if (200..300).contains(&status) {
            return Ok(body);
        }
        let parsed: Option<serde_json::Value> = serde_json::from_slice(&body).ok();
        let field = |k: &str| {
            parsed
                .as_ref()
                .and_then(|v| v["error"][k].as_str())
                .map(str::to_owned)
        };
        Err(ClientError::Status {
            url: url.to_owned(),
            status,
            code: field("code").unwrap_or_else(|| "http".into()),
            message: field("message").unwrap_or_else(|| text(body).trim().to_owned()),
        })
    }

    /// What a transport error means for the caller: a refused certificate,
    /// or nothing answering.
    fn failed(&self, url: &str, e: ureq::Error) -> ClientError {
        match certificate_refused(&e) {
            Some(reason) => ClientError::Certificate {
                what: self.what.clone(),
                url: url.to_owned(),
                reason,
            },
            None => ClientError::Unreachable {
                what: self.what.clone(),
                url: url.to_owned(),
                reason: e.to_string(),
                hint: self.hint.clone(),
            },
        }
    }
}

/// How long [`Client::open`] waits for a connection (and its TLS handshake).
pub const OPEN_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Why the TLS layer refused the server's certificate, when it did.
fn certificate_refused(e: &ureq::Error) -> Option<String> {
    use tokio_rustls::rustls::Error as TlsError;
    let tls = match e {
        ureq::Error::Rustls(t) => Some(t),
        ureq::Error::Io(io) => io.get_ref().and_then(|i| i.downcast_ref::<TlsError>()),
        _ => None,
    }?;
    match tls {
        TlsError::InvalidCertificate(c) => Some(match c {
            // Our own verifier's reason (a pin mismatch) says it all.
            tokio_rustls::rustls::CertificateError::Other(o) => o.to_string(),
            other => format!("invalid certificate: {other}"),
        }),
        _ => None,
    }
}

/// The shared connection state: plain TCP, with TLS for `https` when
/// `tls` says how to verify the server.
fn agent(tls: Option<crate::tls::ClientTls>) -> Agent {
    use ureq::unversioned::resolver::DefaultResolver;
    use ureq::unversioned::transport::{Connector as _, TcpConnector};
    let config = Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build();
    let connector = TcpConnector::default().chain(crate::client_tls::TlsConnector(tls));
    Agent::with_parts(config, connector, DefaultResolver::default())
}

fn text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}
