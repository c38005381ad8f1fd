//! Flow records as a measurement stream and IPFIX files in the archive, as
//! root: a daemon (library) captures on a veth in a namespace this test
//! creates; a session with anonymisation, a pcap output and a biflow IPFIX
//! file output sends its flow records to a real collection server
//! (`capture_flow`) and its closed files to a real OpenSSH server.

mod common;

#[path = "../../archive/tests/common/mod.rs"]
mod archive_common;

use capture::daemon::ctl::CtlClient;
use capture::daemon::{Daemon, DaemonConfig};
use capture::{CryptoPan, Key};
use common::netns::{in_netns, pair, root_or_skip, wait_reachable};
use serde_json::Value;
use std::net::{Ipv4Addr, UdpSocket};
use std::time::{Duration, Instant};

fn wait_for(what: &str, secs: u64, mut ok: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !ok() {
        assert!(
            t0.elapsed() < Duration::from_secs(secs),
            "timed out: {what}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn flows_stream_and_ipfix_files_archived() {
    if !root_or_skip("daemon flows test") || !common::have("ip") || !common::have("tshark") {
        return;
    }
    let Some(sshd) = archive_common::Sshd::start_new() else {
        return;
    };
    let (a, b, _guard) = pair("sgf", &[("va", "vb", "10.83.0")]);
    wait_reachable(&b, "10.83.0.1");

    let rt = tokio::runtime::Runtime::new().unwrap();
    let srv_dir = tempfile::tempdir().unwrap();
    let mut scfg = server::ServerConfig::new(srv_dir.path());
    scfg.listen = vec!["127.0.0.1:0".parse().unwrap()];
    let srv = rt.block_on(server::Server::start(scfg)).unwrap();

    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("site.key");
    httpkit::secret::write_private(&key, common::VECTOR_KEY).unwrap();
    let toml = format!(
        r#"interfaces = ["va"]
data_dir = "{data}"
listen = "127.0.0.1:0"
plain_http = true
netns = "{a}"
collect = "{collect}"
[keys]
site = "{key}"
{archive}"#,
        data = dir.path().join("data").display(),
        collect = srv.local_addrs()[0],
        key = key.display(),
        archive = sshd.daemon_archive_toml(&dir.path().join("state")),
    );
    let cfg = DaemonConfig::from_toml(&toml).unwrap();
    let token_file = cfg.effective_token_file();
    let daemon = rt.block_on(Daemon::start(cfg)).unwrap();
    let token = httpkit::token_init::own_token(&token_file).unwrap();
    let c = CtlClient::new(&daemon.local_addr().to_string(), token);
    let body = r#"{"name":"fl","interface":"va","filter":"udp portrange 7000-7010",
        "anonymization":{"key":"site","fields":"both"},
        "outputs":[{"type":"pcap"},
                   {"type":"ipfix","target":{"transport":"file","path":"flows.ipfix"},
                    "flows":{"biflow":true,"idle_timeout_s":1}}],
        "counter_interval_s":1}"#;
    c.post("/api/v1/sessions?experiment=lab1&archive=lab", body)
        .unwrap();
    c.post("/api/v1/sessions/fl/start", "{}").unwrap();

    // Three flows from B, one answered from A (a biflow), with idle gaps so
    // some records expire while the session runs and the rest at stop.
    let (mut sent_b, mut sent_a) = (0u64, 0u64);
    for round in 0..2 {
        sent_b += in_netns(&b, move || {
            let mut n = 0;
            for port in [7001u16, 7002, 7003] {
                let s = UdpSocket::bind(("10.83.0.2", port + 10 * round)).unwrap();
                for i in 0..(10 * u64::from(port - 7000)) {
                    s.send_to(
                        &i.to_be_bytes().repeat(4 + i as usize % 5),
                        ("10.83.0.1", port),
                    )
                    .unwrap();
                    n += 1;
                }
            }
            n
        });
        sent_a += in_netns(&a, move || {
            let s = UdpSocket::bind(("10.83.0.1", 7001)).unwrap();
            for i in 0..7u64 {
                s.send_to(&i.to_be_bytes(), ("10.83.0.2", 7001 + 10 * round))
                    .unwrap();
            }
            7
        });
        std::thread::sleep(Duration::from_millis(2500));
    }
    let sent = sent_a + sent_b;
    let status =
        || -> Value { serde_json::from_str(&c.get("/api/v1/sessions/fl").unwrap()).unwrap() };
    wait_for("all packets stored", 15, || {
        status()["counters"]["stored"] == sent
    });
    let st: Value =
        serde_json::from_str(&c.post("/api/v1/sessions/fl/stop", "{}").unwrap()).unwrap();
    let counters = st["counters"].clone();
    assert_eq!(counters["stored"], sent, "{st}");
    let flows_exported = counters["flows_exported"].as_u64().unwrap();
    assert!(flows_exported >= 6, "{st}");

    // The stream: totals equal what was captured; addresses anonymised.
    let db = srv_dir.path().join("lab1.sq3");
    let totals = || -> Option<(i64, i64, i64, i64)> {
        let conn = rusqlite::Connection::open(&db).ok()?;
        conn.query_row(
            "SELECT count(*), sum(packets + rev_packets), sum(octets + rev_octets), sum(rev_packets)
             FROM capture_flow WHERE session = 'fl'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .ok()
    };
    wait_for("capture_flow rows for every exported flow", 15, || {
        totals().is_some_and(|t| t.0 as u64 == flows_exported)
    });
    let (_, packets, octets, rev) = totals().unwrap();
    assert_eq!(packets as u64, sent);
    // octets count IP bytes: wire bytes minus the 14-byte Ethernet header.
    let bytes = counters["bytes"].as_u64().unwrap();
    assert_eq!(octets as u64 + 14 * sent, bytes);
    assert_eq!(
        rev as u64, sent_a,
        "A's answers are the reverse direction of a biflow"
    );
    let conn = rusqlite::Connection::open(&db).unwrap();
    let addrs: Vec<(String, String, i64)> = conn
        .prepare("SELECT DISTINCT src, dst, protocol FROM capture_flow WHERE session = 'fl'")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut cp = CryptoPan::new(&Key::parse(common::VECTOR_KEY.as_bytes()).unwrap());
    let b_anon = cp.ipv4(Ipv4Addr::new(10, 83, 0, 2)).to_string();
    let a_anon = cp.ipv4(Ipv4Addr::new(10, 83, 0, 1)).to_string();
    assert!(!addrs.is_empty());
    for (src, dst, proto) in &addrs {
        assert_eq!((src, dst, *proto), (&b_anon, &a_anon, 17), "{addrs:?}");
    }

    // The IPFIX file and its metadata are archived like packet files.
    wait_for("files archived", 30, || {
        let f = sshd.files();
        ["flows.ipfix", "flows.ipfix.json", "flows.ipfix.xml"]
            .iter()
            .all(|n| f.contains(&format!("lab1/fl/{n}")))
            && f.iter()
                .any(|n| n.starts_with("lab1/fl/fl_") && n.ends_with(".pcap"))
    });
    let md: Value =
        serde_json::from_slice(&std::fs::read(sshd.root.join("lab1/fl/flows.ipfix.json")).unwrap())
            .unwrap();
    assert_eq!(md["format"], "ipfix");
    assert_eq!(md["flow_records"], flows_exported);
    assert_eq!(md["packets"], sent);
    assert_eq!(md["recovered"], false);
    // tshark reads the archived IPFIX file (its own IPFIX file reader)
    // and sees the packets of every data record (it shows the reverse
    // counts of biflow records under the same field).
    let ipfix = sshd.root.join("lab1/fl/flows.ipfix");
    let o = std::process::Command::new("tshark")
        .args([
            "-r",
            ipfix.to_str().unwrap(),
            "-T",
            "fields",
            "-e",
            "cflow.packets",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "tshark: {err}");
    let seen: u64 = String::from_utf8_lossy(&o.stdout)
        .split(['\t', ',', '\n'])
        .filter_map(|v| v.trim().parse::<u64>().ok())
        .sum();
    assert_eq!(seen, sent, "tshark's packet counts in the IPFIX file");
    rt.block_on(daemon.shutdown());
    rt.block_on(srv.shutdown());
}
