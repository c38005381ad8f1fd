//! tshark reads our pcap/pcapng output: header-only content, anonymised
//! addresses equal to the Crypto-PAn vectors, valid checksums after rewriting.

mod common;

use capture::config::SessionConfig;
use capture::cryptopan::Key;
use capture::offline::run_file;
use capture::session::SessionEnv;
use common::*;
use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;

fn ip4(s: &str) -> [u8; 4] {
    s.parse::<std::net::Ipv4Addr>().unwrap().octets()
}

#[test]
fn tshark_reads_anonymised_header_only_files() {
    if !have("tshark") {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let pairs = vector_pairs();
    let map: HashMap<String, String> = pairs.iter().cloned().collect();
    let mut frames = Vec::new();
    let t0 = 1_700_000_000_123_456_789u64;
    for i in 0..pairs.len() - 1 {
        let (s, d) = (ip4(&pairs[i].0), ip4(&pairs[i + 1].0));
        let f = if i % 2 == 0 {
            frame4(
                s,
                d,
                17,
                5000 + i as u16,
                53,
                0,
                b"secret payload data that must not be stored",
            )
        } else {
            frame4(s, d, 6, 40000, 80, 0x18, b"GET /secret HTTP/1.1\r\n")
        };
        frames.push((t0 + i as u64 * 1_000_000, f));
    }
    let v6 = frame6(
        "2001:db8::1"
            .parse::<std::net::Ipv6Addr>()
            .unwrap()
            .octets(),
        "::1".parse::<std::net::Ipv6Addr>().unwrap().octets(),
        9,
        9,
        b"v6 payload",
    );
    frames.push((t0 + 999_000_000, v6));
    let input = t.path().join("in.pcap");
    write_pcap(&input, &frames);

    let (tx, rx) = std::sync::mpsc::channel();
    let env = SessionEnv {
        data_dir: t.path().join("out"),
        source: String::new(),
        key: Some(Key::parse(VECTOR_KEY.as_bytes()).unwrap()),
        closed: Some(tx),
        flows: None,
    };
    let ho = SessionConfig::from_json(
        r#"{"name":"ho","filter":"ip or ip6","header_only":true,
        "anonymization":{"key":"vectors"},"outputs":[{"type":"pcapng"}]}"#,
    )
    .unwrap();
    let full = SessionConfig::from_json(
        r#"{"name":"full","anonymization":{"key":"vectors"},"outputs":[{"type":"pcap"}]}"#,
    )
    .unwrap();
    let sel = SessionConfig::from_toml("name = \"sel\"\nheader_only = true\nfields = [\"ip.src\", \"ip.proto\", \"ip.len\", \"ports\"]\noutputs = [{type = \"pcap\"}]\n").unwrap();
    let sum = run_file(&input, vec![ho, full, sel], &env).unwrap();
    assert_eq!(sum.packets, frames.len() as u64);
    for (_, c) in &sum.sessions {
        assert_eq!(c.stored, frames.len() as u64);
    }
    let closed: Vec<_> = rx.try_iter().collect();
    assert_eq!(closed.len(), 3);
    for c in &closed {
        assert_eq!(
            std::fs::metadata(&c.file.path)
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o600
        );
        assert_eq!(c.metadata.len(), 2);
        for m in &c.metadata {
            let text = std::fs::read_to_string(m).unwrap();
            assert!(
                !text.contains(&VECTOR_KEY[..16]),
                "key leaked into {}",
                m.display()
            );
            assert!(text.contains(&c.session));
        }
    }
    let file = |name: &str| {
        closed
            .iter()
            .find(|c| c.session == name)
            .unwrap()
            .file
            .path
            .to_str()
            .unwrap()
            .to_string()
    };

    // Header-only pcapng: addresses as the vectors predict, no payload bytes.
    let out = run(
        "tshark",
        &[
            "-r",
            &file("ho"),
            "-T",
            "fields",
            "-E",
            "separator=|",
            "-e",
            "ip.src",
            "-e",
            "ip.dst",
            "-e",
            "ipv6.src",
            "-e",
            "frame.cap_len",
            "-e",
            "frame.len",
            "-e",
            "data.len",
            "-e",
            "frame.time_epoch",
        ],
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), frames.len());
    for (i, l) in lines.iter().take(pairs.len() - 1).enumerate() {
        let f: Vec<&str> = l.split('|').collect();
        assert_eq!(f[0], map[&pairs[i].0], "line {i}: {l}");
        assert_eq!(f[1], map[&pairs[i + 1].0], "line {i}: {l}");
        let cap: usize = f[3].parse().unwrap();
        assert_eq!(cap, if i % 2 == 0 { 42 } else { 54 }, "{l}");
        assert!(f[4].parse::<usize>().unwrap() > cap);
        assert!(f[5].is_empty(), "payload present: {l}");
    }
    assert!(lines[0].ends_with("1700000000.123456789"), "{}", lines[0]);
    let v6 = lines.last().unwrap();
    assert!(
        v6.contains("|4401:2bc:603f:d91d:27f:ff8e:e6f1:dc1e|"),
        "{v6}"
    );

    // Full anonymised packets: IPv4, UDP and TCP checksums still verify.
    let bad = run("tshark", &["-r", &file("full"), "-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE", "-o", "tcp.check_checksum:TRUE",
        "-Y", "ip.checksum.status == \"Bad\" || udp.checksum.status == \"Bad\" || tcp.checksum.status == \"Bad\""]);
    assert!(bad.trim().is_empty(), "bad checksums:\n{bad}");
    let good = run(
        "tshark",
        &[
            "-r",
            &file("full"),
            "-o",
            "udp.check_checksum:TRUE",
            "-Y",
            "udp.checksum.status == \"Good\"",
        ],
    );
    assert!(good.lines().count() >= (pairs.len() - 1) / 2);
    let payload = run(
        "tshark",
        &[
            "-r",
            &file("full"),
            "-T",
            "fields",
            "-e",
            "ip.src",
            "-Y",
            "frame contains \"secret\"",
        ],
    );
    assert_eq!(
        payload.lines().count(),
        pairs.len() - 1,
        "full session keeps payloads"
    );

    // Field selection: source kept in clear, destination zeroed, ports kept.
    let out = run(
        "tshark",
        &[
            "-r",
            &file("sel"),
            "-T",
            "fields",
            "-E",
            "separator=|",
            "-e",
            "ip.src",
            "-e",
            "ip.dst",
            "-e",
            "ip.ttl",
            "-e",
            "udp.dstport",
            "-Y",
            "udp",
        ],
    );
    let first: Vec<&str> = out.lines().next().unwrap().split('|').collect();
    assert_eq!(first, vec![pairs[0].0.as_str(), "0.0.0.0", "0", "53"]);
}
