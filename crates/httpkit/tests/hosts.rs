//! The `Host`/`Origin` checks and the listener budget, through a real
//! listener and raw sockets (the headers a rebinding browser sends).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use axum::routing::{get, post};
use httpkit::probe::{assert_host_checks, raw_request};
use httpkit::{AllowedHosts, Budget, HttpConfig};

async fn start(config: HttpConfig) -> SocketAddr {
    let app = axum::Router::new()
        .route("/read", get(|| async { "data" }))
        .route("/control", post(|| async { "done" }));
    let budget = config.budget;
    let app = config.apply(app);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(httpkit::serve_with(
        listener,
        app,
        budget,
        std::future::pending(),
    ));
    addr
}

/// A JSON POST to `/control` under an allowed `Host` from a page of `origin`.
fn post_from(addr: SocketAddr, origin: &str) -> (u16, String) {
    raw_request(
        addr,
        "POST",
        "/control",
        &[
            ("Host", "127.0.0.1"),
            ("Origin", origin),
            ("Content-Type", "application/json"),
        ],
        "{}",
    )
    .unwrap()
}

fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::spawn(f).join().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_names_are_refused_and_known_ones_served() {
    let addr = start(HttpConfig {
        allowed_hosts: AllowedHosts::new(["lab.example"]),
        ..HttpConfig::default()
    })
    .await;
    blocking(move || {
        assert_host_checks(
            addr,
            "/read",
            "/control",
            "{}",
            &["lab.example:80", "[::1]"],
        );
        // A configured name may also send state-changing requests, and so
        // may a page served from an IP literal.
        for origin in ["http://lab.example", "http://127.0.0.1:8080"] {
            let (status, body) = post_from(addr, origin);
            assert_eq!((status, body.as_str()), (200, "done"), "{origin}");
        }
        // GET from a foreign page under an allowed name: the browser will
        // not let the page read the answer (no CORS), so it is served.
        let (status, _) = raw_request(
            addr,
            "GET",
            "/read",
            &[("Host", "127.0.0.1"), ("Origin", "http://evil.example")],
            "",
        )
        .unwrap();
        assert_eq!(status, 200);
        // No Host at all (HTTP/1.0 tools): served.
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(b"GET /read HTTP/1.0\r\n\r\n").unwrap();
        let mut answer = String::new();
        s.read_to_string(&mut answer).unwrap();
        assert!(answer.starts_with("HTTP/1.0 200"), "{answer}");
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_configured_cors_origin_may_post() {
    let addr = start(HttpConfig {
        cors_origin: Some("https://ui.example:8443".parse().unwrap()),
        ..HttpConfig::default()
    })
    .await;
    blocking(move || {
        let post = |origin: &str| post_from(addr, origin).0;
        assert_eq!(post("https://ui.example:8443"), 200);
        assert_eq!(post("https://ui.example:9999"), 403);
        assert_eq!(post("null"), 403);
    });
}

/// Whether the server closed `s` (read returns 0 or an error).
fn closed(s: &mut TcpStream) -> bool {
    let mut buf = [0u8; 256];
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return true,
            Ok(_) => continue,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_sent_requests_are_closed_after_the_header_timeout() {
    let addr = start(HttpConfig {
        budget: Budget {
            header_timeout: Duration::from_millis(500),
            ..Budget::default()
        },
        ..HttpConfig::default()
    })
    .await;
    blocking(move || {
        let started = Instant::now();
        let mut slow = Vec::new();
        for _ in 0..50 {
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(b"GET /read HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
                .unwrap();
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            slow.push(s);
        }
        // An idle kept-alive connection is bounded the same way.
        let mut idle = TcpStream::connect(addr).unwrap();
        idle.write_all(b"GET /read HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            .unwrap();
        idle.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        for s in slow.iter_mut().chain(std::iter::once(&mut idle)) {
            assert!(closed(s));
        }
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(450) && took < Duration::from_secs(5),
            "closed after {took:?}"
        );
        // Meanwhile and afterwards, ordinary requests are served.
        let (status, _) = raw_request(addr, "GET", "/read", &[("Host", "127.0.0.1")], "").unwrap();
        assert_eq!(status, 200);
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_cap_are_refused_at_once() {
    let addr = start(HttpConfig {
        budget: Budget {
            max_connections: 4,
            ..Budget::default()
        },
        ..HttpConfig::default()
    })
    .await;
    blocking(move || {
        let held: Vec<TcpStream> = (0..4)
            .map(|_| {
                let mut s = TcpStream::connect(addr).unwrap();
                s.write_all(b"GET /read HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                    .unwrap();
                s
            })
            .collect();
        // The server admits in accept order: poll until the fifth is refused.
        let deadline = Instant::now() + Duration::from_secs(10);
        let body = loop {
            let refused = raw_request(addr, "GET", "/read", &[("Host", "127.0.0.1")], "");
            match refused {
                Ok((503, body)) => break body,
                other => assert!(Instant::now() < deadline, "never refused: {other:?}"),
            }
        };
        assert!(body.contains("too_many_connections"), "{body}");
        drop(held);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match raw_request(addr, "GET", "/read", &[("Host", "127.0.0.1")], "") {
                Ok((200, _)) => break,
                other => assert!(Instant::now() < deadline, "slots not freed: {other:?}"),
            }
        }
    });
}
