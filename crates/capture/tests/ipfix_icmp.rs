//! ICMP flows in our IPFIX as collectors read them: nfdump shows the same
//! type/code columns for our export as for softflowd's of the same packets,
//! and tshark decodes icmpTypeCodeIPv4.

mod common;

use capture::config::SessionConfig;
use capture::offline::run_file;
use capture::session::SessionEnv;
use common::*;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// Pings 10.0.0.1 -> 10.0.0.2 and their replies (and over IPv6), a port unreachable
/// 10.0.0.2 -> 10.0.0.1 quoting a UDP datagram, and a UDP flow for contrast.
fn traffic() -> Vec<(u64, Vec<u8>)> {
    let t0 = 1_700_000_000_000_000_000u64;
    let (a, b) = ([10, 0, 0, 1], [10, 0, 0, 2]);
    let mut frames = Vec::new();
    for seq in 0..5u8 {
        let ts = t0 + u64::from(seq) * 1_000_000_000;
        let body = [0x5a; 56];
        frames.push((ts, icmp4(a, b, 8, 0, [0x12, 0x34, 0, seq], &body)));
        frames.push((ts + 300_000, icmp4(b, a, 0, 0, [0x12, 0x34, 0, seq], &body)));
    }
    let (a6, b6) = (
        [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
        [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
    );
    for seq in 0..3u8 {
        let ts = t0 + 100_000 + u64::from(seq) * 1_000_000_000;
        frames.push((ts, icmp6(a6, b6, 128, 0, [0, 7, 0, seq], b"ping6")));
        frames.push((
            ts + 200_000,
            icmp6(b6, a6, 129, 0, [0, 7, 0, seq], b"ping6"),
        ));
    }
    let udp = frame4(a, b, 17, 40000, 33434, 0, b"probe");
    frames.push((t0 + 5_500_000_000, udp.clone()));
    // The error quotes the offending IP header and the first 8 bytes after it.
    frames.push((
        t0 + 5_500_200_000,
        icmp4(b, a, 3, 3, [0; 4], &udp[14..14 + 28]),
    ));
    frames
}

/// nfdump's (protocol, source, destination, source port, destination port,
/// packets) of every flow in `dir`.
fn nfdump_rows(dir: &Path) -> BTreeSet<String> {
    let out = run(
        "nfdump",
        &[
            "-R",
            dir.to_str().unwrap(),
            "-q",
            "-N",
            "-o",
            "fmt:%pr|%sa|%da|%sp|%dp|%pkt",
        ],
    );
    out.lines()
        .map(|l| l.split('|').map(str::trim).collect::<Vec<_>>().join("|"))
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn nfdump_shows_icmp_type_code_as_for_softflowd() {
    if !have("nfcapd") || !have("nfdump") || !have("softflowd") {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let input = t.path().join("in.pcap");
    write_pcap(&input, &traffic());

    let ours = nfcapd::Nfcapd::start(&t.path().join("ours"));
    let cfg = SessionConfig::from_json(
        r#"{"name":"ic","outputs":[{"type":"ipfix","target":{"transport":"file","path":"f.ipfix"}}]}"#,
    )
    .unwrap();
    let env = SessionEnv {
        data_dir: t.path().join("run"),
        source: String::new(),
        key: None,
        closed: None,
        flows: None,
    };
    run_file(&input, vec![cfg], &env).unwrap();
    ours.replay(&std::fs::read(t.path().join("run/ic/f.ipfix")).unwrap());
    ours.finish();

    let theirs = nfcapd::Nfcapd::start(&t.path().join("theirs"));
    let st = Command::new("softflowd")
        .args(["-r", input.to_str().unwrap(), "-v", "10", "-n"])
        .arg(format!("127.0.0.1:{}", theirs.port))
        .output()
        .unwrap();
    assert!(st.status.success(), "softflowd: {st:?}");
    theirs.finish();

    let ours = nfdump_rows(&t.path().join("ours/flows"));
    let theirs = nfdump_rows(&t.path().join("theirs/flows"));
    assert_eq!(ours, theirs, "ours (left) and softflowd's (right)");
    for row in [
        "1|10.0.0.1|10.0.0.2|0|8.0|5",
        "1|10.0.0.2|10.0.0.1|0|0.0|5",
        "1|10.0.0.2|10.0.0.1|0|3.3|1",
        "17|10.0.0.1|10.0.0.2|40000|33434|1",
        "58|2001:db8::1|2001:db8::2|0|128.0|3",
        "58|2001:db8::2|2001:db8::1|0|129.0|3",
    ] {
        assert!(ours.contains(row), "{row} not in {ours:#?}");
    }
}

#[test]
fn tshark_decodes_icmp_type_code_ipv4() {
    if !have("tshark") {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let input = t.path().join("in.pcap");
    // IPv4 only: each record's fields line up in tshark's lists.
    let v4: Vec<_> = traffic()
        .into_iter()
        .filter(|(_, f)| f[12..14] == [8, 0])
        .collect();
    write_pcap(&input, &v4);
    let cfg = SessionConfig::from_json(
        r#"{"name":"ic","outputs":[{"type":"ipfix","target":{"transport":"file","path":"f.ipfix"}}]}"#,
    )
    .unwrap();
    let env = SessionEnv {
        data_dir: t.path().to_path_buf(),
        source: String::new(),
        key: None,
        closed: None,
        flows: None,
    };
    run_file(&input, vec![cfg], &env).unwrap();
    let data = std::fs::read(t.path().join("ic/f.ipfix")).unwrap();
    let mut udp = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let len = usize::from(u16::from_be_bytes([data[at + 2], data[at + 3]]));
        let m = &data[at..at + len];
        let f = frame4([127, 0, 0, 1], [127, 0, 0, 1], 17, 40000, 4739, 0, m);
        udp.push((1_700_000_100_000_000_000 + at as u64, f));
        at += len;
    }
    let cap = t.path().join("ipfix.pcap");
    write_pcap(&cap, &udp);
    let out = run(
        "tshark",
        &[
            "-r",
            cap.to_str().unwrap(),
            "-d",
            "udp.port==4739,cflow",
            "-T",
            "fields",
            "-E",
            "occurrence=a",
            "-e",
            "cflow.protocol",
            "-e",
            "cflow.icmp_type_code_ipv4",
            "-e",
            "cflow.dstport",
        ],
    );
    let mut rows = BTreeSet::new();
    for l in out.lines().filter(|l| !l.trim().is_empty()) {
        let cols: Vec<Vec<&str>> = l.split('\t').map(|c| c.split(',').collect()).collect();
        let (proto, icmp, dport) = (&cols[0], &cols[1], &cols[2]);
        for ((p, t), d) in proto.iter().zip(icmp).zip(dport) {
            rows.insert((p.to_string(), t.to_string(), d.to_string()));
        }
    }
    let want: BTreeSet<(String, String, String)> = [
        // tshark prints icmpTypeCodeIPv4 in hexadecimal: 8/0, 0/0, 3/3.
        ("1", "0x0800", "2048"),
        ("1", "0x0000", "0"),
        ("1", "0x0303", "771"),
        ("17", "0x0000", "33434"),
    ]
    .iter()
    .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
    .collect();
    assert_eq!(rows, want, "tshark:\n{out}");
}
