//! Real pings, TCP, UDP and ICMP/ICMPv6 port-unreachable errors, recorded by
//! tcpdump on a veth pair between namespaces the test creates (checksums
//! computed in software there), anonymised — and with header fields zeroed —
//! by the offline pipeline: tshark, checking every checksum, finds none bad,
//! and the addresses the errors quote are anonymised too.

mod common;

use capture::config::SessionConfig;
use capture::offline::run_file;
use capture::session::SessionEnv;
use common::netns::{in_netns, ip, netns_run, pair, root_or_skip};
use common::*;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// TCP and UDP exchanges from namespace `a` to `b` and datagrams to a
/// closed port of `b`, over IPv4 and IPv6.
fn traffic(a: &str, b: &str) {
    for host in ["10.77.1.2", "[fd00:77::2]"] {
        let (l, rx, closed) = in_netns(b, move || {
            let closed = UdpSocket::bind(format!("{host}:0")).unwrap();
            let to = closed.local_addr().unwrap();
            drop(closed);
            (
                TcpListener::bind(format!("{host}:0")).unwrap(),
                UdpSocket::bind(format!("{host}:0")).unwrap(),
                to,
            )
        });
        let (to_tcp, to_udp) = (l.local_addr().unwrap(), rx.local_addr().unwrap());
        let server = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut b = vec![0u8; 3000];
            s.read_exact(&mut b).unwrap();
            s.write_all(&b[..1000]).unwrap();
            let mut d = [0u8; 64];
            rx.recv_from(&mut d).unwrap();
        });
        in_netns(a, move || {
            let mut c = TcpStream::connect(to_tcp).unwrap();
            c.write_all(&[0x5a; 3000]).unwrap();
            let mut back = vec![0u8; 1000];
            c.read_exact(&mut back).unwrap();
            let tx = UdpSocket::bind(if to_udp.is_ipv4() {
                "0.0.0.0:0"
            } else {
                "[::]:0"
            })
            .unwrap();
            tx.send_to(b"hello over udp", to_udp).unwrap();
            // A port nobody listens on: the kernel answers port unreachable.
            tx.send_to(b"anyone there?", closed).unwrap();
            std::thread::sleep(Duration::from_millis(100));
        });
        server.join().unwrap();
    }
}

/// Records the traffic with tcpdump on `a`'s end of the veth pair.
fn record(a: &str, b: &str, out: &Path) {
    let mut dump = Command::new("ip")
        .args([
            "netns",
            "exec",
            a,
            "tcpdump",
            "-i",
            "ck0",
            "--immediate-mode",
            "-U",
            "-w",
        ])
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while std::fs::metadata(out).map(|m| m.len()).unwrap_or(0) < 24 {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "tcpdump did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    netns_run(a, &["ping", "-c", "3", "-i", "0.2", "10.77.1.2"]);
    netns_run(a, &["ping", "-6", "-c", "3", "-i", "0.2", "fd00:77::2"]);
    traffic(a, b);
    std::thread::sleep(Duration::from_millis(300));
    Command::new("kill")
        .args(["-TERM", &dump.id().to_string()])
        .status()
        .unwrap();
    dump.wait().unwrap();
}

const BAD: &str = "ip.checksum.status == \"Bad\" || tcp.checksum.status == \"Bad\" \
    || udp.checksum.status == \"Bad\" || icmp.checksum.status == \"Bad\" \
    || icmpv6.checksum.status == \"Bad\"";

#[test]
fn anonymised_and_zeroed_captures_keep_valid_checksums() {
    if !root_or_skip("tcpdump on a namespace's loopback")
        || !have("tcpdump")
        || !have("tshark")
        || !have("ping")
        || !have("ethtool")
    {
        return;
    }
    let (a, b, _guard) = pair("sgck", &[("ck0", "ck1", "10.77.1")]);
    ip(&[
        "-n",
        &a,
        "addr",
        "add",
        "fd00:77::1/64",
        "dev",
        "ck0",
        "nodad",
    ]);
    ip(&[
        "-n",
        &b,
        "addr",
        "add",
        "fd00:77::2/64",
        "dev",
        "ck1",
        "nodad",
    ]);
    // Checksums computed in software (loopback cannot), so the recording
    // holds real ones.
    netns_run(&a, &["ethtool", "-K", "ck0", "tx", "off"]);
    netns_run(&b, &["ethtool", "-K", "ck1", "tx", "off"]);
    let t = tempfile::tempdir().unwrap();
    let input = t.path().join("veth.pcap");
    record(&a, &b, &input);

    // The recording itself: every checksum good, each protocol present.
    let bad = tshark(&input, BAD, &["frame.number", "_ws.col.Info"]);
    assert!(bad.is_empty(), "recording: {bad:#?}");
    for (proto, status) in [
        ("ip", "ip.checksum.status"),
        ("tcp", "tcp.checksum.status"),
        ("udp", "udp.checksum.status"),
        ("icmp", "icmp.checksum.status"),
        ("icmpv6", "icmpv6.checksum.status"),
    ] {
        let good = tshark(&input, &format!("{status} == \"Good\""), &["frame.number"]);
        assert!(!good.is_empty(), "no {proto} packet with a good checksum");
    }
    let errors = "icmp.type == 3 || icmpv6.type == 1";
    let quoted = tshark(&input, errors, &["ip.src", "ipv6.src"]);
    assert_eq!(quoted.len(), 2, "{quoted:?}");

    let sessions = [
        r#"{"name":"anon","anonymization":{"key":"k"},"outputs":[{"type":"pcap"}]}"#,
        r#"{"name":"zero","anonymization":{"key":"k","fields":"src"},
            "fields":["ip.src","ip.dst","ip.proto","ip.len","udp.len","icmp.type","checksums"],
            "outputs":[{"type":"pcap"}]}"#,
    ];
    let env = SessionEnv {
        data_dir: t.path().join("out"),
        source: String::new(),
        key: Some(capture::Key::from_bytes([0x42; 32])),
        closed: None,
        flows: None,
    };
    let cfgs = sessions
        .iter()
        .map(|s| SessionConfig::from_json(s).unwrap())
        .collect();
    let sum = run_file(&input, cfgs, &env).unwrap();
    for (name, _) in &sum.sessions {
        let out = std::fs::read_dir(t.path().join("out").join(name))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|x| x == "pcap"))
            .unwrap();
        let bad = tshark(&out, BAD, &["frame.number", "_ws.col.Info"]);
        assert!(bad.is_empty(), "{name}: bad checksums in {bad:#?}");
        for status in ["ip", "tcp", "udp", "icmp", "icmpv6"] {
            let good = tshark(
                &out,
                &format!("{status}.checksum.status == \"Good\""),
                &["frame.number"],
            );
            assert!(!good.is_empty(), "{name}: no good {status} checksum");
        }
        // Both errors still quote the datagram, its addresses anonymised:
        // B (the error's source, the quote's destination) in both sessions,
        // A too with `both`; with `src` A stays clear, as in the outer
        // destination.
        let q = tshark(&out, errors, &["ip.src", "ip.dst", "ipv6.src", "ipv6.dst"]);
        assert_eq!(q.len(), 2, "{name}: {q:?}");
        let clear: &[&str] = if name == "anon" {
            &["10.77.1.", "fd00:77::"]
        } else {
            &["10.77.1.2", "fd00:77::2"]
        };
        for l in &q {
            assert!(
                !clear.iter().any(|c| l.contains(c)),
                "{name}: clear address in {l:?}"
            );
        }
    }
}
