//! 256 sessions on one daemon, all running at once, each created through
//! the HTTP API for its own experiment with its own token, as root on a
//! veth in namespaces this test creates: every session counts exactly its
//! slice of the traffic, and no token can see another experiment's
//! session (status, files, log, stop: 404, as if it did not exist).

mod common;

use capture::daemon::ctl::{CtlClient, CtlError};
use capture::daemon::{Daemon, DaemonConfig};
use common::netns::{in_netns, pair, root_or_skip, wait_reachable};
use serde_json::Value;
use std::net::UdpSocket;
use std::time::{Duration, Instant};

const N: usize = 256;

/// Packets session `i` should see.
fn slice(i: usize) -> u64 {
    (i % 7) as u64 + 1
}

fn http_status(r: Result<String, CtlError>) -> u16 {
    match r {
        Err(CtlError::Status { status, .. }) => status,
        Err(e) => panic!("{e}"),
        Ok(body) => panic!("expected an error, got {body}"),
    }
}

#[test]
fn sessions_256_concurrent_and_isolated() {
    if !root_or_skip("256-session test") || !common::have("ip") {
        return;
    }
    let (a, b, _guard) = pair("sgm", &[("va", "vb", "10.85.0")]);
    wait_reachable(&b, "10.85.0.1");
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    let mut lines: String = (0..N).map(|i| format!("exp{i} tok{i} read\n")).collect();
    lines.push_str("* admin control\n");
    httpkit::secret::write_private(&tokens, lines).unwrap();
    let mut cfg = DaemonConfig::new(&["va"], dir.path().join("data"));
    cfg.listen = "127.0.0.1:0".parse().unwrap();
    cfg.token_file = Some(tokens);
    cfg.plain_http = true;
    cfg.netns = Some(a.clone());
    cfg.max_sessions = N;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let daemon = rt.block_on(Daemon::start(cfg)).unwrap();
    let url = daemon.local_addr().to_string();
    let client = |i: usize| CtlClient::new(&url, Some(format!("tok{i}")));

    // Created and started from 8 threads, each session by its own token.
    std::thread::scope(|s| {
        for t in 0..8 {
            let client = &client;
            s.spawn(move || {
                for i in (t..N).step_by(8) {
                    let c = client(i);
                    let body = format!(
                        r#"{{"name":"m{i}","interface":"va","filter":"udp dst port {}",
                            "outputs":[{{"type":"pcap"}}],"counter_interval_s":1}}"#,
                        6000 + i
                    );
                    c.post(&format!("/api/v1/sessions?experiment=exp{i}"), &body)
                        .unwrap();
                    c.post(&format!("/api/v1/sessions/m{i}/start"), "{}")
                        .unwrap();
                }
            });
        }
    });
    let admin = CtlClient::new(&url, Some("admin".into()));
    let all: Value = serde_json::from_str(&admin.get("/api/v1/sessions").unwrap()).unwrap();
    let all = all.as_array().unwrap();
    assert_eq!(all.len(), N);
    assert!(
        all.iter().all(|s| s["state"] == "running"),
        "all {N} run at once"
    );
    // One more is refused: the node keeps at most N.
    assert_eq!(
        http_status(admin.post(
            "/api/v1/sessions?experiment=exp0",
            r#"{"name":"extra","interface":"va"}"#
        )),
        503
    );

    // Traffic: session i's slice is slice(i) datagrams to port 6000 + i.
    let total: u64 = (0..N).map(slice).sum();
    in_netns(&b, || {
        let s = UdpSocket::bind("10.85.0.2:0").unwrap();
        for i in 0..N {
            for k in 0..slice(i) {
                s.send_to(&k.to_be_bytes(), ("10.85.0.1", 6000 + i as u16))
                    .unwrap();
            }
        }
    });
    let t0 = Instant::now();
    let counters = |i: usize| -> Value {
        let v: Value = serde_json::from_str(
            &client(i)
                .get(&format!("/api/v1/sessions/m{i}/status"))
                .unwrap(),
        )
        .unwrap();
        v["counters"].clone()
    };
    for i in 0..N {
        // The counters are published every 250 ms: wait for both the
        // session's slice and every packet offered to reach them.
        while counters(i)["stored"] != slice(i) || counters(i)["seen"].as_u64().unwrap() < total {
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "m{i}: {}, expected {}",
                counters(i),
                slice(i)
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let c = counters(i);
        assert_eq!(c["matched"], slice(i), "m{i}: {c}");
        assert_eq!(c["dropped_kernel"], 0, "m{i}: {c}");
        assert!(c["seen"].as_u64().unwrap() >= total, "m{i}: {c}");
    }

    // Isolation: each token sees only its own session.
    for i in 0..N {
        let c = client(i);
        let mine: Value = serde_json::from_str(&c.get("/api/v1/sessions").unwrap()).unwrap();
        assert_eq!(mine.as_array().unwrap().len(), 1, "tok{i}: {mine}");
        assert_eq!(mine[0]["id"], format!("m{i}"));
        let other = (i + 1 + i % 13) % N;
        for path in ["", "/status", "/files", "/log"] {
            assert_eq!(
                http_status(c.get(&format!("/api/v1/sessions/m{other}{path}"))),
                404,
                "tok{i} reading m{other}{path}"
            );
        }
        assert_eq!(
            http_status(c.post(&format!("/api/v1/sessions/m{other}/stop"), "{}")),
            404
        );
        let m = c
            .get("/metrics")
            .unwrap_or_else(|e| panic!("tok{i} /metrics: {e}"));
        assert!(!m.contains(&format!("session=\"m{other}\"")), "tok{i}");
    }
    let still: Value = serde_json::from_str(&admin.get("/api/v1/sessions").unwrap()).unwrap();
    assert!(still
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s["state"] == "running"));
    rt.block_on(daemon.shutdown());
}
