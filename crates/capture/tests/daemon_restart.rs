//! The daemon as a process (`common::daemon_proc`: this test binary re-run
//! as `child_daemon`, which runs `capture::daemon::run_until_signal`, the
//! function behind `streamgauge capture --config`):
//!
//! - SIGKILL during capture on a veth in a namespace, then a restart: the
//!   session is listed again and captures again, the file left open is
//!   repaired (tshark reads every file), and every file reaches the real
//!   sftp server exactly once (files uploaded before the kill are not
//!   uploaded again; sequence numbers have no gap or duplicate);
//! - SIGHUP re-reads the token file (a bad file keeps the old tokens).

mod common;

#[path = "../../archive/tests/common/mod.rs"]
mod archive_common;

use capture::daemon::ctl::{CtlClient, CtlError};
use common::daemon_proc::{child_main, wait_for, DaemonProc};
use common::netns::{in_netns, pair, root_or_skip, wait_reachable};
use serde_json::Value;
use std::collections::BTreeMap;
use std::net::UdpSocket;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Child side: the daemon on the configuration named in the environment.
#[test]
fn child_daemon() {
    child_main();
}

fn get(c: &CtlClient, path: &str) -> Value {
    serde_json::from_str(&c.get(path).unwrap()).unwrap()
}

/// (inode, mtime ns, size) of every file on the sftp server.
fn remote_files(root: &Path, names: &[String]) -> BTreeMap<String, (u64, i64, u64)> {
    names
        .iter()
        .filter_map(|n| {
            let m = std::fs::metadata(root.join(n)).ok()?;
            Some((
                n.clone(),
                (m.ino(), m.mtime_nsec() + m.mtime() * 1_000_000_000, m.len()),
            ))
        })
        .collect()
}

#[test]
fn sigkill_then_restart_recovers_sessions_files_and_archive() {
    if !root_or_skip("daemon restart test") || !common::have("ip") || !common::have("tshark") {
        return;
    }
    let Some(sshd) = archive_common::Sshd::start_new() else {
        return;
    };
    let (a, b, _guard) = pair("sgr", &[("va", "vb", "10.84.0")]);
    wait_reachable(&b, "10.84.0.1");
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let config = dir.path().join("capture.toml");
    std::fs::write(
        &config,
        format!(
            r#"interfaces = ["va"]
data_dir = "{data}"
listen = "127.0.0.1:0"
plain_http = true
netns = "{a}"
{archive}"#,
            data = data.display(),
            archive = sshd.daemon_archive_toml(&dir.path().join("state")),
        ),
    )
    .unwrap();

    let d1 = DaemonProc::start(&config);
    // The daemon created its token file in the data directory.
    let token_file = data.join(".control/tokens");
    let token = httpkit::token_init::own_token(&token_file).unwrap();
    assert!(token.is_some(), "a control token was created");
    assert_eq!(
        std::fs::metadata(&token_file).unwrap().mode() & 0o777,
        0o600
    );
    assert_eq!(
        CtlClient::new(&d1.addr, None)
            .get("/api/v1/sessions")
            .err()
            .map(|e| e.to_string().contains("401")),
        Some(true),
        "requests without the token are refused"
    );
    let c = CtlClient::new(&d1.addr, token.clone());
    c.post(
        "/api/v1/sessions?experiment=lab1&archive=lab",
        r#"{"name":"r1","interface":"va","filter":"udp dst port 7100",
            "outputs":[{"type":"pcap"}],"rollover":{"bytes":60000}}"#,
    )
    .unwrap();
    c.post("/api/v1/sessions/r1/start", "{}").unwrap();

    // Steady traffic from B (about 1000 packets/s) for the whole test.
    let stop = Arc::new(AtomicBool::new(false));
    let sender = {
        let (b, stop) = (b.clone(), Arc::clone(&stop));
        std::thread::spawn(move || {
            in_netns(&b, move || {
                let s = UdpSocket::bind("10.84.0.2:0").unwrap();
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    s.send_to(&i.to_be_bytes().repeat(25), "10.84.0.1:7100")
                        .unwrap();
                    i += 1;
                    std::thread::sleep(Duration::from_millis(2));
                }
                i
            })
        })
    };
    let pcaps = || -> Vec<String> {
        sshd.files()
            .into_iter()
            .filter(|f| f.starts_with("lab1/r1/") && f.ends_with(".pcap"))
            .collect()
    };
    wait_for("two closed files archived before the kill", 30, || {
        pcaps().len() >= 2
    });
    // Kill while a file is open and has records on disk.
    std::thread::sleep(Duration::from_millis(700));
    d1.signal("-KILL");
    drop(d1);
    let before = remote_files(&sshd.root, &sshd.files());
    let open_left: Vec<_> = std::fs::read_dir(data.join("r1"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".pcap") && !data.join("r1").join(format!("{n}.json")).exists())
        .collect();
    assert!(!open_left.is_empty(), "a file was open at the kill");

    // Restart: the session is back, running, its open file repaired.
    let d2 = DaemonProc::start(&config);
    assert_eq!(
        httpkit::token_init::own_token(&token_file).unwrap(),
        token,
        "a restart keeps the token file"
    );
    let c = CtlClient::new(&d2.addr, token);
    let list = get(&c, "/api/v1/sessions");
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    assert_eq!(list[0]["id"], "r1");
    assert_eq!(list[0]["experiment"], "lab1");
    assert_eq!(list[0]["state"], "running");
    assert_eq!(list[0]["archive_targets"][0], "lab");
    let log = get(&c, "/api/v1/sessions/r1/log")["lines"].to_string();
    for f in &open_left {
        assert!(log.contains(&format!("recovered {f}")), "{log}");
    }
    wait_for("capturing again", 10, || {
        get(&c, "/api/v1/sessions/r1/status")["counters"]["stored"].as_u64() > Some(500)
    });
    stop.store(true, Ordering::Relaxed);
    sender.join().unwrap();
    let st: Value =
        serde_json::from_str(&c.post("/api/v1/sessions/r1/stop", "{}").unwrap()).unwrap();
    assert_eq!(st["state"], "stopped");

    // Every file arrives (the local copies go once uploaded), exactly once.
    wait_for("every local file archived and deleted", 60, || {
        std::fs::read_dir(data.join("r1"))
            .unwrap()
            .flatten()
            .all(|e| !e.file_name().to_string_lossy().contains(".pcap"))
    });
    let names = sshd.files();
    assert!(!names.iter().any(|n| n.ends_with(".part")), "{names:?}");
    let after = remote_files(&sshd.root, &names);
    for (n, v) in &before {
        if !n.ends_with(".part") {
            assert_eq!(
                after.get(n),
                Some(v),
                "{n} was uploaded again after the restart"
            );
        }
    }
    let pcaps = pcaps();
    let mut seqs: Vec<u64> = pcaps
        .iter()
        .map(|n| n["lab1/r1/r1_".len()..][..6].parse().unwrap())
        .collect();
    seqs.sort();
    assert_eq!(
        seqs,
        (0..seqs.len() as u64).collect::<Vec<_>>(),
        "{pcaps:?}"
    );
    let mut recovered = 0;
    for p in &pcaps {
        for ext in ["json", "xml"] {
            assert!(
                names.contains(&format!("{p}.{ext}")),
                "{p}.{ext} missing: {names:?}"
            );
        }
        let md: Value =
            serde_json::from_slice(&std::fs::read(sshd.root.join(format!("{p}.json"))).unwrap())
                .unwrap();
        if md["recovered"] == true {
            recovered += 1;
            assert!(open_left.iter().any(|f| p.ends_with(f)), "{p}");
        }
        let out = Command::new("tshark")
            .args([
                "-r",
                sshd.root.join(p).to_str().unwrap(),
                "-T",
                "fields",
                "-e",
                "frame.number",
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && !err.contains("cut short") && !err.contains("damaged"),
            "tshark {p}: {err}"
        );
        let frames = String::from_utf8_lossy(&out.stdout).lines().count() as u64;
        assert_eq!(md["packets"], frames, "{p}");
    }
    assert_eq!(recovered, open_left.len());
    d2.signal("-TERM");
    let mut d2 = d2;
    assert!(d2.child.wait().unwrap().success());
}

#[test]
fn sighup_rereads_the_token_file() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    httpkit::secret::write_private(&tokens, "lab1 tok1 read\n").unwrap();
    let config = dir.path().join("capture.toml");
    std::fs::write(
        &config,
        format!(
            "interfaces = [\"lo\"]\ndata_dir = \"{}\"\nlisten = \"127.0.0.1:0\"\nplain_http = true\ntoken_file = \"{}\"\n",
            dir.path().join("data").display(),
            tokens.display()
        ),
    )
    .unwrap();
    let d = DaemonProc::start(&config);
    let status = |tok: &str| match CtlClient::new(&d.addr, Some(tok.into())).get("/api/v1/sessions")
    {
        Ok(_) => 200,
        Err(CtlError::Status { status, .. }) => status,
        Err(e) => panic!("{e}"),
    };
    assert_eq!((status("tok1"), status("tok2")), (200, 401));
    std::fs::write(&tokens, "lab1 tok2 read\n").unwrap();
    d.signal("-HUP");
    wait_for("the new token file in force", 10, || {
        status("tok2") == 200 && status("tok1") == 401
    });
    // A broken file is refused: the tokens in force stay.
    std::fs::write(&tokens, "this line is not a token line\n").unwrap();
    d.signal("-HUP");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!((status("tok1"), status("tok2")), (401, 200));
    d.signal("-TERM");
    let mut d = d;
    assert!(d.child.wait().unwrap().success());
}
