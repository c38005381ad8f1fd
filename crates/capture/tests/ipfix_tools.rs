//! Our IPFIX, received by nfcapd (UDP on 127.0.0.1) and summed by nfdump,
//! and decoded by tshark without expert errors.

mod common;

use capture::config::SessionConfig;
use capture::offline::run_file;
use capture::session::SessionEnv;
use common::*;
/// 40 flows (IPv4 UDP and TCP, a few IPv6) over 25 s of packet time.
fn traffic() -> (Vec<(u64, Vec<u8>)>, u64, u64) {
    let mut frames = Vec::new();
    let (mut pkts, mut bytes) = (0u64, 0u64);
    let t0 = 1_700_000_000_000_000_000u64;
    for i in 0..400u64 {
        let flow = (i % 40) as u8;
        let ts = t0 + i * 62_500_000;
        let payload = vec![b'x'; (i % 50) as usize];
        let f = match flow % 4 {
            0 => frame6(
                [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, flow],
                [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
                1000 + u16::from(flow),
                53,
                &payload,
            ),
            1 => frame4(
                [10, 0, 0, flow],
                [10, 0, 1, 1],
                6,
                40000 + u16::from(flow),
                80,
                0x18,
                &payload,
            ),
            _ => frame4(
                [10, 0, 0, flow],
                [10, 0, 1, 1],
                17,
                1000 + u16::from(flow),
                53,
                0,
                &payload,
            ),
        };
        // IP length: frame minus the 14-byte Ethernet header.
        bytes += (f.len() - 14) as u64;
        pkts += 1;
        frames.push((ts, f));
    }
    (frames, pkts, bytes)
}

#[test]
fn nfcapd_receives_udp_export_without_sequence_failures() {
    if !have("nfcapd") || !have("nfdump") {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let (frames, pkts, bytes) = traffic();
    let input = t.path().join("in.pcap");
    write_pcap(&input, &frames);
    let nfcapd = nfcapd::Nfcapd::start(t.path());
    let port = nfcapd.port;
    let cfg = SessionConfig::from_json(&format!(
        r#"{{"name":"fl","outputs":[{{"type":"ipfix","target":{{"transport":"udp","collector":"127.0.0.1:{port}","template_refresh_s":5}},
            "flows":{{"idle_timeout_s":2,"active_timeout_s":10}}}}]}}"#
    ))
    .unwrap();
    let env = SessionEnv {
        data_dir: t.path().join("out"),
        source: String::new(),
        key: None,
        closed: None,
        flows: None,
    };
    let sum = run_file(&input, vec![cfg], &env).unwrap();
    let exported = sum.sessions[0].1.flows_exported;
    assert!(exported > 40, "active timeouts split flows: {exported}");
    // SIGTERM: nfcapd flushes and closes its file.
    let st = nfcapd.finish();
    assert_eq!(st.sequence_failures, 0, "{st:?}");
    assert_eq!(st.flows, exported, "{st:?}");
    assert_eq!(st.packets, pkts, "{st:?}");
    assert_eq!(st.bytes, bytes, "{st:?}");
}

#[test]
fn tshark_decodes_ipfix_without_expert_errors() {
    if !have("tshark") {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let (frames, _, _) = traffic();
    let input = t.path().join("in.pcap");
    write_pcap(&input, &frames);
    for (biflow, res) in [(false, "milliseconds"), (true, "nanoseconds")] {
        // One directory per run: a session never truncates an existing IPFIX file.
        let out = t.path().join(format!("out-{biflow}"));
        let ipfix = out.join("fl/flows.ipfix");
        let cfg = SessionConfig::from_json(&format!(
            r#"{{"name":"fl","outputs":[{{"type":"ipfix","target":{{"transport":"file","path":"flows.ipfix"}},"resolution":"{res}",
                "flows":{{"idle_timeout_s":2,"active_timeout_s":10,"biflow":{biflow}}}}}]}}"#
        ))
        .unwrap();
        let env = SessionEnv {
            data_dir: out,
            source: String::new(),
            key: None,
            closed: None,
            flows: None,
        };
        let sum = run_file(&input, vec![cfg], &env).unwrap();
        let exported = sum.sessions[0].1.flows_exported;
        // Wrap every message of the IPFIX file into a UDP datagram to port 4739.
        let data = std::fs::read(&ipfix).unwrap();
        let mut at = 0;
        let mut udp = Vec::new();
        while at < data.len() {
            let len = u16::from_be_bytes([data[at + 2], data[at + 3]]) as usize;
            assert_eq!(u16::from_be_bytes([data[at], data[at + 1]]), 10);
            udp.push((
                1_700_000_100_000_000_000 + at as u64,
                frame4(
                    [127, 0, 0, 1],
                    [127, 0, 0, 1],
                    17,
                    40000,
                    4739,
                    0,
                    &data[at..at + len],
                ),
            ));
            at += len;
        }
        assert_eq!(at, data.len());
        let cap = t.path().join("ipfix.pcap");
        write_pcap(&cap, &udp);
        let expert = run(
            "tshark",
            &[
                "-r",
                cap.to_str().unwrap(),
                "-d",
                "udp.port==4739,cflow",
                "-q",
                "-z",
                "expert",
            ],
        );
        for bad in ["Errors (", "Warns ("] {
            assert!(!expert.contains(bad), "biflow={biflow}: {expert}");
        }
        let recs = run(
            "tshark",
            &[
                "-r",
                cap.to_str().unwrap(),
                "-d",
                "udp.port==4739,cflow",
                "-T",
                "fields",
                "-e",
                "cflow.packets",
                "-e",
                "cflow.octets",
            ],
        );
        let mut n = 0u64;
        for l in recs.lines() {
            n += l
                .split('\t')
                .next()
                .unwrap()
                .split(',')
                .filter(|s| !s.is_empty())
                .count() as u64;
        }
        // tshark shows reverse counters under the same field name.
        if biflow {
            n /= 2;
        }
        assert_eq!(
            n, exported,
            "tshark sees every data record (biflow={biflow}):\n{recs}"
        );
        let malformed = run(
            "tshark",
            &[
                "-r",
                cap.to_str().unwrap(),
                "-d",
                "udp.port==4739,cflow",
                "-Y",
                "_ws.malformed || _ws.expert.severity >= \"warning\"",
            ],
        );
        assert!(malformed.trim().is_empty(), "{malformed}");
    }
}
