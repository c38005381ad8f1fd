//! Feedback (spec §3.7): a rule sends a control message to a sender whose
//! rate is too high and the restore message when it calms down; messages
//! sent by hand through `POST /control/…`; senders without the key get
//! nothing.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use server::feedback::rules;

const SCHEMA: &str = "1 t_m i:int32 celsius:double";

fn header(sender: &str) -> String {
    common::text_header("fb", sender, 1_700_000_000, &[SCHEMA]).replace(
        "content: text\n",
        "x-streamgauge-backchannel: 1\nx-streamgauge-feedback: 1\ncontent: text\n",
    )
}

fn connect(addr: SocketAddr, sender: &str) -> (TcpStream, BufReader<TcpStream>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(header(sender).as_bytes()).unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    assert_eq!(line, "streamgauge-resume 0\n");
    (s, r)
}

/// Reads the next control line: (id, message).
fn control(r: &mut BufReader<TcpStream>) -> (u64, serde_json::Value) {
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    let rest = line
        .strip_prefix("streamgauge-control ")
        .unwrap_or_else(|| panic!("want a control line, got {line:?}"));
    let (id, json) = rest.split_once(' ').unwrap();
    (id.parse().unwrap(), serde_json::from_str(json).unwrap())
}

fn rows(from: i64, to: i64, celsius: f64) -> Vec<u8> {
    (from..to)
        .flat_map(|i| format!("0.5\t1\t{i}\t{i}\t{celsius}\n").into_bytes())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_rule_slows_a_fast_sender_down_and_restores_it() {
    let rules = rules::parse(
        r#"
        [[rule]]
        name = "slow-down"
        when = "sender-rate"
        above = 2000
        below = 100
        action = { action = "set-samples", stream = "t_m", samples = 10 }
        restore = { action = "set-samples", stream = "t_m", samples = 1 }
        "#,
        "rules.toml",
    )
    .unwrap();
    let t = common::start_with(|c| c.feedback_rules = rules).await;
    let addr = t.addr;
    tokio::task::spawn_blocking(move || {
        let (mut s, mut r) = connect(addr, "fast");
        // About 20 000 rows/s for 1.5 s: well above the rule's threshold.
        let t0 = Instant::now();
        let mut i = 0;
        while t0.elapsed() < Duration::from_millis(1500) {
            s.write_all(&rows(i, i + 200, 20.0)).unwrap();
            i += 200;
            std::thread::sleep(Duration::from_millis(10));
        }
        let (id, msg) = control(&mut r);
        assert_eq!(id, 1);
        assert_eq!(msg["action"], "set-samples");
        assert_eq!(msg["samples"], 10);
        // Then silence: the rate falls below 100 and the restore follows.
        let (id, msg) = control(&mut r);
        assert_eq!(id, 2);
        assert_eq!(msg["samples"], 1);
    })
    .await
    .unwrap();
    t.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn field_rules_and_messages_by_hand() {
    let rules = rules::parse(
        r#"
        [[rule]]
        name = "too-hot"
        when = "field"
        stream = "t_m"
        field = "celsius"
        above = 80
        below = 60
        action = { action = "disable", stream = "t_m" }
        restore = { action = "enable", stream = "t_m" }
        "#,
        "rules.toml",
    )
    .unwrap();
    let t = common::start_with(|c| {
        c.feedback_rules = rules;
        c.metrics_listen = Some("127.0.0.1:0".parse().unwrap());
    })
    .await;
    let addr = t.addr;
    let http = t.server.metrics_addr().unwrap();
    tokio::task::spawn_blocking(move || {
        let (mut s, mut r) = connect(addr, "probe");
        s.write_all(&rows(0, 5, 85.0)).unwrap();
        let (_, msg) = control(&mut r);
        assert_eq!(msg["action"], "disable");
        s.write_all(&rows(5, 10, 50.0)).unwrap();
        let (_, msg) = control(&mut r);
        assert_eq!(msg["action"], "enable");

        // By hand: the endpoint routes to the named sender.
        let body = r#"{"action":"set-interval","stream":"t_m","interval":2.5}"#;
        let reply = post(http, "/control/fb/probe", body);
        assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
        let (id, msg) = control(&mut r);
        assert!(reply.contains(&format!("\"ids\":[{id}]")), "{reply}");
        assert_eq!(msg["interval"], 2.5);
        let reply = post(http, "/control/fb/nobody", body);
        assert!(reply.starts_with("HTTP/1.1 404"), "{reply}");
        let reply = post(http, "/control/fb/probe", r#"{"action":"explode"}"#);
        assert!(reply.starts_with("HTTP/1.1 400"), "{reply}");
        // A cross-site form post cannot steer senders.
        let form = request(
            http,
            &format!(
                "POST /control/fb/probe HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\
                 Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            ),
        );
        assert!(form.starts_with("HTTP/1.1 415"), "{form}");
        assert!(form.contains("\"code\":\"json_required\""), "{form}");
        let status = get(http, "/feedback");
        assert!(status.contains("\"sender\":\"probe\""), "{status}");
        assert!(status.contains("too-hot"), "{status}");
    })
    .await
    .unwrap();
    t.server.shutdown().await;
}

fn post(addr: SocketAddr, path: &str, body: &str) -> String {
    request(
        addr,
        &format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
             Connection: close\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ),
    )
}

fn get(addr: SocketAddr, path: &str) -> String {
    request(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"),
    )
}

fn request(addr: SocketAddr, text: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(text.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}
