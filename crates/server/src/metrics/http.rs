//! `GET /metrics`: a minimal HTTP/1.x responder on a tokio listener.
//!
//! One request per connection, `Connection: close`; anything but
//! `GET /metrics` (or `HEAD`) gets a 404 or 405. A request head larger than
//! 8 KiB, or slower than 5 s, is dropped. No framework is needed for this.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::text::{render, CONTENT_TYPE};
use super::Metrics;
use crate::shutdown::Shutdown;

/// Largest request head read.
const MAX_HEAD: usize = 8 * 1024;

/// How long a client may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// Serves `/metrics` on `listener` until shutdown.
pub async fn serve(listener: TcpListener, metrics: Arc<Metrics>, mut shutdown: Shutdown) {
    loop {
        let accepted = tokio::select! {
            r = listener.accept() => r,
            () = shutdown.requested() => return,
        };
        match accepted {
            Ok((stream, _)) => {
                let metrics = Arc::clone(&metrics);
                tokio::spawn(async move {
                    if let Err(e) = respond(stream, &metrics).await {
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

async fn respond(mut stream: TcpStream, metrics: &Metrics) -> std::io::Result<()> {
    let head = match tokio::time::timeout(READ_TIMEOUT, read_head(&mut stream)).await {
        Ok(r) => r?,
        Err(_) => return Ok(()),
    };
    let Some(head) = head else { return Ok(()) };
    let mut words = head.split(' ');
    let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let path = path.split('?').next().unwrap_or("");
    let (status, body, ty) = match (method, path) {
        ("GET" | "HEAD", "/metrics") => ("200 OK", render(metrics), CONTENT_TYPE),
        (_, "/metrics") => ("405 Method Not Allowed", String::new(), "text/plain"),
        _ => ("404 Not Found", "try /metrics\n".to_owned(), "text/plain"),
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

/// Reads up to the end of the request head; returns its request line.
async fn read_head(stream: &mut TcpStream) -> std::io::Result<Option<String>> {
    let mut buf = Vec::with_capacity(512);
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && !buf.windows(2).any(|w| w == b"\n\n") {
        let n = stream.read(&mut chunk).await?;
        if n == 0 || buf.len() + n > MAX_HEAD {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let line = buf.split(|&b| b == b'\n').next().unwrap_or_default();
    Ok(Some(String::from_utf8_lossy(line).trim_end().to_owned()))
}
