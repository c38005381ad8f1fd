//! Talking to devices through their HTTP APIs, one module per kind:
//! [`capture`] (capture daemons, through the capture crate's `CtlClient`),
//! [`inline`] (in-line agents' control endpoint, spec/inline-control.md)
//! and [`collector`] (collection servers' query API).
//!
//! The clients are blocking (the project's `httpkit` client); async code
//! calls them through [`blocking`]. Bodies that must stream (file
//! downloads, the live-data proxy) are read as they come by [`streamed`].

pub mod capture;
pub mod collector;
pub mod credentials;
pub mod inline;
pub mod relay_path;
pub mod streamed;
pub mod transport;

use std::time::Instant;

use httpkit::client::ClientError;

use crate::app::App;
use crate::db::devices::{Device, Kind};

/// Why a device request failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum DeviceError {
    /// Nothing answered (refused, unreachable, timed out): worth retrying.
    #[error("device unreachable: {0}")]
    Unreachable(String),
    /// The device answered with an error.
    #[error("device answered {status} ({code}): {message}")]
    Refused {
        /// HTTP status.
        status: u16,
        /// The device's error code.
        code: String,
        /// Its message.
        message: String,
    },
    /// The device answered something we cannot read.
    #[error("device answered unreadable JSON: {0}")]
    Garbled(String),
    /// The device's certificate is not the pinned one (or not issued by
    /// its CA): nothing was sent; an admin must confirm a new certificate.
    #[error("device certificate refused: {0}")]
    Certificate(String),
    /// The manager will not send anything: plain HTTP beyond loopback
    /// without `insecure`, or unusable TLS settings.
    #[error("{0}")]
    Transport(String),
}

impl From<ClientError> for DeviceError {
    fn from(e: ClientError) -> DeviceError {
        match e {
            ClientError::Unreachable { reason, url, .. } => {
                DeviceError::Unreachable(format!("{url}: {reason}"))
            }
            ClientError::Certificate { reason, url, .. } => {
                DeviceError::Certificate(format!("{url}: {reason}"))
            }
            ClientError::Status {
                status,
                code,
                message,
                ..
            } => DeviceError::Refused {
                status,
                code,
                message,
            },
        }
    }
}

/// Parses a JSON answer.
pub fn json(text: &str) -> Result<serde_json::Value, DeviceError> {
    serde_json::from_str(text).map_err(|e| DeviceError::Garbled(e.to_string()))
}

/// The blocking client for a device, with its credential and the
/// verification of its certificate ([`transport`]).
pub fn client(app: &App, d: &Device) -> Result<httpkit::client::Client, DeviceError> {
    let tls = transport::client_tls(d)?;
    Ok(httpkit::client::Client::new(
        &d.base_url(),
        &format!("device {}", d.name),
        "is the device running, and are its hostname and port right?",
    )
    .with_tls(tls)
    .with_token(app.credentials.token(d.credential_ref.as_deref())))
}

/// Runs blocking device I/O off the async threads.
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, DeviceError> + Send + 'static,
) -> Result<T, DeviceError> {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|e| Err(DeviceError::Unreachable(format!("task failed: {e}"))))
}

/// What one poll of a device found.
#[derive(Debug, Clone)]
pub struct Probe {
    /// Its capabilities (capture: `/api/v1/capabilities`; collector: `{"domains": …}`).
    pub capabilities: serde_json::Value,
    /// Capture daemons: its sessions with their counters; in-line agents:
    /// the agent as one session ([`inline::as_session`]).
    pub sessions: Option<serde_json::Value>,
    /// Round trip of the first request.
    pub latency_ms: f64,
}

/// Polls a device once.
pub async fn probe(app: &App, d: &Device) -> Result<Probe, DeviceError> {
    let client = client(app, d)?;
    let kind = d.kind;
    blocking(move || {
        let t0 = Instant::now();
        match kind {
            Kind::Capture | Kind::Inline => {
                let caps = json(&client.get("/api/v1/capabilities")?)?;
                let latency_ms = t0.elapsed().as_secs_f64() * 1e3;
                let sessions = match kind {
                    Kind::Capture => Some(json(&client.get("/api/v1/sessions")?)?),
                    _ => Some(inline::as_session(&inline::status(&client)?)),
                };
                Ok(Probe {
                    capabilities: caps,
                    sessions,
                    latency_ms,
                })
            }
            Kind::Collector => {
                let domains = json(&client.get("/api/v1/domains")?)?;
                Ok(Probe {
                    capabilities: serde_json::json!({ "domains": domains }),
                    sessions: None,
                    latency_ms: t0.elapsed().as_secs_f64() * 1e3,
                })
            }
        }
    })
    .await
}
