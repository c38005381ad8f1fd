//! Our cBPF interpreter agrees with libpcap's own (pcap_offline_filter) on
//! many expressions and on valid, truncated and random frames.

mod common;

use capture::filter::Filter;
use common::*;
use proptest::prelude::*;

const EXPRESSIONS: &[&str] = &[
    "tcp",
    "udp port 53",
    "host 10.0.0.7",
    "src net 10.0.0.0/24 and not dst port 22",
    "vlan 42 and udp",
    "vlan and vlan 7",
    "ip6 and udp",
    "icmp or icmp6",
    "tcp[tcpflags] & (tcp-syn|tcp-ack) != 0",
    "ip[8] < 64",
    "len > 100",
    "greater 60 and less 200",
    "ether host 02:00:00:00:00:01",
    "ether broadcast or ip multicast",
    "ip proto 17 and ip[6:2] & 0x1fff = 0",
    "udp[8:4] = 0x78787878",
    "portrange 1000-1020",
    "ip6 host 2001:db8::5",
    "ip6 protochain 17",
    "tcp and (ip[2:2] - ((ip[0]&0xf)<<2) - ((tcp[12]&0xf0)>>2)) > 0",
    "ip and ip[0] & 0xf > 5",
    "arp or rarp",
    "net 10.0.0.0 mask 255.255.0.0",
];

fn frames() -> impl Strategy<Value = Vec<u8>> {
    (
        0u8..6,
        any::<[u8; 4]>(),
        any::<u16>(),
        0usize..120,
        any::<u8>(),
        0usize..90,
        any::<Vec<(usize, u8)>>(),
    )
        .prop_map(|(kind, addr, port, plen, flags, cut, edits)| {
            let a = [10, 0, 0, addr[3] % 8];
            let mut f = match kind {
                0 => frame4(
                    a,
                    [10, 0, 0, 7],
                    17,
                    1000 + port % 30,
                    53,
                    0,
                    &vec![b'x'; plen],
                ),
                1 => frame4([192, 0, 2, 1], a, 6, port, 22, flags, &vec![0; plen]),
                2 => frame6(
                    [
                        0x20,
                        1,
                        0xd,
                        0xb8,
                        0,
                        0,
                        0,
                        0,
                        0,
                        0,
                        0,
                        0,
                        0,
                        0,
                        0,
                        addr[0] % 8,
                    ],
                    [0; 16],
                    port,
                    53,
                    &vec![1; plen],
                ),
                3 => {
                    let mut f = frame4(a, [224, 0, 0, 1], 17, port, 1010, 0, &[0x78; 8]);
                    f.splice(12..12, [0x81, 0, 0, addr[1] % 50]);
                    if addr[2] % 2 == 0 {
                        f.splice(12..12, [0x88, 0xa8, 0, 7]);
                    }
                    f
                }
                4 => addr.iter().cycle().take(plen + 14).copied().collect(),
                _ => frame4(a, [10, 0, 0, 7], 1, 0, 0, 0, &vec![0; plen]),
            };
            for (at, v) in edits.into_iter().take(3) {
                if !f.is_empty() && at % 4 == 0 {
                    let i = at % f.len();
                    f[i] = v;
                }
            }
            if cut > 0 && cut < f.len() && cut % 3 == 0 {
                f.truncate(cut);
            }
            f
        })
}

fn libpcap(expr: &str) -> pcap::BpfProgram {
    pcap::Capture::dead(pcap::Linktype::ETHERNET)
        .unwrap()
        .compile(expr, true)
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]
    #[test]
    fn same_verdict_as_libpcap(frame in frames()) {
        for expr in EXPRESSIONS {
            let ours = Filter::compile(expr).unwrap();
            let theirs = libpcap(expr);
            prop_assert_eq!(ours.matches(&frame, frame.len() as u32), theirs.filter(&frame), "{} on {:02x?}", expr, frame);
        }
    }
}

#[test]
fn every_expression_compiles_and_some_match() {
    for expr in EXPRESSIONS {
        let f = Filter::compile(expr).unwrap();
        assert!(f.program().is_some(), "{expr}");
    }
    let f = Filter::compile("udp port 53").unwrap();
    let a = frame4([10, 0, 0, 1], [10, 0, 0, 7], 17, 1000, 53, 0, b"");
    assert!(f.matches(&a, a.len() as u32));
}
