//! Sessions and the demux through the public API.

mod common;

use capture::config::{ConfigError, SessionConfig};
use capture::demux::Demux;
use capture::policy::{NodePolicy, PolicyRefusal};
use capture::session::{Session, SessionEnv, SessionError};
use common::*;
use std::io::Read;

fn env(dir: &std::path::Path) -> SessionEnv {
    SessionEnv {
        data_dir: dir.to_path_buf(),
        source: "test0".into(),
        key: None,
        closed: None,
        flows: None,
    }
}

#[test]
fn demux_256_sessions_share_filters() {
    let t = tempfile::tempdir().unwrap();
    let filters = ["udp", "tcp", "host 10.0.0.3", ""];
    let mut d = Demux::new();
    for i in 0..256 {
        let sampling = if i % 2 == 0 {
            r#"{"mode":"all"}"#
        } else {
            r#"{"mode":"one_in_n","n":4}"#
        };
        let cfg = SessionConfig::from_json(&format!(
            r#"{{"name":"s{i}","filter":"{}","sampling":{sampling},"outputs":[{{"type":"counters"}}]}}"#,
            filters[i % 4]
        ))
        .unwrap();
        d.add(Session::new(cfg, &env(t.path())).unwrap());
    }
    assert_eq!(d.filter_groups(), 4);
    let mut n = 0u64;
    for i in 0..100u8 {
        let f = if i % 2 == 0 {
            frame4([10, 0, 0, i % 5], [10, 0, 1, 1], 17, 1000, 53, 0, b"abc")
        } else {
            frame4([10, 0, 0, i % 5], [10, 0, 1, 1], 6, 1000, 80, 0x02, b"")
        };
        d.process(u64::from(i) * 1_000_000, &f, f.len() as u32);
        n += 1;
    }
    let hosts3 = (0..100u8).filter(|i| i % 5 == 3).count() as u64;
    for (i, s) in d.sessions().iter().enumerate() {
        let c = s.counters();
        assert_eq!(c.seen, n);
        let matched = [50, 50, hosts3, 100][i % 4];
        assert_eq!(c.matched, matched, "session {i}");
        let stored = if i % 2 == 0 {
            matched
        } else {
            matched.div_ceil(4)
        };
        assert_eq!(c.stored, stored, "session {i}");
        assert_eq!(c.sampled_out, matched - stored);
    }
    assert!(
        d.poll_counters(0).is_empty(),
        "first poll starts the interval"
    );
    assert_eq!(d.poll_counters(10_000_000_000).len(), 256);
    d.set_kernel_drops(7);
    let r = d.stop_all(200_000_000);
    assert!(r.iter().all(|(_, c)| c.as_ref().unwrap().kernel_drops == 7));
    assert!(d.remove("s3").is_some());
    assert_eq!(d.sessions().len(), 255);
}

#[test]
fn quota_stop_counts_drops_and_counters_poll() {
    let t = tempfile::tempdir().unwrap();
    let cfg = SessionConfig::from_json(
        r#"{"name":"q","outputs":[{"type":"pcap"}],"quota":{"bytes":2000,"policy":"stop"},"counter_interval_s":1}"#,
    )
    .unwrap();
    let mut s = Session::new(cfg, &env(t.path())).unwrap();
    let f = frame4([10, 0, 0, 1], [10, 0, 0, 2], 17, 1, 2, 0, &[0u8; 100]);
    let mut snaps = 0;
    for i in 0..50u64 {
        s.process(i * 100_000_000, &f);
        snaps += usize::from(s.poll_counters(i * 100_000_000).is_some());
    }
    assert_eq!(snaps, 4, "one snapshot per second of packet time");
    let c = s.stop(5_000_000_000).unwrap();
    assert_eq!(c.stored, 50);
    assert!(c.dropped_by_us > 0);
    assert!(c.written <= 2000);
    assert_eq!(
        c.written,
        std::fs::read_dir(t.path().join("q"))
            .unwrap()
            .filter_map(|e| {
                let p = e.unwrap().path();
                (p.extension().unwrap() == "pcap").then(|| std::fs::metadata(p).unwrap().len())
            })
            .sum::<u64>()
    );
}

#[test]
fn ipfix_over_tcp_sequence_numbers() {
    let t = tempfile::tempdir().unwrap();
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let reader = std::thread::spawn(move || {
        let (mut c, _) = l.accept().unwrap();
        let mut b = Vec::new();
        c.read_to_end(&mut b).unwrap();
        b
    });
    let cfg = SessionConfig::from_json(&format!(
        r#"{{"name":"tcp","outputs":[{{"type":"ipfix","target":{{"transport":"tcp","collector":"{addr}"}},"domain":9,
            "flows":{{"idle_timeout_s":1,"active_timeout_s":5,"biflow":true}}}}]}}"#
    ))
    .unwrap();
    let mut s = Session::new(cfg, &env(t.path())).unwrap();
    for i in 0..300u64 {
        let port = (i % 30) as u16;
        let f = if i % 3 == 0 {
            frame4([10, 0, 0, 2], [10, 0, 0, 1], 17, 53, 1000 + port, 0, b"r")
        } else {
            frame4([10, 0, 0, 1], [10, 0, 0, 2], 17, 1000 + port, 53, 0, b"q")
        };
        s.process(1_000_000_000 + i * 50_000_000, &f);
    }
    let c = s.stop(100_000_000_000).unwrap();
    drop(s);
    let b = reader.join().unwrap();
    let (mut at, mut seq, mut data_msgs) = (0usize, 0u32, 0);
    while at < b.len() {
        let len = u16::from_be_bytes([b[at + 2], b[at + 3]]) as usize;
        assert_eq!(
            u32::from_be_bytes(b[at + 12..at + 16].try_into().unwrap()),
            9
        );
        assert_eq!(
            u32::from_be_bytes(b[at + 8..at + 12].try_into().unwrap()),
            seq
        );
        let set = u16::from_be_bytes([b[at + 16], b[at + 17]]);
        if set == 258 {
            let set_len = u16::from_be_bytes([b[at + 18], b[at + 19]]) as usize;
            // 66 bytes per IPv4 biflow record.
            seq += ((set_len - 4) / 66) as u32;
            data_msgs += 1;
        }
        at += len;
    }
    assert_eq!(u64::from(seq), c.flows_exported);
    assert!(data_msgs > 0);
}

#[test]
fn errors_and_policy() {
    let e = SessionConfig::from_json(r#"{"name":"x","filter":"port 99999"}"#).unwrap_err();
    assert!(matches!(e, ConfigError::Filter(_)), "{e}");
    assert!(e.to_string().contains("port 99999"), "{e}");
    let e = SessionConfig::from_json(r#"{"name":"x","snaplen":10}"#).unwrap_err();
    assert!(e.to_string().contains("snaplen"), "{e}");
    assert!(SessionConfig::from_json(r#"{"name":"x","bogus":1}"#).is_err());
    assert!(SessionConfig::from_json(r#"{"name":"../x"}"#).is_err());
    for bad in ["/etc/passwd", "../x.ipfix", ""] {
        let e = SessionConfig::from_json(&format!(
            r#"{{"name":"x","outputs":[{{"type":"ipfix","target":{{"transport":"file","path":"{bad}"}}}}]}}"#
        ))
        .unwrap_err();
        assert!(e.to_string().contains("relative path"), "{e}");
    }
    let t = tempfile::tempdir().unwrap();
    let cfg = SessionConfig::from_json(r#"{"name":"k","anonymization":{"key":"site"}}"#).unwrap();
    assert!(matches!(
        Session::new(cfg.clone(), &env(t.path())),
        Err(SessionError::MissingKey { .. })
    ));
    let policy: NodePolicy =
        serde_json::from_str(r#"{"anonymization_mandatory":true,"max_snaplen":96}"#).unwrap();
    assert!(matches!(
        policy.check(&cfg),
        Err(PolicyRefusal::SnaplenTooLarge { .. })
    ));
    let ok =
        SessionConfig::from_toml("name = \"k\"\nsnaplen = 96\n[anonymization]\nkey = \"site\"\n")
            .unwrap();
    assert_eq!(policy.check(&ok), Ok(()));
    // The default is tcpdump's 262144: a node capped below it refuses a
    // session that does not name a smaller snaplen, and says which value.
    let plain = SessionConfig::from_json(r#"{"name":"d"}"#).unwrap();
    assert_eq!(plain.snaplen, 262_144);
    let capped: NodePolicy = serde_json::from_str(r#"{"max_snaplen":65535}"#).unwrap();
    let e = capped.check(&plain).unwrap_err();
    assert!(
        e.to_string()
            .contains("snaplen 262144 exceeds this node's maximum 65535"),
        "{e}"
    );
    let asked = SessionConfig::from_json(r#"{"name":"d","snaplen":65535}"#).unwrap();
    assert_eq!(capped.check(&asked), Ok(()));
    let uncapped: NodePolicy = serde_json::from_str(r#"{"max_snaplen":262144}"#).unwrap();
    assert_eq!(uncapped.check(&plain), Ok(()));
    assert!(SessionConfig::from_json(r#"{"name":"d","snaplen":262145}"#).is_err());
}

#[test]
fn default_snaplen_keeps_the_largest_datagram_whole() {
    // A 65 528-byte IPv4 datagram (loopback's MTU carries it) is a 65 542-byte
    // frame: the old 65535 default cut it; tcpdump's 262144 keeps it.
    let t = tempfile::tempdir().unwrap();
    let payload: Vec<u8> = (0..65_500u32).map(|i| i as u8).collect();
    let big = frame4([10, 0, 0, 1], [10, 0, 0, 2], 17, 4000, 5000, 0, &payload);
    assert_eq!(big.len(), 65_542);
    let input = t.path().join("in.pcap");
    write_pcap(&input, &[(1_700_000_000_000_000_000, big.clone())]);
    let cfg = SessionConfig::from_json(r#"{"name":"w","outputs":[{"type":"pcap"}]}"#).unwrap();
    capture::run_file(&input, vec![cfg], &env(t.path())).unwrap();
    let file = std::fs::read_dir(t.path().join("w"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "pcap"))
        .unwrap();
    let mut cap = pcap::Capture::from_file(&file).unwrap();
    assert_eq!(cap.get_datalink(), pcap::Linktype::ETHERNET);
    let bytes = std::fs::read(&file).unwrap();
    assert_eq!(
        u32::from_le_bytes(bytes[16..20].try_into().unwrap()),
        262_144,
        "file header snap length"
    );
    let p = cap.next_packet().unwrap();
    assert_eq!((p.header.caplen, p.header.len), (65_542, 65_542));
    assert_eq!(p.data, &big[..]);
}

#[test]
fn offline_runs_are_reproducible() {
    let t = tempfile::tempdir().unwrap();
    let mut frames = Vec::new();
    for i in 0..200u64 {
        let b = (i % 13) as u8;
        frames.push((
            1_700_000_000_000_000_000 + i * 7_000_000,
            frame4(
                [10, 0, 0, b],
                [10, 0, 1, b],
                17,
                1000 + b as u16,
                53,
                0,
                b"data",
            ),
        ));
    }
    let input = t.path().join("in.pcap");
    write_pcap(&input, &frames);
    let cfg = r#"{"name":"r","sampling":{"mode":"probability","p":0.5,"seed":11},"anonymization":{"key":"k"},
        "rollover":{"bytes":3000},"outputs":[{"type":"pcapng"}]}"#;
    let mut outputs = Vec::new();
    for run in 0..2 {
        let mut e = env(&t.path().join(format!("run{run}")));
        e.key = Some(capture::Key::from_bytes([5; 32]));
        let sum =
            capture::run_file(&input, vec![SessionConfig::from_json(cfg).unwrap()], &e).unwrap();
        assert!(sum.sessions[0].1.sampled_out > 50);
        let dir = t.path().join(format!("run{run}/r"));
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        assert!(files.len() > 3);
        outputs.push(
            files
                .iter()
                .map(|p| (p.file_name().unwrap().to_owned(), std::fs::read(p).unwrap()))
                .collect::<Vec<_>>(),
        );
    }
    // Metadata mention the source path, identical here; packet files byte for byte.
    assert_eq!(outputs[0], outputs[1]);
}

#[test]
fn offline_reads_pcapng_input() {
    let t = tempfile::tempdir().unwrap();
    let fmt = capture::output::FileFormat::Pcapng;
    let mut b = fmt.header(65535, "in0", capture::output::format::LINKTYPE_ETHERNET);
    for i in 0..10u64 {
        let f = frame4([10, 0, 0, 1], [10, 0, 0, 2], 17, 1, 2, 0, b"abc");
        fmt.record(
            1_700_000_000_000_000_007 + i,
            &f,
            f.len() as u32 + 5,
            &mut b,
        );
    }
    let input = t.path().join("in.pcapng");
    std::fs::write(&input, b).unwrap();
    let cfg = SessionConfig::from_json(r#"{"name":"n","filter":"udp"}"#).unwrap();
    let sum = capture::run_file(&input, vec![cfg], &env(t.path())).unwrap();
    assert_eq!(sum.packets, 10);
    assert_eq!(
        sum.first_ns, 1_700_000_000_000_000_007,
        "nanoseconds preserved"
    );
    assert_eq!(
        sum.bytes,
        10 * (14 + 20 + 8 + 3 + 5),
        "wire length, not captured length"
    );
    assert_eq!(sum.sessions[0].1.matched, 10);
}
