//! Blocking client of the control API, for `streamgauge capture ctl`:
//! sends the bearer token, marks bodies as JSON, and turns the API's JSON
//! errors back into one readable line.

use std::time::Duration;
use ureq::Agent;

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
pub enum CtlError {
    /// Nothing answered.
    #[error("no capture daemon at {url}: {reason}; is `streamgauge capture --config FILE` running, and is --url its `listen` address?")]
    Unreachable {
        /// The URL tried.
        url: String,
        /// The transport's error.
        reason: String,
    },
    /// The daemon answered with an error status.
    #[error("{url} answered {status} ({code}): {message}")]
    Status {
        /// The URL.
        url: String,
        /// HTTP status.
        status: u16,
        /// The API's stable error code (`http` when the body was not ours).
        code: String,
        /// The daemon's explanation.
        message: String,
    },
}

/// A client for one daemon.
#[derive(Debug, Clone)]
pub struct CtlClient {
    /// Connection state.
    agent: Agent,
    /// `http://host:port`, no trailing slash.
    base: String,
    /// Bearer token, if any.
    token: Option<String>,
}

impl CtlClient {
    /// A client for `base` (`http://127.0.0.1:7300` or `127.0.0.1:7300`).
    pub fn new(base: &str, token: Option<String>) -> CtlClient {
        let agent: Agent = Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(30)))
            .build()
            .into();
        let base = base.trim_end_matches('/');
        let base = if base.contains("://") {
            base.to_string()
        } else {
            format!("http://{base}")
        };
        CtlClient {
            agent,
            base,
            token: token.filter(|t| !t.is_empty()),
        }
    }

    fn auth<B>(&self, req: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        match &self.token {
            Some(t) => req.header("Authorization", format!("Bearer {t}")),
            None => req,
        }
    }

    /// `GET path`: the body bytes of a 2xx answer.
    pub fn get_bytes(&self, path: &str) -> Result<Vec<u8>, CtlError> {
        let url = format!("{}{path}", self.base);
        let r = self.auth(self.agent.get(&url)).call();
        self.finish(&url, r)
    }

    /// `GET path`: the body of a 2xx answer as text.
    pub fn get(&self, path: &str) -> Result<String, CtlError> {
        self.get_bytes(path)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    }

    /// `POST path` with a JSON body.
    pub fn post(&self, path: &str, body: &str) -> Result<String, CtlError> {
        let url = format!("{}{path}", self.base);
        let r = self
            .auth(self.agent.post(&url))
            .content_type("application/json")
            .send(body);
        self.finish(&url, r)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    }

    /// `DELETE path`.
    pub fn delete(&self, path: &str) -> Result<String, CtlError> {
        let url = format!("{}{path}", self.base);
        // State-changing requests must be marked JSON (httpkit's CSRF guard).
        let r = self
            .auth(self.agent.delete(&url))
            .header("Content-Type", "application/json")
            .call();
        self.finish(&url, r)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    }

    fn finish(
        &self,
        url: &str,
        r: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> Result<Vec<u8>, CtlError> {
        let mut resp = r.map_err(|e| CtlError::Unreachable {
            url: url.into(),
            reason: e.to_string(),
        })?;
        let status = resp.status().as_u16();
        let body = resp
            .body_mut()
            .with_config()
            .limit(1 << 32)
            .read_to_vec()
            .unwrap_or_default();
        if (200..300).contains(&status) {
            return Ok(body);
        }
        let v: Option<serde_json::Value> = serde_json::from_slice(&body).ok();
        let field = |k: &str| {
            v.as_ref()
                .and_then(|v| v["error"][k].as_str())
                .map(str::to_owned)
        };
        Err(CtlError::Status {
            url: url.into(),
            status,
            code: field("code").unwrap_or_else(|| "http".into()),
            message: field("message")
                .unwrap_or_else(|| String::from_utf8_lossy(&body).trim().to_string()),
        })
    }
}
