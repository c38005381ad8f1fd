//! The local control endpoint: a minimal HTTP/1.1 server with
//! `GET /status`, `POST /pause` and `POST /resume`. A connection whose
//! first line is not an HTTP request line is read as the reference's
//! control port protocol (`oml2-proxycon`): one command per line.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

use super::Command;
use crate::proxy::Shared;

/// Longest request head read.
const MAX_HEAD: usize = 16 << 10;

/// How long a control client may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves control connections until the task is aborted.
pub async fn serve(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let Ok((stream, peer)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let shared = Arc::clone(&shared);
        tokio::spawn(async move {
            if let Err(e) = tokio::time::timeout(READ_TIMEOUT * 6, handle(stream, &shared)).await {
                tracing::debug!(client = %peer, error = %e, "control connection timed out");
            }
        });
    }
}

async fn handle(stream: TcpStream, shared: &Shared) {
    let mut reader = BufReader::new(stream);
    let mut first = String::new();
    match tokio::time::timeout(READ_TIMEOUT, reader.read_line(&mut first)).await {
        Ok(Ok(n)) if n > 0 => {}
        _ => return,
    }
    let mut parts = first.split_whitespace();
    let (method, path, version) = (parts.next(), parts.next(), parts.next());
    let Some(version) = version.filter(|v| v.starts_with("HTTP/")) else {
        return proxycon(reader, first, shared).await;
    };
    let _ = version;
    // Skip the header lines (and any body: the endpoints take none).
    let mut seen = first.len();
    loop {
        let mut line = String::new();
        match tokio::time::timeout(READ_TIMEOUT, reader.read_line(&mut line)).await {
            Ok(Ok(n)) if n > 0 => {}
            _ => break,
        }
        seen += line.len();
        if line.trim().is_empty() || seen > MAX_HEAD {
            break;
        }
    }
    let (code, body) = match (method, path.map(|p| p.split('?').next().unwrap_or(p))) {
        (Some("GET"), Some("/status")) => (200, crate::status::status(shared)),
        (Some("POST"), Some("/pause")) => {
            shared.control.apply(Command::Pause);
            (200, serde_json::json!({ "paused": true }))
        }
        (Some("POST"), Some("/resume")) => {
            shared.control.apply(Command::Resume);
            (200, serde_json::json!({ "paused": false }))
        }
        (_, Some("/status" | "/pause" | "/resume")) => (
            405,
            serde_json::json!({ "error": "use GET /status, POST /pause, POST /resume" }),
        ),
        _ => (
            404,
            serde_json::json!({ "error": "unknown path: use GET /status, POST /pause, POST /resume" }),
        ),
    };
    let reason = match code {
        200 => "OK",
        404 => "Not Found",
        _ => "Method Not Allowed",
    };
    let mut text = serde_json::to_string_pretty(&body).unwrap_or_default();
    text.push('\n');
    let response = format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    );
    let mut stream = reader.into_inner();
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// The reference's control port: command lines until the client closes.
async fn proxycon(mut reader: BufReader<TcpStream>, first: String, shared: &Shared) {
    let mut line = first;
    loop {
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
        line.clear();
        let mut limited = (&mut reader).take(MAX_HEAD as u64);
        match limited.read_line(&mut line).await {
            Ok(n) if n > 0 => {}
            _ => return,
        }
    }
}
