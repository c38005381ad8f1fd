//! A minimal HTTP/1.1 client for the local control endpoints (the proxy's
//! `--control`, the server's `--metrics`): one request per connection, the
//! answer read to the end. Enough for loopback control traffic, so no
//! HTTP library is pulled in for it.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use anyhow::{bail, Context, Result};

/// Sends `method path` with `body` (JSON when not empty) to `addr` and
/// returns the body of a 200 answer; any other status is an error carrying
/// the server's explanation. `what` names the endpoint for error messages
/// ("proxy control endpoint"); `hint` says what to check when nothing
/// answers ("is `streamgauge proxy` running, and with --control …?").
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: &str,
    what: &str,
    hint: &str,
) -> Result<String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .with_context(|| format!("no {what} at {addr}: {hint}"))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    let kind = if body.is_empty() {
        ""
    } else {
        "Content-Type: application/json\r\n"
    };
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{kind}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    let mut text = String::new();
    s.read_to_string(&mut text)
        .with_context(|| format!("reading the answer of {addr}"))?;
    let (head, answer) = text
        .split_once("\r\n\r\n")
        .with_context(|| format!("{addr} did not answer in HTTP: is it a streamgauge {what}?"))?;
    let code = head.split(' ').nth(1).unwrap_or("");
    if code != "200" {
        bail!(
            "{addr} answered {}: {}",
            head.lines().next().unwrap_or(""),
            answer.trim()
        );
    }
    Ok(answer.to_owned())
}
