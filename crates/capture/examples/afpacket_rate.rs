//! Live capture rate on a veth pair: our AF_PACKET ring + demux versus
//! `tcpdump -w` on the same traffic, in the same run.
//!
//! Run as root: `cargo run -p capture --release --example afpacket_rate [SECONDS]`
//!
//! Creates two network namespaces joined by a veth pair, blasts 64-byte UDP
//! datagrams from one for SECONDS (default 3), captures them on the sending
//! side with one header-only pcap session, prints sent / captured / kernel
//! drops, then repeats with tcpdump (`-s 64 -w`, packets counted from its
//! file) and prints the ratio. Deletes the namespaces at the end.
#![allow(unsafe_code)] // setns(2)

use capture::config::SessionConfig;
use capture::demux::Demux;
use capture::session::{Session, SessionEnv};
use capture::source::{AfPacket, AfPacketConfig};
use std::os::fd::AsRawFd;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn ip(args: &[&str]) {
    assert!(
        Command::new("ip").args(args).status().unwrap().success(),
        "ip {args:?}"
    );
}

fn enter(ns: &str) {
    let f = std::fs::File::open(format!("/var/run/netns/{ns}")).unwrap();
    // SAFETY: moves only the calling thread.
    assert_eq!(unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) }, 0);
}

/// Sends datagrams from namespace `ns` until `stop`; returns the count.
fn blast(ns: String, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        enter(&ns);
        let s = std::net::UdpSocket::bind("10.78.0.1:0").unwrap();
        s.connect("10.78.0.2:9999").unwrap();
        let payload = [0u8; 18]; // 14 + 20 + 8 + 18 = 60-byte frames (64 on the wire with FCS)
        let mut n = 0u64;
        while !stop.load(Ordering::Relaxed) {
            if s.send(&payload).is_ok() {
                n += 1;
            }
        }
        n
    })
}

/// CPU time of the calling thread, in seconds.
fn thread_cpu() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is valid for the kernel to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

fn main() {
    let secs: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let (a, b) = ("sgrateA", "sgrateB");
    for n in [a, b] {
        let _ = Command::new("ip")
            .args(["netns", "del", n])
            .stderr(std::process::Stdio::null())
            .status();
    }
    ip(&["netns", "add", a]);
    ip(&["netns", "add", b]);
    ip(&[
        "-n", a, "link", "add", "va", "type", "veth", "peer", "name", "vb", "netns", b,
    ]);
    ip(&["-n", a, "addr", "add", "10.78.0.1/24", "dev", "va"]);
    ip(&["-n", b, "addr", "add", "10.78.0.2/24", "dev", "vb"]);
    ip(&["-n", a, "link", "set", "va", "up"]);
    ip(&["-n", b, "link", "set", "vb", "up"]);
    // Static neighbour: no ARP queueing at the start.
    let mac = String::from_utf8(
        Command::new("ip")
            .args(["-n", b, "-br", "link", "show", "vb"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let mac = mac.split_whitespace().nth(2).unwrap().to_string();
    ip(&[
        "-n",
        a,
        "neigh",
        "add",
        "10.78.0.2",
        "lladdr",
        &mac,
        "dev",
        "va",
    ]);

    // Ours.
    let dir = tempfile::tempdir().unwrap();
    let src = {
        let a = a.to_string();
        std::thread::spawn(move || {
            enter(&a);
            AfPacket::open(AfPacketConfig::new("va")).unwrap()
        })
        .join()
        .unwrap()
    };
    let mut src = src;
    let env = SessionEnv {
        data_dir: dir.path().into(),
        source: "va".into(),
        key: None,
        closed: None,
        flows: None,
    };
    let mut d = Demux::new();
    let cfg = SessionConfig::from_json(
        r#"{"name":"rate","filter":"udp dst port 9999","snaplen":64,"outputs":[{"type":"pcap"}]}"#,
    )
    .unwrap();
    d.add(Session::new(cfg, &env).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let sender = blast(a.to_string(), stop.clone());
    let t0 = Instant::now();
    let cpu0 = thread_cpu();
    while t0.elapsed() < Duration::from_secs(secs) {
        src.next_block(50, |ts, f, len| d.process(ts, f, len))
            .unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    let sent = sender.join().unwrap();
    let drain = Instant::now();
    while drain.elapsed() < Duration::from_millis(300) {
        src.next_block(20, |ts, f, len| d.process(ts, f, len))
            .unwrap();
    }
    let cpu = thread_cpu() - cpu0;
    let stats = src.stats().unwrap();
    let ours = d.sessions()[0].counters().matched;
    d.stop_all(0);
    println!(
        "ours:    sent {sent} in {secs} s ({:.0} pkt/s), captured {ours} ({:.2} %), kernel drops {}",
        sent as f64 / secs as f64,
        100.0 * ours as f64 / sent as f64,
        stats.drops
    );
    println!(
        "ours:    capture thread CPU {cpu:.2} s ({:.1} % of one core)",
        100.0 * cpu / (secs as f64 + 0.3)
    );
    drop(src);

    // tcpdump on the same traffic.
    let out = dir.path().join("td.pcap");
    let td = Command::new("ip")
        .args([
            "netns",
            "exec",
            a,
            "tcpdump",
            "-i",
            "va",
            "-s",
            "64",
            "-w",
            out.to_str().unwrap(),
            "-B",
            "65536",
            "udp dst port 9999",
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("tcpdump");
    std::thread::sleep(Duration::from_millis(800));
    let stop = Arc::new(AtomicBool::new(false));
    let sender = blast(a.to_string(), stop.clone());
    std::thread::sleep(Duration::from_secs(secs));
    stop.store(true, Ordering::Relaxed);
    let sent_td = sender.join().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let _ = Command::new("kill")
        .args(["-INT", &td.id().to_string()])
        .status();
    let o = td.wait_with_output().unwrap();
    let got = capture::run_file(&out, vec![], &env)
        .map(|s| s.packets)
        .unwrap_or(0);
    println!(
        "tcpdump: sent {sent_td}, captured {got} ({:.2} %); {}",
        100.0 * got as f64 / sent_td as f64,
        String::from_utf8_lossy(&o.stderr)
            .lines()
            .filter(|l| l.contains("dropped"))
            .collect::<Vec<_>>()
            .join("; ")
    );
    println!(
        "ratio (our capture share / tcpdump's): {:.3}",
        (ours as f64 / sent as f64) / (got as f64 / sent_td as f64)
    );
    for n in [a, b] {
        let _ = Command::new("ip").args(["netns", "del", n]).status();
    }
}
