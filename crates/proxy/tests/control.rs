//! Pausing and resuming forwarding through the HTTP control endpoint and
//! the reference's command lines on the control port.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use common::*;

/// One HTTP request; returns (status code, body).
fn http(addr: SocketAddr, method: &str, path: &str) -> (u16, serde_json::Value) {
    http_as(addr, method, path, "")
}

/// One HTTP request with extra header lines; returns (status code, body).
fn http_as(addr: SocketAddr, method: &str, path: &str, extra: &str) -> (u16, serde_json::Value) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}Connection: close\r\n\
         Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{{}}"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let code = head.split(' ').nth(1).unwrap().parse().unwrap();
    (code, serde_json::from_str(body).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manual_mode_waits_for_resume_and_pause_holds_data_back() {
    let dirs = Dirs::new();
    let up = free_addr();
    let server = start_server(up, &dirs.db()).await;
    let mut config = proxy_config(&dirs.journal(), up);
    config.control = Some("127.0.0.1:0".parse().unwrap());
    config.forward = proxy::ForwardMode::Manual;
    let (proxy, addr) = start_proxy(config).await;
    let control = proxy.control_addr().unwrap();
    let db = dirs.db();
    let n = 3000;
    tokio::task::spawn_blocking(move || {
        stock_send(addr, "ctl", "a", &tuples(0, n));
        let (code, status) = http(control, "GET", "/status");
        assert_eq!(code, 200);
        assert_eq!(status["paused"], true);
        assert_eq!(status["sessions"][0]["upstream_state"], "paused");
        assert!(status["sessions"][0]["pending_bytes"].as_u64().unwrap() > 0);
        std::thread::sleep(Duration::from_millis(400));
        assert!(
            seqs(&db, "ctl", "t_m", "a").is_empty(),
            "nothing forwarded while paused"
        );

        assert_eq!(
            http(control, "POST", "/resume"),
            (200, serde_json::json!({"paused": false}))
        );
        assert_exactly(
            wait_rows(&db, "ctl", "t_m", "a", n as usize, Duration::from_secs(10)),
            n,
            "after resume",
        );

        // Paused again: a second stream stays in the journal...
        assert_eq!(http(control, "POST", "/pause").0, 200);
        stock_send(addr, "ctl", "b", &tuples(0, n));
        std::thread::sleep(Duration::from_millis(400));
        assert!(seqs(&db, "ctl", "t_m", "b").is_empty());
        // ...until the reference's command arrives on the control port.
        let mut s = TcpStream::connect(control).unwrap();
        s.write_all(b"OMLPROXY-RESUME\r\n").unwrap();
        let mut reply = [0u8; 64];
        let k = s.read(&mut reply).unwrap();
        assert_eq!(&reply[..k], b"Received command: OMLPROXY-RESUME\n");
        assert_exactly(
            wait_rows(&db, "ctl", "t_m", "b", n as usize, Duration::from_secs(10)),
            n,
            "after proxycon resume",
        );

        assert_eq!(http(control, "GET", "/nope").0, 404);
        assert_eq!(http(control, "GET", "/pause").0, 405);
    })
    .await
    .unwrap();
    wait_delivered(&proxy, Duration::from_secs(10)).await;
    proxy.shutdown().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_file_guards_pause_and_resume_and_turns_off_the_line_protocol() {
    let dirs = Dirs::new();
    let up = free_addr();
    let tokens = dirs.journal().with_extension("tokens");
    httpkit::secret::write_private(
        &tokens,
        "* watcher read\n* ops read,control\nlab collector\n",
    )
    .unwrap();
    let mut config = proxy_config(&dirs.journal(), up);
    config.control = Some("127.0.0.1:0".parse().unwrap());
    config.auth_file = Some(tokens);
    let (proxy, _addr) = start_proxy(config).await;
    let control = proxy.control_addr().unwrap();
    tokio::task::spawn_blocking(move || {
        let bearer = |t: &str| format!("Authorization: Bearer {t}\r\n");
        let (code, body) = http(control, "POST", "/pause");
        assert_eq!(
            (code, body["error"]["code"].as_str()),
            (401, Some("unauthenticated"))
        );
        assert_eq!(
            http_as(control, "POST", "/pause", &bearer("collector")).0,
            403
        );
        assert_eq!(
            http_as(control, "POST", "/pause", &bearer("watcher")).0,
            403
        );
        assert_eq!(
            http_as(control, "GET", "/status", &bearer("watcher")).0,
            200
        );
        assert_eq!(
            http_as(control, "POST", "/pause", &bearer("ops")),
            (200, serde_json::json!({"paused": true}))
        );
        let mut s = TcpStream::connect(control).unwrap();
        s.write_all(b"OMLPROXY-RESUME\r\n").unwrap();
        let mut reply = String::new();
        s.read_to_string(&mut reply).unwrap();
        assert!(reply.starts_with("Refused"), "{reply}");
        let (_, status) = http_as(control, "GET", "/status", &bearer("ops"));
        assert_eq!(status["paused"], true, "the line protocol changed nothing");
    })
    .await
    .unwrap();
    proxy.shutdown().await;
}

/// A web page that re-binds its name to 127.0.0.1 cannot pause the proxy
/// (the issue measured exactly that): foreign `Host` 421, foreign `Origin`
/// 403, and the proxy keeps forwarding.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rebinding_pages_cannot_pause_the_proxy() {
    let dirs = Dirs::new();
    let mut config = proxy_config(&dirs.journal(), free_addr());
    config.control = Some("127.0.0.1:0".parse().unwrap());
    config.control_allowed_hosts = vec!["proxy.testbed".into()];
    let (proxy, _) = start_proxy(config).await;
    let control = proxy.control_addr().unwrap();
    tokio::task::spawn_blocking(move || {
        httpkit::probe::assert_host_checks(control, "/status", "/pause", "{}", &["proxy.testbed"]);
        let (status, body) = httpkit::probe::raw_request(
            control,
            "POST",
            "/pause",
            &[
                ("Host", "evil.example"),
                ("Content-Type", "application/json"),
            ],
            "{}",
        )
        .unwrap();
        assert_eq!(status, 421, "{body}");
        let (code, status) = http(control, "GET", "/status");
        assert_eq!(code, 200);
        assert_eq!(status["paused"], false, "refused requests paused the proxy");
    })
    .await
    .unwrap();
}
