//! AF_PACKET TPACKET_V3 capture on a veth pair between two network
//! namespaces this test creates (and deletes); traffic stays inside them.

mod common;

use capture::config::SessionConfig;
use capture::demux::Demux;
use capture::session::{Session, SessionEnv};
use capture::source::{AfPacket, AfPacketConfig, FanoutMode};
use common::netns::{in_netns, pair, root_or_skip, wait_reachable};
use std::time::{Duration, Instant};

#[test]
fn captures_veth_traffic_without_drops() {
    if !root_or_skip("AF_PACKET test") || !common::have("ip") {
        return;
    }
    let pid = std::process::id();
    let (a, _b, _guard) = pair("sgcap", &[("va", "vb", "10.77.0")]);

    let mut cfg = AfPacketConfig::new("va");
    cfg.block_size = 1 << 16;
    cfg.block_count = 16;
    cfg.fanout = Some(((pid & 0xffff) as u16, FanoutMode::Hash));
    let mut src = in_netns(&a, move || AfPacket::open(cfg).unwrap());

    // Resolve ARP first, then send 300 datagrams from A to B.
    wait_reachable(&a, "10.77.0.2");
    let sender = {
        let a = a.clone();
        std::thread::spawn(move || {
            in_netns(&a, || {
                let s = std::net::UdpSocket::bind("10.77.0.1:0").unwrap();
                for i in 0..300u32 {
                    s.send_to(&i.to_be_bytes(), "10.77.0.2:9999").unwrap();
                }
            })
        })
    };
    let t = tempfile::tempdir().unwrap();
    let env = SessionEnv {
        data_dir: t.path().into(),
        source: "va".into(),
        key: None,
        closed: None,
        flows: None,
    };
    let mut d = Demux::new();
    let cfg = SessionConfig::from_json(r#"{"name":"live","filter":"udp dst port 9999","header_only":true,"outputs":[{"type":"pcap"}]}"#).unwrap();
    d.add(Session::new(cfg, &env).unwrap());
    let start = Instant::now();
    while d.sessions()[0].counters().matched < 300 && start.elapsed() < Duration::from_secs(5) {
        src.next_block(100, |ts, frame, len| d.process(ts, frame, len))
            .unwrap();
    }
    sender.join().unwrap();
    let stats = src.stats().unwrap();
    d.set_kernel_drops(stats.drops);
    let c = d.sessions()[0].counters();
    assert_eq!(c.matched, 300, "{c:?} {stats:?}");
    assert_eq!(stats.drops, 0);
    assert!(stats.packets >= 300);
    let r = d.stop_all(0);
    assert_eq!(r[0].1.as_ref().unwrap().stored, 300);
}
