//! Throughput figures (ignored by default; run with
//! `cargo test -p archive --release --test throughput -- --ignored --nocapture`).
//! The sftp figure is compared in the same run with OpenSSH's own `sftp`
//! client putting the same file to the same server (the reference; it does
//! not verify, the archiver also reads the file back), and the ratio printed.
//!
//! Last results (2-core shared VM, load ~9 from other builds, rustc 1.95,
//! release, 64 MiB random file, OpenSSH 9.2 sshd, moto 5.2.1):
//!   archive sftp 24.5-26.8 MB/s, OpenSSH sftp put 54-62 MB/s (ratio 0.44-0.50);
//!   archive s3 (multipart 16 MiB, moto) 18-28 MB/s (moto-bound).

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use archive::{Archiver, ArchiverConfig};
use common::{random_file, wait_for, Moto, Sshd};
use serde_json::json;

const SIZE: usize = 64 * 1024 * 1024;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "measurement, not a check"]
async fn sftp_and_s3_throughput() {
    let (Some(s), Some(m)) = (Sshd::start_new(), Moto::start_new()) else {
        return;
    };
    m.create_bucket("bench");
    let work = tempfile::tempdir().unwrap();
    let cred = work.path().join("cred");
    std::fs::write(&cred, "access_key_id = a\nsecret_access_key = b\n").unwrap();
    let cfg: ArchiverConfig = serde_json::from_value(json!({
        "state_dir": work.path().join("state"),
        "keep_local": true,
        "targets": {
            "sftp": {"kind": "sftp", "host": "127.0.0.1", "port": s.port, "user": s.user,
                "private_key_file": s.client_key, "known_hosts_file": s.known_hosts,
                "remote_dir": s.root.join("in")},
            "s3": {"kind": "s3", "endpoint": m.endpoint(), "region": "us-east-1",
                "bucket": "bench", "credentials": {"file": cred}},
        },
    }))
    .unwrap();
    let archiver = Archiver::open(cfg).await.unwrap();
    let file = work.path().join("big.pcap");
    random_file(&file, SIZE, 1);
    let mb = SIZE as f64 / 1e6;
    let mut sftp_secs = 0.0;

    for (n, target) in ["sftp", "s3"].iter().enumerate() {
        let t = Instant::now();
        std::fs::copy(&file, file.with_extension(target)).unwrap();
        archiver
            .enqueue(&file.with_extension(target), "big.pcap", &[target])
            .unwrap();
        wait_for(target, Duration::from_secs(300), || {
            archiver.stats().unwrap().done == n as u64 + 1
        })
        .await;
        let secs = t.elapsed().as_secs_f64();
        if *target == "sftp" {
            sftp_secs = secs;
        }
        println!(
            "archive {target}: {mb:.0} MB in {secs:.2} s = {:.1} MB/s (digest + upload + verify)",
            mb / secs
        );
    }

    let batch = work.path().join("batch");
    std::fs::write(
        &batch,
        format!("put {} {}/ref.pcap\n", file.display(), s.root.display()),
    )
    .unwrap();
    let t = Instant::now();
    let st = Command::new("sftp")
        .args(["-q", "-b"])
        .arg(&batch)
        .args(["-i"])
        .arg(&s.client_key)
        .arg("-o")
        .arg(format!("UserKnownHostsFile={}", s.known_hosts.display()))
        .args(["-P", &s.port.to_string()])
        .arg(format!("{}@127.0.0.1", s.user))
        .status()
        .unwrap();
    assert!(st.success());
    let secs = t.elapsed().as_secs_f64();
    println!(
        "reference OpenSSH sftp put: {mb:.0} MB in {secs:.2} s = {:.1} MB/s",
        mb / secs
    );
    println!(
        "ratio archive sftp / OpenSSH sftp put: {:.2}",
        secs / sftp_secs
    );
}
