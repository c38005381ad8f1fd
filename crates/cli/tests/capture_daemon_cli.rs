//! `streamgauge capture --config` as a process, driven by `streamgauge
//! capture ctl`, on the loopback interface (traffic stays on this host's
//! loopback): create, start, status, files; SIGTERM leaves a complete pcap
//! file whose packet count equals the session's `stored` counter.

use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Kill(Child);
impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `capture ctl` over HTTPS, pinning the certificate the daemon made in
/// `data` and sending the token of the token file it created there.
fn ctl(url: &str, data: &Path, args: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_streamgauge"))
        .args(["capture", "ctl", "--url", url])
        .arg("--cert")
        .arg(data.join(".control/tls/cert.pem"))
        .arg("--token-file")
        .arg(data.join(".control/tokens"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ctl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn daemon_process_ctl_and_sigterm() {
    if !testkit::have_root("AF_PACKET capture") {
        return;
    }
    let have_tshark = testkit::have_tool("tshark", &["--version"], "apt install tshark");
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let cfg = dir.path().join("capture.toml");
    std::fs::write(
        &cfg,
        format!(
            "interfaces = [\"lo\"]\ndata_dir = \"{}\"\nlisten = \"127.0.0.1:0\"\n",
            data.display()
        ),
    )
    .unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_streamgauge"))
        .args(["capture", "--config"])
        .arg(&cfg)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut child = Kill(child);
    let mut line = String::new();
    BufReader::new(child.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line.trim().rsplit(' ').next().unwrap().to_string();
    assert!(url.starts_with("https://127.0.0.1:"), "{line}");
    // No token_file and no tls_cert configured: the daemon created both.
    let mode = std::fs::metadata(data.join(".control/tokens"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let no_token = Command::new(env!("CARGO_BIN_EXE_streamgauge"))
        .args(["capture", "ctl", "--url", &url, "--cert"])
        .arg(data.join(".control/tls/cert.pem"))
        .arg("list")
        .env_remove("STREAMGAUGE_TOKEN")
        .output()
        .unwrap();
    assert!(
        !no_token.status.success() && String::from_utf8_lossy(&no_token.stderr).contains("401"),
        "without the token: {}",
        String::from_utf8_lossy(&no_token.stderr)
    );

    let sink = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = sink.local_addr().unwrap().port();
    let session = dir.path().join("s.json");
    std::fs::write(
        &session,
        format!(r#"{{"name":"lo1","filter":"udp dst port {port}","outputs":[{{"type":"pcap"}}]}}"#),
    )
    .unwrap();
    let caps = ctl(&url, &data, &["capabilities"]);
    assert_eq!(caps["interfaces"][0]["name"], "lo");
    let created = ctl(
        &url,
        &data,
        &["create", session.to_str().unwrap(), "--experiment", "lab1"],
    );
    assert_eq!(
        (created["state"].as_str(), created["experiment"].as_str()),
        (Some("created"), Some("lab1"))
    );
    assert_eq!(ctl(&url, &data, &["start", "lo1"])["state"], "running");

    let src = UdpSocket::bind("127.0.0.1:0").unwrap();
    for i in 0..20u8 {
        src.send_to(&[i; 64], ("127.0.0.1", port)).unwrap();
    }
    let t0 = Instant::now();
    while ctl(&url, &data, &["status", "lo1"])["counters"]["stored"].as_u64() < Some(20) {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "packets not counted: {}",
            ctl(&url, &data, &["show", "lo1"])
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(500));
    let stored = ctl(&url, &data, &["status", "lo1"])["counters"]["stored"]
        .as_u64()
        .unwrap();
    assert_eq!(ctl(&url, &data, &["list"]).as_array().unwrap().len(), 1);

    // SIGTERM: the daemon closes the file (valid trailer, metadata) and exits 0.
    let sent = Command::new("kill")
        .args(["-TERM", &child.0.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = child.0.wait().unwrap();
    assert!(status.success(), "{status}");
    let files: Vec<_> = std::fs::read_dir(data.join("lo1"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    let pcap = files
        .iter()
        .find(|p| p.extension().is_some_and(|x| x == "pcap"))
        .expect("a pcap file");
    assert!(files
        .iter()
        .any(|p| p.to_string_lossy().ends_with(".pcap.json")));
    if have_tshark {
        let o = Command::new("tshark").arg("-r").arg(pcap).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(
            String::from_utf8_lossy(&o.stdout).lines().count() as u64,
            stored
        );
    }
}
