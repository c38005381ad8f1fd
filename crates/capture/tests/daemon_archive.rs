//! Archive wiring of the capture daemon, as root on the loopback interface
//! (traffic stays on this host): a session created with `?archive=lab`
//! has its closed pcap file and metadata uploaded to a real OpenSSH server
//! (the archive crate's test harness) as `<experiment>/<session>/<file>`.

#![allow(unsafe_code)] // geteuid(2)

#[path = "../../archive/tests/common/mod.rs"]
mod archive_common;

use capture::daemon::ctl::CtlClient;
use capture::daemon::{Daemon, DaemonConfig};
use serde_json::Value;
use std::net::UdpSocket;
use std::time::{Duration, Instant};

#[test]
fn closed_files_reach_the_archive_target() {
    if !testkit::have_root("AF_PACKET capture") {
        return;
    }
    let Some(sshd) = archive_common::Sshd::start_new() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let toml = format!(
        r#"interfaces = ["lo"]
data_dir = "{data}"
listen = "127.0.0.1:0"
plain_http = true

{archive}"#,
        data = dir.path().join("data").display(),
        archive = sshd.daemon_archive_toml(&dir.path().join("state")),
    );
    let cfg = DaemonConfig::from_toml(&toml).unwrap();
    let token_file = cfg.effective_token_file();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let daemon = rt.block_on(Daemon::start(cfg)).unwrap();
    // The token file the daemon created on its first start.
    let token = httpkit::token_init::own_token(&token_file).unwrap();
    let c = CtlClient::new(&daemon.local_addr().to_string(), token);

    let sink = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = sink.local_addr().unwrap().port();
    let body = format!(
        r#"{{"name":"arch","filter":"udp dst port {port}","outputs":[{{"type":"pcap"}}]}}"#
    );
    let bad = c.post("/api/v1/sessions?experiment=lab1&archive=nowhere", &body);
    assert!(
        matches!(
            &bad,
            Err(capture::daemon::ctl::CtlError::Status { status: 400, .. })
        ),
        "{bad:?}"
    );
    c.post("/api/v1/sessions?experiment=lab1&archive=lab", &body)
        .unwrap();
    c.post("/api/v1/sessions/arch/start", "{}").unwrap();
    let src = UdpSocket::bind("127.0.0.1:0").unwrap();
    for i in 0..10u8 {
        src.send_to(&[i; 100], ("127.0.0.1", port)).unwrap();
    }
    let t0 = Instant::now();
    let status =
        || -> Value { serde_json::from_str(&c.get("/api/v1/sessions/arch").unwrap()).unwrap() };
    while status()["counters"]["stored"].as_u64() < Some(10) {
        assert!(t0.elapsed() < Duration::from_secs(10), "{}", status());
        std::thread::sleep(Duration::from_millis(100));
    }
    c.post("/api/v1/sessions/arch/stop", "{}").unwrap();
    let t0 = Instant::now();
    loop {
        let files = sshd.files();
        let under = |ext: &str| {
            files
                .iter()
                .any(|f| f.starts_with("lab1/arch/arch_") && f.ends_with(ext))
        };
        if under(".pcap") && under(".pcap.json") && under(".pcap.xml") {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "not archived: {files:?} {}",
            status()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let v = status();
    assert_eq!(v["archive_targets"][0], "lab");
    assert_eq!(v["archive_enqueued"], 3);
    let m = c.get("/metrics").unwrap();
    assert!(
        m.contains(
            "capture_session_archived_total{session=\"arch\",experiment=\"lab1\",interface=\"lo\"} 3"
        ),
        "{m}"
    );
    rt.block_on(daemon.shutdown());
}
