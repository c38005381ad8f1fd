//! Probes for tests of any endpoint built on this crate: raw HTTP/1.1 requests with exactly the headers a browser
//! under DNS rebinding would send, and the one assertion every endpoint's
//! tests make about them.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// Sends one request with `Connection: close` and exactly `headers` (no
/// `Host` unless given) and returns the status and the body.
pub fn raw_request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if !body.is_empty() || method != "GET" {
        req.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes())?;
    let mut answer = Vec::new();
    s.read_to_end(&mut answer)?;
    let text = String::from_utf8_lossy(&answer);
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("not an HTTP answer: {text:?}")))?;
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_owned();
    Ok((status, body))
}

/// Asserts the DNS-rebinding defences of the endpoint at `addr`:
///
/// - `GET get_path` with `Host: evil.example` gets 421, code
///   `host_not_allowed`, and a message naming `--allow-host`;
/// - `POST post_path` (a JSON body `post_body`) from `Origin:
///   http://evil.example` with an allowed `Host` gets 403,
///   `origin_not_allowed` — before it can change anything;
/// - the same GET under `Host: 127.0.0.1:PORT`, `localhost:PORT` and each
///   of `also_allowed` is not refused for its name (any status but 421).
pub fn assert_host_checks(
    addr: SocketAddr,
    get_path: &str,
    post_path: &str,
    post_body: &str,
    also_allowed: &[&str],
) {
    let (status, body) = raw_request(addr, "GET", get_path, &[("Host", "evil.example")], "")
        .expect("request with a foreign Host");
    assert_eq!(status, 421, "foreign Host must be refused: {body}");
    assert!(body.contains("host_not_allowed"), "{body}");
    assert!(
        body.contains("--allow-host"),
        "the message says what to do: {body}"
    );

    let local = format!("127.0.0.1:{}", addr.port());
    let (status, body) = raw_request(
        addr,
        "POST",
        post_path,
        &[
            ("Host", local.as_str()),
            ("Origin", "http://evil.example"),
            ("Content-Type", "application/json"),
        ],
        post_body,
    )
    .expect("request with a foreign Origin");
    assert_eq!(
        status, 403,
        "foreign Origin on POST must be refused: {body}"
    );
    assert!(body.contains("origin_not_allowed"), "{body}");

    let named = format!("localhost:{}", addr.port());
    for host in [local.as_str(), named.as_str()]
        .into_iter()
        .chain(also_allowed.iter().copied())
    {
        let (status, body) = raw_request(addr, "GET", get_path, &[("Host", host)], "")
            .expect("request with an allowed Host");
        assert_ne!(status, 421, "Host {host} must be served: {body}");
    }
}
