//! Every link type against the reference tools, over the real captures in
//! `tests/vectors/linktypes` (made by its `make.py`: tcpdump on a veth, on
//! `any` in both cooked forms and on a tun device, and those datagrams
//! framed with scapy as BSD loopback, raw IPv4/IPv6, 802.11 and radiotap):
//!
//! - filters: for a broad set of libpcap expressions our sessions keep the
//!   same packets and write the same bytes, with the same link type, as
//!   `tcpdump -r FILE -w OUT FILTER`;
//! - header-only cut, Crypto-PAn and field zeroing find the IP header on
//!   every link type: tshark, decoding our output on its own, sees each
//!   address anonymised exactly as Crypto-PAn maps the original, and valid
//!   IPv4 header checksums;
//! - flows count every IP packet of every link type;
//! - a link type we do not parse is refused with its name and number.

mod common;

use capture::config::SessionConfig;
use capture::cryptopan::{CryptoPan, Key};
use capture::offline::{run_file, OfflineError};
use capture::packet::{IpVersion, Parsed};
use capture::session::{FlowSink, SessionEnv};
use capture::LinkType;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

/// The vectors: file and the link type its frames are.
const VECTORS: &[(&str, LinkType)] = &[
    ("ether.pcap", LinkType::Ethernet),
    ("sll.pcap", LinkType::LinuxSll),
    ("sll2.pcap", LinkType::LinuxSll2),
    ("sll2.pcapng", LinkType::LinuxSll2),
    ("raw.pcap", LinkType::Raw),
    ("raw12.pcap", LinkType::Raw),
    ("null.pcap", LinkType::Null),
    ("loop.pcap", LinkType::Loop),
    ("ipv4.pcap", LinkType::Ipv4),
    ("ipv6.pcap", LinkType::Ipv6),
    ("wifi.pcap", LinkType::Ieee80211),
    ("radiotap.pcap", LinkType::Radiotap),
    ("radiotap.pcapng", LinkType::Radiotap),
];

/// Expressions every link type compiles.
const FILTERS: &[&str] = &[
    "",
    "ip",
    "ip6",
    "udp",
    "tcp",
    "icmp",
    "icmp6",
    "udp port 53",
    "tcp port 8080 and tcp[tcpflags] & tcp-syn != 0",
    "host 10.77.0.2 or host 10.88.0.2",
    "src net 10.88.0.0/24",
    "dst host fd77::2 or dst host fd88::2",
    "ip6 and udp and not port 53",
    "portrange 5000-10000",
    "ip[6:2] & 0x3fff != 0",
    "ip6[6] == 44",
    "greater 1000",
    "less 80",
    "icmp[icmptype] == icmp-echo or icmp6[icmp6type] == icmp6-echo",
    "ip proto 17 or ip6 proto 58",
];

/// Expressions only some link types compile.
fn extra_filters(link: LinkType) -> &'static [&'static str] {
    match link {
        LinkType::Ethernet => &[
            "ether proto 0x86dd",
            "arp",
            "ether dst 33:33:00:00:00:01 or broadcast",
        ],
        LinkType::LinuxSll | LinkType::LinuxSll2 => &["inbound", "outbound and udp", "arp"],
        LinkType::Ieee80211 | LinkType::Radiotap => &[
            "wlan type data",
            "wlan type mgt or wlan type ctl",
            "wlan addr2 02:00:00:00:00:03",
            "type data subtype qos-data and udp",
        ],
        _ => &[],
    }
}

fn vector(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/vectors/linktypes")
        .join(name)
}

/// One record: timestamp (ns), captured length, wire length, bytes.
type Record = (u64, u32, u32, Vec<u8>);

/// Every record of a file, and the file's link type.
fn records(path: &Path) -> (i32, Vec<Record>) {
    let mut cap = pcap::Capture::from_file_with_precision(path, pcap::Precision::Nano)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let lt = cap.get_datalink().0;
    let mut v = Vec::new();
    while let Ok(p) = cap.next_packet() {
        let ts = p.header.ts.tv_sec as u64 * 1_000_000_000 + p.header.ts.tv_usec as u64;
        v.push((ts, p.header.caplen, p.header.len, p.data.to_vec()));
    }
    (lt, v)
}

fn env(dir: &Path) -> SessionEnv {
    SessionEnv {
        data_dir: dir.into(),
        source: "file".into(),
        key: None,
        closed: None,
        flows: None,
    }
}

/// The one pcap file a session wrote (none when it stored nothing).
fn output_of(dir: &Path, session: &str) -> Option<PathBuf> {
    let d = dir.join(session);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&d)
        .ok()?
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pcap"))
        .collect();
    assert!(files.len() <= 1, "{files:?}");
    files.pop()
}

#[test]
fn filters_and_outputs_match_tcpdump_on_every_link_type() {
    if !common::have("tcpdump") {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let (mut compared, mut refused) = (0, 0);
    for &(file, link) in VECTORS {
        let input = vector(file);
        let dir = t.path().join(file);
        // tcpdump's output per filter; an expression libpcap refuses for
        // this link type (`ip6` on raw IPv4) must be refused by us too.
        let mut filters = Vec::new();
        let mut theirs = Vec::new();
        for f in FILTERS.iter().chain(extra_filters(link)) {
            let out_file = t
                .path()
                .join(format!("{file}-{}.tcpdump.pcap", theirs.len()));
            let out = Command::new("tcpdump")
                .args(["--time-stamp-precision=nano", "-r"])
                .arg(&input)
                .arg("-w")
                .arg(&out_file)
                .args(f.split_whitespace())
                .output()
                .unwrap();
            if !out.status.success() {
                let why = String::from_utf8_lossy(&out.stderr).to_string();
                let cfg = SessionConfig::from_json(
                    &serde_json::json!({"name": "refused", "filter": f}).to_string(),
                );
                let ours = cfg.map_err(|e| e.to_string()).and_then(|c| {
                    run_file(&input, vec![c], &env(&dir))
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                });
                let e = ours.expect_err(&format!("{file} {f:?}: tcpdump refused it: {why}"));
                let last = why.trim().lines().last().unwrap_or_default().to_string();
                let last = last.trim_start_matches("tcpdump: ");
                assert!(
                    e.contains(last),
                    "{file} {f:?}: ours {e:?}, tcpdump {why:?}"
                );
                refused += 1;
                continue;
            }
            filters.push(*f);
            theirs.push(out_file);
        }
        let sessions = filters
            .iter()
            .enumerate()
            .map(|(i, f)| {
                SessionConfig::from_json(
                    &serde_json::json!({"name": format!("f{i}"), "filter": f, "outputs": [{"type": "pcap"}]})
                        .to_string(),
                )
                .unwrap()
            })
            .collect();
        let sum = run_file(&input, sessions, &env(&dir)).unwrap();
        assert_eq!(sum.link, link, "{file}");
        let (_, all) = records(&input);
        assert!(all.len() >= 20, "{file}: {} packets", all.len());
        for (i, f) in filters.iter().enumerate() {
            let (their_lt, their_recs) = records(&theirs[i]);
            let c = &sum.sessions[i].1;
            assert_eq!(c.matched as usize, their_recs.len(), "{file} {f:?}: {c:?}");
            match output_of(&dir, &format!("f{i}")) {
                Some(ours) => {
                    let (our_lt, our_recs) = records(&ours);
                    assert_eq!(our_lt, their_lt, "{file} {f:?}: link type");
                    assert!(our_recs == their_recs, "{file} {f:?}: records differ");
                }
                None => assert!(their_recs.is_empty(), "{file} {f:?}"),
            }
            compared += 1;
        }
        // Filters that select something on every link type do select.
        let n = |f: &str| {
            filters
                .iter()
                .position(|x| *x == f)
                .map_or(0, |i| sum.sessions[i].1.matched)
        };
        assert!(
            n("udp") > 0 && n("tcp") > 0 && n("ip6") + n("icmp") > 0,
            "{file}"
        );
    }
    eprintln!("{compared} file/filter pairs equal to tcpdump's, {refused} refused by both");
    assert!(compared > 250 && refused > 0, "{compared} {refused}");
}

#[test]
fn raw_ip_under_every_numbering_is_the_same_source() {
    let t = tempfile::tempdir().unwrap();
    let mut outs = Vec::new();
    for file in ["raw.pcap", "raw12.pcap", "raw14.pcap"] {
        let dir = t.path().join(file);
        let cfg = SessionConfig::from_json(
            r#"{"name":"u","filter":"udp","outputs":[{"type":"pcapng"}]}"#,
        )
        .unwrap();
        let sum = run_file(&vector(file), vec![cfg], &env(&dir)).unwrap();
        assert_eq!(sum.link, LinkType::Raw);
        assert!(sum.sessions[0].1.matched > 0);
        let f = std::fs::read_dir(dir.join("u"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|e| e == "pcapng"))
            .unwrap();
        let (lt, recs) = records(&f);
        assert_eq!(
            lt, 12,
            "pcapng written with LINKTYPE_RAW (101), read by libpcap as DLT_RAW"
        );
        let md: serde_json::Value =
            serde_json::from_slice(&std::fs::read(f.with_extension("pcapng.json")).unwrap())
                .unwrap();
        assert_eq!(md["linktype"], 101, "metadata names the link type");
        outs.push(recs);
    }
    assert!(outs[0] == outs[1] && outs[1] == outs[2]);
}

/// The address pairs tshark decodes from `path`, one per packet (empty
/// strings for packets without IP).
fn tshark_addrs(path: &Path) -> Vec<(String, String, String)> {
    let out = Command::new("tshark")
        .args(["-n", "-o", "ip.check_checksum:TRUE", "-r"])
        .arg(path)
        .args([
            "-T",
            "fields",
            "-E",
            "occurrence=f",
            "-e",
            "ip.src",
            "-e",
            "ip.dst",
            "-e",
            "ipv6.src",
            "-e",
            "ipv6.dst",
            "-e",
            "ip.checksum.status",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            let pick = |a: usize, b: usize| {
                if f[a].is_empty() {
                    f[b].to_string()
                } else {
                    f[a].to_string()
                }
            };
            (pick(0, 2), pick(1, 3), f[4].to_string())
        })
        .collect()
}

#[test]
fn cut_anonymise_zero_and_flows_work_on_every_link_type() {
    if !common::have("tshark") {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let key = Key::from_bytes(*b"0123456789abcdef0123456789abcdef");
    for &(file, link) in VECTORS {
        let dir = t.path().join(file);
        let flows = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&flows);
        let e = SessionEnv {
            key: Some(key.clone()),
            flows: Some(FlowSink::new(move |b| {
                sink.lock().unwrap().extend(b.records)
            })),
            ..env(&dir)
        };
        let cfg = SessionConfig::from_json(
            r#"{"name":"a","header_only":true,"anonymization":{"key":"k"},
                "fields":["ip.src","ip.dst","ports","ip.proto","ip.len","checksums"],
                "outputs":[{"type":"pcap"},{"type":"ipfix","target":{"transport":"file","path":"flows.ipfix"}}]}"#,
        )
        .unwrap();
        let sum = run_file(&vector(file), vec![cfg], &e).unwrap();
        let (_, input) = records(&vector(file));
        let (_, output) = records(&output_of(&dir, "a").unwrap());
        assert_eq!(input.len(), output.len(), "{file}");
        let seen = tshark_addrs(&output_of(&dir, "a").unwrap());
        assert_eq!(seen.len(), input.len(), "{file}");
        let mut cp = CryptoPan::new(&key);
        let (mut ip_packets, mut v4_headers) = (0u64, 0);
        for (i, ((_, _, _, orig), (_, _, _, cut))) in input.iter().zip(&output).enumerate() {
            let p = Parsed::parse(link, orig);
            assert_eq!(
                cut.len(),
                p.headers_end.min(orig.len()),
                "{file} #{i}: header-only length"
            );
            let Some(l3) = p.l3 else {
                assert!(
                    seen[i].0.is_empty(),
                    "{file} #{i}: tshark sees IP where we see none: {:?}",
                    seen[i]
                );
                continue;
            };
            ip_packets += 1;
            let addr = |at: usize| -> IpAddr {
                match l3.version {
                    IpVersion::V4 => <[u8; 4]>::try_from(&orig[at..at + 4]).unwrap().into(),
                    IpVersion::V6 => <[u8; 16]>::try_from(&orig[at..at + 16]).unwrap().into(),
                }
            };
            let anon = |a: IpAddr, cp: &mut CryptoPan| match a {
                IpAddr::V4(a) => cp.ipv4(a).to_string(),
                IpAddr::V6(a) => cp.ipv6(a).to_string(),
            };
            let want = (
                anon(addr(l3.src_offset()), &mut cp),
                anon(addr(l3.dst_offset()), &mut cp),
            );
            assert_eq!((seen[i].0.clone(), seen[i].1.clone()), want, "{file} #{i}");
            if l3.version == IpVersion::V4 {
                // tshark: 1 = good (the header checksum after rewriting and zeroing).
                assert_eq!(seen[i].2, "1", "{file} #{i}: IPv4 header checksum");
                v4_headers += 1;
                // Unselected fields are zeroed: TTL and identification.
                assert_eq!(
                    &cut[l3.offset + 4..l3.offset + 6],
                    &[0, 0],
                    "{file} #{i}: ip.id"
                );
                assert_eq!(cut[l3.offset + 8], 0, "{file} #{i}: ttl");
            }
            // Link-layer addresses are not selected: zeroed.
            for (from, to) in p.link_addrs {
                assert!(
                    cut[from..to.min(cut.len())].iter().all(|&b| b == 0),
                    "{file} #{i}: link addresses"
                );
            }
        }
        assert!(ip_packets >= 20, "{file}: {ip_packets} IP packets");
        assert_eq!(
            v4_headers == 0,
            link == LinkType::Ipv6,
            "{file}: IPv4 headers seen"
        );
        let recs = flows.lock().unwrap();
        let counted: u64 = recs.iter().map(|r| r.packets + r.rev_packets).sum();
        assert_eq!(counted, ip_packets, "{file}: packets in flow records");
        assert_eq!(
            sum.sessions[0].1.flows_exported as usize,
            recs.len(),
            "{file}"
        );
    }
}

#[test]
fn pcapng_interfaces_each_have_their_link_type() {
    use capture::offline::pcapng_link_types;
    assert_eq!(
        pcapng_link_types(&vector("radiotap.pcapng")).unwrap(),
        vec![127]
    );
    assert!(pcapng_link_types(&vector("raw.pcap")).unwrap().is_empty());
    // Two interfaces of different link types (an Ethernet and a raw IP
    // section, as mergecap writes them): refused before any session runs.
    let t = tempfile::tempdir().unwrap();
    let mixed = t.path().join("mixed.pcapng");
    let a = std::fs::read(vector("sll2.pcapng")).unwrap();
    let b = std::fs::read(vector("radiotap.pcapng")).unwrap();
    std::fs::write(&mixed, [a, b].concat()).unwrap();
    assert_eq!(pcapng_link_types(&mixed).unwrap(), vec![276, 127]);
    let cfg = SessionConfig::from_json(r#"{"name":"m","outputs":[{"type":"pcap"}]}"#).unwrap();
    let e = run_file(&mixed, vec![cfg], &env(t.path()))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("interface 0: LINUX_SLL2 (276), interface 1: IEEE802_11_RADIO (127)"),
        "{e}"
    );
    assert!(!t.path().join("m").exists(), "nothing written");
}

#[test]
fn unknown_link_types_are_refused_by_name_and_number() {
    let t = tempfile::tempdir().unwrap();
    let f = t.path().join("usb.pcap");
    let mut b = 0xa1b2_c3d4u32.to_le_bytes().to_vec();
    b.extend_from_slice(&2u16.to_le_bytes());
    b.extend_from_slice(&4u16.to_le_bytes());
    for v in [0u32, 0, 65535, 189] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    std::fs::write(&f, &b).unwrap();
    let cfg = SessionConfig::from_json(r#"{"name":"x","outputs":[{"type":"pcap"}]}"#).unwrap();
    let e = run_file(&f, vec![cfg], &env(t.path())).unwrap_err();
    assert!(matches!(e, OfflineError::Linktype { .. }), "{e}");
    let msg = e.to_string();
    assert!(msg.contains("USB_LINUX (189)"), "{msg}");
    assert!(!t.path().join("x").exists(), "nothing written");
}
