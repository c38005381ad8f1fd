//! A real SIGKILL of the process running the archiver in the middle of sftp
//! uploads; a new process-equivalent (new `Archiver` on the same state dir)
//! must deliver every file exactly once.
//!
//! The test binary re-runs itself as the child (`child_process` below, which
//! does nothing unless `ARCHIVE_SIGKILL_CHILD` is set).

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use archive::{Archiver, ArchiverConfig};
use common::{random_file, wait_for, Sshd};
use serde_json::json;

const CHILD_ENV: &str = "ARCHIVE_SIGKILL_CHILD";

/// Child side: enqueue the files given in the environment, report, then
/// upload until killed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_process() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let spec: serde_json::Value = serde_json::from_str(&spec).unwrap();
    let cfg: ArchiverConfig = serde_json::from_value(spec["config"].clone()).unwrap();
    let archiver = Archiver::open(cfg).await.unwrap();
    for f in spec["files"].as_array().unwrap() {
        let path = std::path::PathBuf::from(f.as_str().unwrap());
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        archiver.enqueue(&path, &name, &["t"]).unwrap();
    }
    println!("ENQUEUED");
    tokio::time::sleep(Duration::from_secs(60)).await;
    panic!("the parent should have killed this process");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_upload_then_restart_delivers_each_file_once() {
    let Some(s) = Sshd::start_new() else { return };
    let work = tempfile::tempdir().unwrap();
    let config = json!({
        "state_dir": work.path().join("state"),
        "targets": {"t": {"kind": "sftp", "host": "127.0.0.1", "port": s.port, "user": s.user,
            "private_key_file": s.client_key, "known_hosts_file": s.known_hosts,
            "remote_dir": s.root.join("k")}},
        "backoff": {"initial_ms": 100, "max_ms": 400},
    });
    let n = 4;
    let mut files = Vec::new();
    let mut contents = Vec::new();
    for i in 0..n {
        let p = work.path().join(format!("big{i}.pcap"));
        contents.push(random_file(&p, 6 * 1024 * 1024, 300 + i as u64));
        files.push(p);
    }
    let spec = json!({"config": config, "files": files});
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_process",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, spec.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while !line.contains("ENQUEUED") {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "child exited early");
    }
    // kill while a temporary file is being written
    let start = Instant::now();
    while !s.files().iter().any(|f| f.ends_with(".part")) {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no upload started"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let before: Vec<String> = s.files();
    assert!(before.iter().any(|f| f.ends_with(".part")), "{before:?}");

    let cfg: ArchiverConfig = serde_json::from_value(config).unwrap();
    let archiver = Archiver::open(cfg).await.unwrap();
    wait_for("all delivered", Duration::from_secs(60), || {
        archiver.stats().unwrap().done == n as u64
    })
    .await;
    wait_for("local copies deleted", Duration::from_secs(10), || {
        files.iter().all(|f| !f.exists())
    })
    .await;
    let after = s.files();
    assert_eq!(
        after.len(),
        n,
        "one copy each and no partial left: {after:?}"
    );
    for (i, data) in contents.iter().enumerate() {
        assert!(
            std::fs::read(s.root.join(format!("k/big{i}.pcap"))).unwrap() == *data,
            "big{i}"
        );
    }
}
