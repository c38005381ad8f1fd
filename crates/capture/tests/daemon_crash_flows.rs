//! Active flows survive a SIGKILL of the daemon process, as root on a veth
//! pair between two network namespaces this test creates: known UDP flows
//! are captured into an IPFIX file, the daemon is killed once its flow
//! checkpoint holds every packet, restarted (the flows come back into the
//! restarted session, the open file is repaired), more packets follow and
//! the session stops cleanly. The IPFIX files, read with our decoder, with
//! tshark and (replayed to nfcapd) with nfdump, count every packet and byte
//! sent exactly once.

mod common;

use capture::checkpoint::Checkpoint;
use capture::daemon::ctl::CtlClient;
use common::daemon_proc::{child_main, wait_for, DaemonProc};
use common::netns::{in_netns, pair, root_or_skip, wait_reachable};
use serde_json::Value;
use std::collections::BTreeMap;
use std::net::UdpSocket;
use std::path::{Path, PathBuf};

#[test]
fn child_daemon() {
    child_main();
}

const PORT: u16 = 7200;

/// Sends `(source port, packets)` flows from namespace `ns`; packet `i` of
/// port `p` carries `p - 41000 + 20` payload bytes. Returns what was sent.
fn send(ns: &str, flows: &[(u16, u64)], sent: &mut BTreeMap<u16, (u64, u64)>) {
    let todo = flows.to_vec();
    in_netns(ns, move || {
        for (port, n) in todo {
            let s = UdpSocket::bind(("10.86.0.2", port)).unwrap();
            let payload = vec![7u8; usize::from(port - 41000) + 20];
            for _ in 0..n {
                s.send_to(&payload, ("10.86.0.1", PORT)).unwrap();
            }
        }
    });
    for &(port, n) in flows {
        let e = sent.entry(port).or_default();
        e.0 += n;
        e.1 += n * (28 + u64::from(port - 41000) + 20);
    }
}

/// Packets per source port in the checkpoint (active flows).
fn checkpointed(ck: &Path) -> (BTreeMap<u16, u64>, u64) {
    let Ok(Some(c)) = Checkpoint::read(ck) else {
        return (BTreeMap::new(), 0);
    };
    let o = &c.outputs[0];
    let m = o.flows.iter().map(|f| (f.key.sport, f.packets)).collect();
    (m, o.file_len)
}

fn ipfix_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "ipfix"))
        .collect();
    v.sort();
    v
}

#[test]
fn sigkill_loses_no_checkpointed_flow_and_counts_none_twice() {
    if !root_or_skip("daemon flow crash test") || !common::have("ip") || !common::have("tshark") {
        return;
    }
    let (a, b, _guard) = pair("sgk", &[("va", "vb", "10.86.0")]);
    wait_reachable(&b, "10.86.0.1");
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let tokens = dir.path().join("tokens");
    httpkit::secret::write_private(&tokens, "* tk read,control\n").unwrap();
    let config = dir.path().join("capture.toml");
    std::fs::write(
        &config,
        format!(
            "interfaces = [\"va\"]\ndata_dir = \"{}\"\nlisten = \"127.0.0.1:0\"\nplain_http = true\n\
             token_file = \"{}\"\nnetns = \"{a}\"\n",
            data.display(),
            tokens.display()
        ),
    )
    .unwrap();
    let ck = data.join(".sessions/k1.flows");

    let d1 = DaemonProc::start(&config);
    let c = CtlClient::new(&d1.addr, Some("tk".into()));
    c.post(
        "/api/v1/sessions?experiment=lab1",
        &format!(
            r#"{{"name":"k1","interface":"va","filter":"udp dst port {PORT}",
            "outputs":[{{"type":"ipfix","target":{{"transport":"file","path":"flows.ipfix"}},
                         "flows":{{"idle_timeout_s":2,"active_timeout_s":600}}}}]}}"#
        ),
    )
    .unwrap();
    c.post("/api/v1/sessions/k1/start", "{}").unwrap();
    let mut sent = BTreeMap::new();
    // A first flow idles out before the kill: its record is in the file.
    send(&b, &[(41000, 40)], &mut sent);
    wait_for("the first flow exported", 10, || {
        let (m, len) = checkpointed(&ck);
        m.is_empty() && len > 0
    });
    send(
        &b,
        &[(41001, 50), (41002, 80), (41003, 120), (41004, 30)],
        &mut sent,
    );
    let want: BTreeMap<u16, u64> = sent.iter().skip(1).map(|(p, v)| (*p, v.0)).collect();
    wait_for("every packet in a checkpoint", 10, || {
        checkpointed(&ck).0 == want
    });
    d1.kill();
    let open: Vec<PathBuf> = ipfix_files(&data.join("k1"))
        .into_iter()
        .filter(|p| !p.with_extension("ipfix.json").exists())
        .collect();
    assert_eq!(open.len(), 1, "the IPFIX file was open at the kill");

    let d2 = DaemonProc::start(&config);
    let c = CtlClient::new(&d2.addr, Some("tk".into()));
    let log = c.get("/api/v1/sessions/k1/log").unwrap();
    assert!(log.contains("4 active flows restored"), "{log}");
    send(&b, &[(41001, 20), (41005, 10)], &mut sent);
    wait_for("the packets after the restart", 10, || {
        let st: Value =
            serde_json::from_str(&c.get("/api/v1/sessions/k1/status").unwrap()).unwrap();
        st["counters"]["stored"].as_u64() == Some(30)
    });
    let st: Value =
        serde_json::from_str(&c.post("/api/v1/sessions/k1/stop", "{}").unwrap()).unwrap();
    assert_eq!(st["state"], "stopped");
    assert_eq!(st["counters"]["dropped_kernel"], 0);
    d2.terminate(10);
    assert!(!ck.exists(), "a clean stop removes the checkpoint");

    let files = ipfix_files(&data.join("k1"));
    assert_eq!(files.len(), 2, "{files:?}");
    let mut got: BTreeMap<u16, (u64, u64)> = BTreeMap::new();
    for f in &files {
        for r in capture::ipfix::read_all(&std::fs::read(f).unwrap()).unwrap() {
            let e = got.entry(r.key.sport).or_default();
            e.0 += r.packets;
            e.1 += r.octets;
        }
    }
    assert_eq!(got, sent, "packets and bytes per flow over both files");
    // tshark's own IPFIX file reader agrees on the totals.
    let (mut packets, mut octets) = (0u64, 0u64);
    for f in &files {
        let o = std::process::Command::new("tshark")
            .args(["-r", f.to_str().unwrap(), "-T", "fields"])
            .args(["-e", "cflow.packets", "-e", "cflow.octets"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            o.status.success() && !err.contains("cut short"),
            "tshark: {err}"
        );
        for line in String::from_utf8_lossy(&o.stdout).lines() {
            let mut cols = line.split('\t');
            let sum = |c: Option<&str>| -> u64 {
                c.unwrap_or("")
                    .split(',')
                    .filter_map(|v| v.trim().parse::<u64>().ok())
                    .sum()
            };
            packets += sum(cols.next());
            octets += sum(cols.next());
        }
    }
    let total = sent.values().fold((0, 0), |t, v| (t.0 + v.0, t.1 + v.1));
    assert_eq!((packets, octets), total, "tshark's totals");
    // So do nfdump's, the files' messages replayed to its collector.
    if common::have("nfcapd") && common::have("nfdump") {
        let nf = common::nfcapd::Nfcapd::start(dir.path());
        for f in &files {
            nf.replay(&std::fs::read(f).unwrap());
        }
        let st = nf.finish();
        assert_eq!((st.packets, st.bytes), total, "nfdump's totals: {st:?}");
    }
}
