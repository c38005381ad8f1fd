//! AF_PACKET TPACKET_V3 capture on a veth pair between two network
//! namespaces this test creates (and deletes); traffic stays inside them.
#![allow(unsafe_code)] // setns(2) for the test's threads

mod common;

use capture::config::SessionConfig;
use capture::demux::Demux;
use capture::session::{Session, SessionEnv};
use capture::source::{AfPacket, AfPacketConfig, FanoutMode};
use std::os::fd::AsRawFd;
use std::process::Command;
use std::time::{Duration, Instant};

struct Netns(Vec<String>);
impl Drop for Netns {
    fn drop(&mut self) {
        for n in &self.0 {
            let _ = Command::new("ip").args(["netns", "del", n]).status();
        }
    }
}

fn ip(args: &[&str]) {
    let s = Command::new("ip").args(args).status().unwrap();
    assert!(s.success(), "ip {args:?}");
}

fn in_netns<T: Send + 'static>(ns: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let path = format!("/var/run/netns/{ns}");
    std::thread::spawn(move || {
        let file = std::fs::File::open(path).unwrap();
        // SAFETY: moves only this thread into the namespace.
        assert_eq!(
            unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) },
            0
        );
        f()
    })
    .join()
    .unwrap()
}

#[test]
fn captures_veth_traffic_without_drops() {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        assert!(
            std::env::var_os("CI").is_none(),
            "AF_PACKET test needs root in CI"
        );
        eprintln!("SKIP: not root");
        return;
    }
    if !common::have("ip") {
        return;
    }
    let pid = std::process::id();
    let (a, b) = (format!("sgcapA{pid}"), format!("sgcapB{pid}"));
    ip(&["netns", "add", &a]);
    let _guard_a = Netns(vec![a.clone()]);
    ip(&["netns", "add", &b]);
    let _guard_b = Netns(vec![b.clone()]);
    ip(&[
        "-n", &a, "link", "add", "va", "type", "veth", "peer", "name", "vb", "netns", &b,
    ]);
    ip(&["-n", &a, "addr", "add", "10.77.0.1/24", "dev", "va"]);
    ip(&["-n", &b, "addr", "add", "10.77.0.2/24", "dev", "vb"]);
    ip(&["-n", &a, "link", "set", "va", "up"]);
    ip(&["-n", &b, "link", "set", "vb", "up"]);

    let mut cfg = AfPacketConfig::new("va");
    cfg.block_size = 1 << 16;
    cfg.block_count = 16;
    cfg.fanout = Some(((pid & 0xffff) as u16, FanoutMode::Hash));
    let mut src = in_netns(&a, move || AfPacket::open(cfg).unwrap());

    // Resolve ARP first, then send 300 datagrams from A to B.
    let t0 = Instant::now();
    loop {
        let ok = Command::new("ip")
            .args([
                "netns",
                "exec",
                &a,
                "ping",
                "-c",
                "1",
                "-W",
                "1",
                "10.77.0.2",
            ])
            .output()
            .unwrap()
            .status
            .success();
        if ok {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(5), "veth never came up");
    }
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
