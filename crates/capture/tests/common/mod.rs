//! Shared helpers of the integration tests: frame builders, tool lookup.
#![allow(dead_code)]

use capture::checksum::{finish, sum};
use capture::output::FileFormat;
use std::path::Path;

pub mod daemon_proc;
pub mod netns;
pub mod nfcapd;

/// True when `tool` is on PATH; otherwise a recorded skip (a failure
/// under CI, see `testkit`).
pub fn have(tool: &str) -> bool {
    testkit::have_tool(
        "sh",
        &["-c", &format!("command -v {tool}")],
        "its Debian package; scripts/setup.sh installs it",
    )
}

fn l4_checksum(src: &[u8], dst: &[u8], proto: u8, l4: &mut [u8], at: usize) {
    let mut pseudo = Vec::new();
    pseudo.extend_from_slice(src);
    pseudo.extend_from_slice(dst);
    pseudo.extend_from_slice(&[0, proto]);
    pseudo.extend_from_slice(&(l4.len() as u16).to_be_bytes());
    let c = finish(sum(l4, sum(&pseudo, 0)));
    l4[at..at + 2].copy_from_slice(&c.to_be_bytes());
}

/// Ethernet + IPv4 + (UDP if proto 17, TCP if 6) with valid checksums.
pub fn frame4(
    src: [u8; 4],
    dst: [u8; 4],
    proto: u8,
    sport: u16,
    dport: u16,
    tcp_flags: u8,
    payload: &[u8],
) -> Vec<u8> {
    let mut l4 = Vec::new();
    l4.extend_from_slice(&sport.to_be_bytes());
    l4.extend_from_slice(&dport.to_be_bytes());
    let csum_at = if proto == 6 {
        l4.extend_from_slice(&[
            0, 0, 0, 1, 0, 0, 0, 0, 0x50, tcp_flags, 0xff, 0xff, 0, 0, 0, 0,
        ]);
        16
    } else {
        l4.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        l4.extend_from_slice(&[0, 0]);
        6
    };
    l4.extend_from_slice(payload);
    l4_checksum(&src, &dst, proto, &mut l4, csum_at);
    let mut ip = vec![0x45, 0, 0, 0, 0x12, 0x34, 0x40, 0, 64, proto, 0, 0];
    ip[2..4].copy_from_slice(&((20 + l4.len()) as u16).to_be_bytes());
    ip.extend_from_slice(&src);
    ip.extend_from_slice(&dst);
    let c = finish(sum(&ip, 0));
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00];
    f.extend_from_slice(&ip);
    f.extend_from_slice(&l4);
    f
}

/// Ethernet + IPv4 + ICMP (`rest`: identifier and sequence of an echo,
/// unused of an error) with valid checksums.
pub fn icmp4(src: [u8; 4], dst: [u8; 4], ty: u8, code: u8, rest: [u8; 4], body: &[u8]) -> Vec<u8> {
    let mut l4 = vec![ty, code, 0, 0];
    l4.extend_from_slice(&rest);
    l4.extend_from_slice(body);
    let c = finish(sum(&l4, 0));
    l4[2..4].copy_from_slice(&c.to_be_bytes());
    let mut ip = vec![0x45, 0, 0, 0, 0x12, 0x34, 0x40, 0, 64, 1, 0, 0];
    ip[2..4].copy_from_slice(&((20 + l4.len()) as u16).to_be_bytes());
    ip.extend_from_slice(&src);
    ip.extend_from_slice(&dst);
    let c = finish(sum(&ip, 0));
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00];
    f.extend_from_slice(&ip);
    f.extend_from_slice(&l4);
    f
}

/// Ethernet + IPv6 + ICMPv6 with a valid checksum.
pub fn icmp6(
    src: [u8; 16],
    dst: [u8; 16],
    ty: u8,
    code: u8,
    rest: [u8; 4],
    body: &[u8],
) -> Vec<u8> {
    let mut l4 = vec![ty, code, 0, 0];
    l4.extend_from_slice(&rest);
    l4.extend_from_slice(body);
    l4_checksum(&src, &dst, 58, &mut l4, 2);
    let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x86, 0xdd];
    f.extend_from_slice(&[0x60, 0, 0, 0]);
    f.extend_from_slice(&(l4.len() as u16).to_be_bytes());
    f.extend_from_slice(&[58, 64]);
    f.extend_from_slice(&src);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&l4);
    f
}

/// Ethernet + IPv6 + UDP with a valid checksum.
pub fn frame6(src: [u8; 16], dst: [u8; 16], sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut l4 = Vec::new();
    l4.extend_from_slice(&sport.to_be_bytes());
    l4.extend_from_slice(&dport.to_be_bytes());
    l4.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    l4.extend_from_slice(&[0, 0]);
    l4.extend_from_slice(payload);
    l4_checksum(&src, &dst, 17, &mut l4, 6);
    let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x86, 0xdd];
    f.extend_from_slice(&[0x60, 0, 0, 0]);
    f.extend_from_slice(&(l4.len() as u16).to_be_bytes());
    f.extend_from_slice(&[17, 64]);
    f.extend_from_slice(&src);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&l4);
    f
}

/// Writes frames as a pcap file (nanosecond timestamps, tcpdump's snap length).
pub fn write_pcap(path: &Path, frames: &[(u64, Vec<u8>)]) {
    let mut b = FileFormat::Pcap.header(262_144, "", capture::output::format::LINKTYPE_ETHERNET);
    for (ts, f) in frames {
        FileFormat::Pcap.record(*ts, f, f.len() as u32, &mut b);
    }
    std::fs::write(path, b).unwrap();
}

/// Runs a command, returning stdout; panics with stderr on failure.
pub fn run(cmd: &str, args: &[&str]) -> String {
    let o = std::process::Command::new(cmd).args(args).output().unwrap();
    assert!(
        o.status.success(),
        "{cmd} {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// tshark's fields (tab-separated, every occurrence) of each packet of
/// `file` that passes display filter `filter` (empty: every packet), with
/// the IPv4, TCP and UDP checksum checks on (ICMP's always are).
pub fn tshark(file: &Path, filter: &str, fields: &[&str]) -> Vec<String> {
    let mut args = vec![
        "-r",
        file.to_str().unwrap(),
        "-o",
        "ip.check_checksum:TRUE",
        "-o",
        "tcp.check_checksum:TRUE",
        "-o",
        "udp.check_checksum:TRUE",
        "-T",
        "fields",
        "-E",
        "occurrence=a",
    ];
    if !filter.is_empty() {
        args.extend(["-Y", filter]);
    }
    for f in fields {
        args.extend(["-e", f]);
    }
    run("tshark", &args)
        .lines()
        .map(str::to_owned)
        .filter(|l| !l.trim().is_empty())
        .collect()
}

/// The Crypto-PAn key of the shared vectors.
pub const VECTOR_KEY: &str = "1522178d33a4cf80130a5b1649907d10d8988f837979652762574c2d2a842202";

/// (input, expected) IPv4 pairs of the shared vectors.
pub fn vector_pairs() -> Vec<(String, String)> {
    include_str!("../data/cryptopan.tsv")
        .lines()
        .filter(|l| l.starts_with("orig-sample\t"))
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f[3].to_string(), f[4].to_string())
        })
        .collect()
}
