//! The control endpoint, on the project's HTTP stack ([`httpkit`]):
//! `GET /status`, `POST /pause` and `POST /resume` (JSON; the two POSTs
//! need the `control` grant: a token with that scope from `--auth-file`,
//! or, without a token file, a loopback caller).
//!
//! A connection whose first bytes are not an HTTP request line is read as
//! the reference's control port protocol (`oml2-proxycon`): one command
//! per line. That protocol carries no token, so it is accepted only from
//! loopback and only when the proxy has no token file.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::routing::{get, post};
use axum::{Json, Router};
use httpkit::{ApiResult, Caller, HttpConfig};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

use super::Command;
use crate::proxy::Shared;

/// Longest command line read.
const MAX_LINE: usize = 16 << 10;

/// How long a client may take to send its first bytes.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The HTTP routes.
fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/status", get(status))
        .route("/pause", post(pause))
        .route("/resume", post(resume))
        .with_state(shared)
}

async fn status(
    caller: Caller,
    State(shared): State<Arc<Shared>>,
) -> ApiResult<Json<serde_json::Value>> {
    caller.require_read_any()?;
    Ok(Json(crate::status::status(&shared)))
}

async fn pause(
    caller: Caller,
    State(shared): State<Arc<Shared>>,
) -> ApiResult<Json<serde_json::Value>> {
    caller.require_control()?;
    shared.control.apply(Command::Pause);
    Ok(Json(serde_json::json!({ "paused": true })))
}

async fn resume(
    caller: Caller,
    State(shared): State<Arc<Shared>>,
) -> ApiResult<Json<serde_json::Value>> {
    caller.require_control()?;
    shared.control.apply(Command::Resume);
    Ok(Json(serde_json::json!({ "paused": false })))
}

/// Serves control connections until the task is aborted, at most
/// `http.budget.max_connections` at once.
pub async fn serve(listener: TcpListener, shared: Arc<Shared>, http: HttpConfig) {
    let tokens = http.access.authenticator.is_some();
    let gate = httpkit::Gate::new(http.budget.max_connections);
    let app = http.apply(router(Arc::clone(&shared)));
    loop {
        let Ok((stream, peer)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let Some(permit) = gate.admit(&stream) else {
            continue;
        };
        let shared = Arc::clone(&shared);
        let app = app.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let Some(first) = first_bytes(&stream).await else {
                return;
            };
            if httpkit::looks_like_http(&first) {
                if let Err(e) = httpkit::serve_connection(stream, peer, app).await {
                    tracing::debug!(client = %peer, error = %e, "control connection failed");
                }
            } else if tokens || !peer.ip().is_loopback() {
                tracing::warn!(client = %peer, "refused a line-protocol control connection \
                    (it carries no token: use HTTP with a token, from loopback without a token file)");
                // Read the command first: closing with unread input would
                // reset the connection before the client sees why.
                let mut reader = BufReader::new(stream);
                let mut line = String::new();
                let _ = (&mut reader)
                    .take(MAX_LINE as u64)
                    .read_line(&mut line)
                    .await;
                let mut stream = reader.into_inner();
                let _ = stream
                    .write_all(b"Refused: use HTTP (streamgauge proxy ctl) with a control token\n")
                    .await;
                let _ = stream.shutdown().await;
            } else {
                let fut = proxycon(BufReader::new(stream), &shared);
                if tokio::time::timeout(READ_TIMEOUT * 6, fut).await.is_err() {
                    tracing::debug!(client = %peer, "control connection timed out");
                }
            }
        });
    }
}

/// Waits for the first 8 bytes (or a newline, or the client closing).
async fn first_bytes(stream: &TcpStream) -> Option<Vec<u8>> {
    let mut buf = [0u8; 8];
    let wait = async {
        loop {
            let n = stream.peek(&mut buf).await.ok()?;
            if n == 0 {
                return None;
            }
            if n == buf.len() || buf[..n].contains(&b'\n') {
                return Some(buf[..n].to_vec());
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(READ_TIMEOUT, wait)
        .await
        .ok()
        .flatten()
}

/// The reference's control port: command lines until the client closes.
async fn proxycon(mut reader: BufReader<TcpStream>, shared: &Shared) {
    loop {
        let mut line = String::new();
        let mut limited = (&mut reader).take(MAX_LINE as u64);
        match limited.read_line(&mut line).await {
            Ok(n) if n > 0 => {}
            _ => return,
        }
        let reply = match Command::parse(&line) {
            Some(cmd) => {
                shared.control.apply(cmd);
                format!("Received command: {}\n", cmd.name())
            }
            None if line.trim().is_empty() => String::new(),
            None => format!("Unknown command: {}\n", line.trim()),
        };
        if reader.get_mut().write_all(reply.as_bytes()).await.is_err() {
            return;
        }
    }
}
