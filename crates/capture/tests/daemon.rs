//! The capture daemon end to end, as root: two network namespaces joined by
//! two veth pairs (created here, deleted by a drop guard even on failure),
//! the daemon's packet sockets in namespace A, UDP traffic sent from
//! namespace B only, sessions created over the control API with different
//! tokens, counters streamed to a real collection server, files read by
//! tshark, an interface deleted while capturing, and a clean shutdown.

mod common;

use capture::daemon::ctl::{CtlClient, CtlError};
use capture::daemon::{Daemon, DaemonConfig};
use common::netns::{in_netns, ip, pair, root_or_skip};
use serde_json::Value;
use std::net::UdpSocket;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn status(c: &CtlClient, id: &str) -> Value {
    serde_json::from_str(&c.get(&format!("/api/v1/sessions/{id}/status")).unwrap()).unwrap()
}

fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !ok() {
        assert!(t0.elapsed() < Duration::from_secs(15), "timed out: {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn http_status(r: Result<String, CtlError>) -> u16 {
    match r {
        Err(CtlError::Status { status, .. }) => status,
        Err(e) => panic!("{e}"),
        Ok(body) => panic!("expected an error, got {body}"),
    }
}

fn tshark_count(path: &Path) -> usize {
    let out = Command::new("tshark")
        .args([
            "-r",
            path.to_str().unwrap(),
            "-T",
            "fields",
            "-e",
            "frame.number",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "tshark {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).lines().count()
}

#[test]
fn daemon_sessions_isolation_counters_failure_shutdown() {
    if !root_or_skip("daemon test") || !common::have("ip") || !common::have("tshark") {
        return;
    }
    let (a, b, _guard) = pair("sgd", &[("va", "vb", "10.78.0"), ("vc", "vd", "10.79.0")]);

    let rt = tokio::runtime::Runtime::new().unwrap();
    let srv_dir = tempfile::tempdir().unwrap();
    let mut scfg = server::ServerConfig::new(srv_dir.path());
    scfg.listen = vec!["127.0.0.1:0".parse().unwrap()];
    let srv = rt.block_on(server::Server::start(scfg)).unwrap();
    let srv_addr = srv.local_addrs()[0];

    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    httpkit::secret::write_private(&tokens, "lab1 tok1 read\nlab2 tok2 read\n* admin control\n")
        .unwrap();
    let data = dir.path().join("data");
    let mut cfg = DaemonConfig::new(&["va", "vc"], &data);
    cfg.listen = "127.0.0.1:0".parse().unwrap();
    cfg.token_file = Some(tokens);
    cfg.netns = Some(a.clone());
    cfg.collect = Some(srv_addr.to_string());
    cfg.policy.max_snaplen = Some(65535);
    let daemon = rt.block_on(Daemon::start(cfg)).unwrap();
    // Over HTTPS, the daemon's self-signed certificate pinned.
    let url = daemon.url();
    assert!(url.starts_with("https://"), "{url}");
    let pin = httpkit::tls::ClientTls::pinned(daemon.fingerprint().expect("TLS by default"));
    let client = |tok: Option<&str>| {
        CtlClient::new(&url, tok.map(str::to_owned)).with_tls(Some(pin.clone()))
    };
    let t1 = client(Some("tok1"));
    let t2 = client(Some("tok2"));
    let admin = client(Some("admin"));

    // Capabilities list both interfaces and the policy.
    let caps: Value = serde_json::from_str(&t1.get("/api/v1/capabilities").unwrap()).unwrap();
    assert_eq!(caps["interfaces"][0]["name"], "va");
    // Read in the capture namespace: the link does not exist outside it.
    assert_eq!(caps["interfaces"][0]["operstate"], "up", "{caps}");
    assert_eq!(caps["interfaces"][0]["speed_mbps"], 10000, "veth: {caps}");
    assert_eq!(caps["policy"]["max_snaplen"], 65535);

    // The node caps snaplen below the 262144 default: sessions name theirs.
    let s1 = r#"{"name":"s1","interface":"va","filter":"udp port 5001","snaplen":65535,
        "outputs":[{"type":"pcap"}],"counter_interval_s":1}"#;
    let s2 = r#"{"name":"s2","interface":"va","shortcuts":{"proto":"udp","dst_port":5002},"snaplen":1500,
        "header_only":true,"outputs":[{"type":"pcapng"}],"counter_interval_s":1}"#;
    t1.post("/api/v1/sessions?experiment=lab1", s1).unwrap();
    t2.post("/api/v1/sessions?experiment=lab2", s2).unwrap();
    // Refusals: another experiment (403), the policy (403 policy_refused), a duplicate (409).
    assert_eq!(
        http_status(t1.post(
            "/api/v1/sessions?experiment=lab2",
            r#"{"name":"x","interface":"va"}"#
        )),
        403
    );
    match t1.post(
        "/api/v1/sessions?experiment=lab1",
        r#"{"name":"big","interface":"va","snaplen":100000}"#,
    ) {
        Err(CtlError::Status {
            status,
            code,
            message,
            ..
        }) => {
            assert_eq!((status, code.as_str()), (403, "policy_refused"));
            assert!(message.contains("exceeds this node's maximum"), "{message}");
        }
        r => panic!("{r:?}"),
    }
    assert_eq!(
        http_status(t1.post("/api/v1/sessions?experiment=lab1", s1)),
        409
    );
    t1.post("/api/v1/sessions/s1/start", "{}").unwrap();
    t2.post("/api/v1/sessions/s2/start", "{}").unwrap();
    assert_eq!(status(&t1, "s1")["state"], "running");

    // Traffic from namespace B only: 100 datagrams to port 5001, 50 to 5002.
    in_netns(&b, || {
        let s = UdpSocket::bind("10.78.0.2:0").unwrap();
        s.send_to(b"warm-up", "10.78.0.1:9").unwrap();
        std::thread::sleep(Duration::from_millis(300));
        for i in 0..150u32 {
            let port = if i < 100 { 5001 } else { 5002 };
            s.send_to(&i.to_be_bytes().repeat(20), ("10.78.0.1", port))
                .unwrap();
        }
    });
    wait_for("s1 stored 100, s2 stored 50", || {
        status(&t1, "s1")["counters"]["stored"] == 100
            && status(&t2, "s2")["counters"]["stored"] == 50
    });
    let c1 = status(&t1, "s1")["counters"].clone();
    assert_eq!(
        (c1["matched"].as_u64(), c1["dropped_kernel"].as_u64()),
        (Some(100), Some(0))
    );
    assert!(c1["seen"].as_u64().unwrap() >= 150, "{c1}");

    // Isolation: each token sees only its experiment's sessions.
    for path in ["status", "files", "log"] {
        assert_eq!(
            http_status(t1.get(&format!("/api/v1/sessions/s2/{path}"))),
            404
        );
        assert_eq!(
            http_status(t2.get(&format!("/api/v1/sessions/s1/{path}"))),
            404
        );
    }
    assert_eq!(http_status(t2.post("/api/v1/sessions/s1/stop", "{}")), 404);
    assert_eq!(http_status(t2.delete("/api/v1/sessions/s1")), 404);
    let mine: Value = serde_json::from_str(&t1.get("/api/v1/sessions").unwrap()).unwrap();
    assert_eq!(mine.as_array().unwrap().len(), 1);
    assert_eq!(mine[0]["id"], "s1");
    let all: Value = serde_json::from_str(&admin.get("/api/v1/sessions").unwrap()).unwrap();
    assert_eq!(all.as_array().unwrap().len(), 2);
    assert_eq!(http_status(client(None).get("/api/v1/sessions")), 401);
    let m = t1.get("/metrics").unwrap();
    assert!(
        m.contains("capture_session_stored_total{session=\"s1\""),
        "{m}"
    );
    assert!(!m.contains("\"s2\""), "{m}");
    let api: Value = serde_json::from_str(&t1.get("/api/v1/openapi.json").unwrap()).unwrap();
    assert!(api["paths"]["/api/v1/sessions/{id}/status"].is_object());

    // Pause: packets are no longer handed to the session.
    t1.post("/api/v1/sessions/s1/pause", "{}").unwrap();
    in_netns(&b, || {
        let s = UdpSocket::bind("10.78.0.2:0").unwrap();
        for _ in 0..10 {
            s.send_to(b"paused", "10.78.0.1:5001").unwrap();
        }
    });
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(status(&t1, "s1")["counters"]["stored"], 100);
    t1.post("/api/v1/sessions/s1/resume", "{}").unwrap();

    // Stop s1: its pcap file is complete, downloadable and readable by tshark.
    let st: Value =
        serde_json::from_str(&t1.post("/api/v1/sessions/s1/stop", "{}").unwrap()).unwrap();
    assert_eq!(st["state"], "stopped");
    let files: Value = serde_json::from_str(&t1.get("/api/v1/sessions/s1/files").unwrap()).unwrap();
    let names: Vec<&str> = files["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    let pcap = names
        .iter()
        .find(|n| n.ends_with(".pcap"))
        .expect("a pcap file");
    assert!(names.iter().any(|n| n.ends_with(".pcap.json")), "{names:?}");
    let bytes = t1
        .get_bytes(&format!("/api/v1/sessions/s1/files/{pcap}"))
        .unwrap();
    let local = dir.path().join("s1.pcap");
    std::fs::write(&local, bytes).unwrap();
    assert_eq!(tshark_count(&local), 100);
    assert_eq!(
        http_status(t1.get("/api/v1/sessions/s1/files/..%2Ftokens")),
        404
    );
    let log: Value = serde_json::from_str(&t1.get("/api/v1/sessions/s1/log").unwrap()).unwrap();
    assert!(
        log["lines"].to_string().contains("running -> paused"),
        "{log}"
    );

    // An interface disappearing fails its session with a reason; the daemon goes on.
    admin
        .post(
            "/api/v1/sessions?experiment=lab1",
            r#"{"name":"s3","interface":"vc","snaplen":65535,"outputs":[{"type":"pcap"}]}"#,
        )
        .unwrap();
    admin.post("/api/v1/sessions/s3/start", "{}").unwrap();
    ip(&["-n", &a, "link", "del", "vc"]);
    wait_for("s3 failed", || status(&t1, "s3")["state"] == "failed");
    let reason = status(&t1, "s3")["reason"].as_str().unwrap().to_string();
    assert!(reason.contains("vc disappeared"), "{reason}");
    assert_eq!(status(&t2, "s2")["state"], "running");
    assert!(t1.get("/api/v1/capabilities").is_ok());

    // Shutdown (what SIGTERM does): s2's pcapng file is closed and valid.
    rt.block_on(daemon.shutdown());
    let s2dir = data.join("s2");
    let pcapng: Vec<_> = std::fs::read_dir(&s2dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "pcapng"))
        .collect();
    assert_eq!(pcapng.len(), 1, "{pcapng:?}");
    assert_eq!(tshark_count(&pcapng[0]), 50);
    assert!(pcapng[0].with_extension("pcapng.json").exists());

    // Counters as measurement streams: the last snapshot equals the traffic.
    let db = srv_dir.path().join("lab1.sq3");
    wait_for("capture_counters rows in lab1", || {
        let Ok(conn) = rusqlite::Connection::open(&db) else {
            return false;
        };
        conn.query_row(
            "SELECT max(stored), max(matched) FROM capture_counters WHERE session = 's1'",
            [],
            |r| Ok((r.get::<_, Option<i64>>(0)?, r.get::<_, Option<i64>>(1)?)),
        )
        .map(|v| v == (Some(100), Some(100)))
        .unwrap_or(false)
    });
    // The counters are declared as such (metadata `kind`), so the query
    // API can give their rates.
    wait_for("capture_counters declared as counters", || {
        rusqlite::Connection::open(&db)
            .and_then(|c| {
                c.query_row(
                    "SELECT count(*) FROM _experiment_metadata WHERE subject = '.capture_counters.seen' \
                     AND key = 'kind' AND value = 'counter'",
                    [],
                    |r| r.get::<_, i64>(0),
                )
            })
            .is_ok_and(|n| n > 0)
    });
    let db2 = srv_dir.path().join("lab2.sq3");
    wait_for("capture_counters rows in lab2", || {
        let Ok(conn) = rusqlite::Connection::open(&db2) else {
            return false;
        };
        conn.query_row(
            "SELECT max(stored) FROM capture_counters WHERE session = 's2'",
            [],
            |r| r.get::<_, Option<i64>>(0),
        )
        .map(|v| v == Some(50))
        .unwrap_or(false)
    });
    rt.block_on(srv.shutdown());
}
