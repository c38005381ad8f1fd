//! The `--metrics` endpoint: a minimal HTTP/1.x responder on a tokio listener.
//!
//! - `GET /metrics`: Prometheus text.
//! - `GET /feedback`: feedback peers and rules (JSON).
//! - `POST /control/<domain>/<sender>` with a JSON control message (spec
//!   §3.7) as the body: sends it to that sender; answers `{"ids":[…]}`, or
//!   404 with the reason when no such sender accepts control messages.
//!
//! One request per connection, `Connection: close`. A request head larger
//! than 8 KiB, a body over 64 KiB, or a client slower than 5 s, is dropped.
//! No framework is needed for this; bind it to loopback (anyone who reaches
//! it can steer senders).

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::text::{render, CONTENT_TYPE};
use super::Metrics;
use crate::feedback::Feedback;
use crate::shutdown::Shutdown;

/// Largest request head read.
const MAX_HEAD: usize = 8 * 1024;

/// Largest request body read.
const MAX_BODY: usize = 64 * 1024;

/// How long a client may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// Serves `/metrics` on `listener` until shutdown.
pub async fn serve(
    listener: TcpListener,
    metrics: Arc<Metrics>,
    feedback: Arc<Feedback>,
    mut shutdown: Shutdown,
) {
    loop {
        let accepted = tokio::select! {
            r = listener.accept() => r,
            () = shutdown.requested() => return,
        };
        match accepted {
            Ok((stream, _)) => {
                let metrics = Arc::clone(&metrics);
                let feedback = Arc::clone(&feedback);
                tokio::spawn(async move {
                    if let Err(e) = respond(stream, &metrics, &feedback).await {
                        tracing::debug!(error = %e, "metrics request failed");
                    }
                });
            }
            Err(e) => {
                tracing::warn!(error = %e, "metrics accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

async fn respond(
    mut stream: TcpStream,
    metrics: &Metrics,
    feedback: &Feedback,
) -> std::io::Result<()> {
    let request = match tokio::time::timeout(READ_TIMEOUT, read_request(&mut stream)).await {
        Ok(r) => r?,
        Err(_) => return Ok(()),
    };
    let Some((head, body)) = request else {
        return Ok(());
    };
    let mut words = head.split(' ');
    let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let path = path.split('?').next().unwrap_or("");
    const JSON: &str = "application/json";
    let (status, body, ty) = match (method, path) {
        ("GET" | "HEAD", "/metrics") => ("200 OK", render(metrics), CONTENT_TYPE),
        ("GET" | "HEAD", "/feedback") => ("200 OK", feedback.status().to_string() + "\n", JSON),
        ("POST", p) if p.starts_with("/control/") => control(feedback, p, &body),
        (_, "/metrics" | "/feedback") => ("405 Method Not Allowed", String::new(), "text/plain"),
        _ => (
            "404 Not Found",
            "try GET /metrics, GET /feedback or POST /control/<domain>/<sender>\n".to_owned(),
            "text/plain",
        ),
    };
    let mut response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ty}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    if method != "HEAD" {
        response.push_str(&body);
    }
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

/// `POST /control/<domain>/<sender>`.
fn control(feedback: &Feedback, path: &str, body: &[u8]) -> (&'static str, String, &'static str) {
    let err = |status, msg: String| (status, format!("{msg}\n"), "text/plain");
    let mut parts = path.trim_start_matches("/control/").splitn(2, '/');
    let (Some(domain), Some(sender)) = (parts.next(), parts.next()) else {
        return err(
            "400 Bad Request",
            "want POST /control/<domain>/<sender>".into(),
        );
    };
    let message: serde_json::Value = match serde_json::from_slice(body) {
        Ok(m) => m,
        Err(e) => return err("400 Bad Request", format!("body is not JSON: {e}")),
    };
    if let Err(e) = crate::feedback::rules::check_message(&message) {
        return err("400 Bad Request", e);
    }
    match feedback.send(domain, sender, &message) {
        Ok(ids) => (
            "200 OK",
            serde_json::json!({ "ids": ids }).to_string() + "\n",
            "application/json",
        ),
        Err(e) => err("404 Not Found", e),
    }
}

/// Reads the request head and its body (`Content-Length`); returns the
/// request line and the body.
async fn read_request(stream: &mut TcpStream) -> std::io::Result<Option<(String, Vec<u8>)>> {
    let mut buf = Vec::with_capacity(512);
    let mut chunk = [0u8; 1024];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if let Some(i) = buf.windows(2).position(|w| w == b"\n\n") {
            break i + 2;
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 || buf.len() + n > MAX_HEAD {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let length = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    if length > MAX_BODY {
        return Ok(None);
    }
    let mut body = buf[head_end..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        body.extend_from_slice(&chunk[..n]);
    }
    body.truncate(length);
    let line = head
        .lines()
        .next()
        .unwrap_or_default()
        .trim_end()
        .to_owned();
    Ok(Some((line, body)))
}
