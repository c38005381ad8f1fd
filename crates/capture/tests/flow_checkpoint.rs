//! Flow checkpoints through the public API, with a crash simulated by
//! forgetting the session (no destructor runs: buffered bytes and flows in
//! memory are lost as with SIGKILL), then the recovery steps the daemon
//! runs (cut the open IPFIX file to the checkpoint, repair it, restore
//! the flows into the restarted session). The IPFIX files are read back
//! with our decoder: every packet up to the last checkpoint is counted
//! exactly once, later ones of the dead run not at all.

mod common;

use capture::checkpoint::Checkpoint;
use capture::config::SessionConfig;
use capture::ipfix;
use capture::session::{Session, SessionEnv};
use common::frame4;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const S: u64 = 1_000_000_000;
const T0: u64 = 1_700_000_000 * S;

fn session(dir: &Path) -> Session {
    let cfg = SessionConfig::from_json(
        r#"{"name":"ck","filter":"udp","outputs":[
            {"type":"ipfix","target":{"transport":"file","path":"flows.ipfix"},
             "flows":{"idle_timeout_s":2,"active_timeout_s":600}}]}"#,
    )
    .unwrap();
    let env = SessionEnv {
        data_dir: dir.to_path_buf(),
        source: "test0".into(),
        key: None,
        closed: None,
        flows: None,
    };
    Session::new(cfg, &env).unwrap()
}

/// Sends `n` packets of flow `port` at `t` and adds them to `want`.
fn send(s: &mut Session, want: &mut BTreeMap<u16, (u64, u64)>, port: u16, n: u64, t: u64) {
    let f = frame4([10, 0, 0, 1], [10, 0, 0, 2], 17, port, 53, 0, &[0u8; 72]);
    for i in 0..n {
        s.process(t + i, &f);
    }
    let e = want.entry(port).or_default();
    e.0 += n;
    e.1 += n * 100; // IP bytes: 20 + 8 + 72
}

/// Packets and bytes per source port over IPFIX files.
fn totals(files: &[PathBuf]) -> BTreeMap<u16, (u64, u64)> {
    let mut m = BTreeMap::new();
    for f in files {
        for r in ipfix::read_all(&std::fs::read(f).unwrap()).unwrap() {
            let e: &mut (u64, u64) = m.entry(r.key.sport).or_default();
            e.0 += r.packets;
            e.1 += r.octets;
        }
    }
    m
}

/// What the daemon does at start for a killed session, then the restart.
fn recover_and_restart(dir: &Path, ck: &Path) -> (Session, usize) {
    if let Some(c) = Checkpoint::read(ck).unwrap() {
        c.cut_open_files().unwrap();
    }
    ipfix::repair(&dir.join("ck/flows.ipfix")).unwrap();
    // The daemon writes metadata here; the next file name must differ.
    std::fs::write(dir.join("ck/flows.ipfix.json"), b"{}").unwrap();
    let mut s = session(dir);
    let n = s.keep_flow_checkpoint(ck.to_path_buf()).unwrap();
    (s, n)
}

/// `crash_before_rename`: the kill comes after a tick wrote its expired
/// records to the file but before its checkpoint replaced the previous
/// one (simulated by putting the previous checkpoint back).
fn crash_run(crash_before_rename: bool) {
    let t = tempfile::tempdir().unwrap();
    let ck = t.path().join("ck.flows");
    let mut s = session(t.path());
    assert_eq!(s.keep_flow_checkpoint(ck.clone()).unwrap(), 0);
    let mut want = BTreeMap::new();
    send(&mut s, &mut want, 1001, 10, T0);
    send(&mut s, &mut want, 1002, 5, T0 + S);
    s.tick(T0 + S + S / 2).unwrap();
    let first = std::fs::read(&ck).unwrap();
    let at_first = want.clone();
    // Flow 1002 idles out at the next tick and is exported into the file.
    send(&mut s, &mut want, 1001, 3, T0 + 2 * S);
    send(&mut s, &mut want, 1003, 4, T0 + 2 * S);
    s.tick(T0 + 4 * S).unwrap();
    let mut counted = want.clone();
    if crash_before_rename {
        std::fs::write(&ck, &first).unwrap();
        counted = at_first;
    } else {
        // Packets after the last checkpoint are lost with the process.
        send(&mut s, &mut BTreeMap::new(), 1001, 7, T0 + 4 * S + 1000);
        send(&mut s, &mut BTreeMap::new(), 1004, 2, T0 + 4 * S + 1000);
    }
    std::mem::forget(s);

    let (mut s2, restored) = recover_and_restart(t.path(), &ck);
    assert_eq!(restored, 2);
    // Flow 1001 goes on after the restart; a new one starts.
    send(&mut s2, &mut counted, 1001, 6, T0 + 10 * S);
    send(&mut s2, &mut counted, 1005, 1, T0 + 10 * S);
    s2.tick(T0 + 11 * S).unwrap();
    s2.stop(T0 + 12 * S).unwrap();
    assert!(!ck.exists(), "a clean stop removes the checkpoint");
    let files = vec![
        t.path().join("ck/flows.ipfix"),
        t.path().join("ck/flows.1.ipfix"),
    ];
    assert_eq!(totals(&files), counted);
}

#[test]
fn crash_after_a_checkpoint_loses_only_the_last_tick() {
    crash_run(false);
}

#[test]
fn crash_between_file_export_and_checkpoint_counts_nothing_twice() {
    crash_run(true);
}

#[test]
fn clean_stop_then_start_restores_nothing() {
    let t = tempfile::tempdir().unwrap();
    let ck = t.path().join("ck.flows");
    let mut s = session(t.path());
    s.keep_flow_checkpoint(ck.clone()).unwrap();
    let mut want = BTreeMap::new();
    send(&mut s, &mut want, 2001, 4, T0);
    s.tick(T0 + S).unwrap();
    assert!(ck.exists());
    s.stop(T0 + 2 * S).unwrap();
    let mut s2 = session(t.path());
    assert_eq!(s2.keep_flow_checkpoint(ck.clone()).unwrap(), 0);
    s2.stop(T0 + 3 * S).unwrap();
    let files = vec![
        t.path().join("ck/flows.ipfix"),
        t.path().join("ck/flows.1.ipfix"),
    ];
    assert_eq!(totals(&files), want);
}
