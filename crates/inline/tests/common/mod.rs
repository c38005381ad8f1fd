//! Network namespaces for the in-line tests: `src <-> dst` over one veth
//! pair, or `src <-> router <-> dst`, created per test with unique names and
//! removed by a drop guard even when the test fails.
#![allow(dead_code)]

pub mod relay;
pub mod traffic;

use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// Whether the namespace tests can run: as root, yes; otherwise the
/// test is skipped through `testkit` (recorded in the test command's
/// summary; a failure under CI, which runs as root).
pub fn require_root() -> bool {
    testkit::have_root("the in-line tests need network namespaces, tc and BPF")
}

/// Run a command, panicking with its output on failure.
pub fn sh(args: &[&str]) -> String {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Run a command inside namespace `ns` (`ip netns exec`).
pub fn sh_in(ns: &str, args: &[&str]) -> String {
    let mut all = vec!["ip", "netns", "exec", ns];
    all.extend_from_slice(args);
    sh(&all)
}

/// Source-side interface name (inside the source namespace).
pub const SRC_IF: &str = "sg0";
/// Destination-side interface name (inside the destination namespace).
pub const DST_IF: &str = "sg1";
/// Source address.
pub const SRC_ADDR: &str = "fd00:1::1";
/// Destination address.
pub const DST_ADDR: &str = "fd00:2::2";

/// How the source and destination namespaces are connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topology {
    /// One veth pair.
    Direct,
    /// Through a forwarding router namespace (different prefixes).
    Router,
    /// Through a namespace running [`relay::Relay`] (same L2 segment).
    Wire,
}

/// A topology; deletes its namespaces (and with them the veths) on drop.
pub struct Net {
    pub src: String,
    pub dst: String,
    pub router: Option<String>,
    relay: Option<relay::Relay>,
}

static NEXT: AtomicU32 = AtomicU32::new(0);

impl Net {
    /// `src <-> dst` on one link (both addresses on-link through a /64 each
    /// side plus device routes), or through a forwarding router namespace.
    pub fn new(topology: Topology) -> Net {
        let id = format!(
            "sgi{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let mut net = Net {
            src: format!("{id}-src"),
            dst: format!("{id}-dst"),
            router: (topology != Topology::Direct).then(|| format!("{id}-mid")),
            relay: None,
        };
        for ns in net.all() {
            sh(&["ip", "netns", "add", ns]);
            sh_in(ns, &["ip", "link", "set", "lo", "up"]);
            // Addresses (link-local included) usable at once: no DAD wait.
            sh_in(
                ns,
                &[
                    "sysctl",
                    "-qw",
                    "net.ipv6.conf.all.accept_dad=0",
                    "net.ipv6.conf.default.accept_dad=0",
                ],
            );
        }
        match (&net.router, topology) {
            (Some(w), Topology::Wire) => {
                net.link(&net.src, SRC_IF, w, "r0");
                net.link(w, "r1", &net.dst, DST_IF);
                sh_in(w, &["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"]);
                net.addr(&net.src, SRC_IF, SRC_ADDR);
                net.addr(&net.dst, DST_IF, DST_ADDR);
                sh_in(
                    &net.src,
                    &["ip", "-6", "route", "add", "fd00:2::/64", "dev", SRC_IF],
                );
                sh_in(
                    &net.dst,
                    &["ip", "-6", "route", "add", "fd00:1::/64", "dev", DST_IF],
                );
                // The relay re-sends frames as they are: checksums must be
                // complete in them, not left to offload.
                sh_in(&net.src, &["ethtool", "-K", SRC_IF, "tx", "off"]);
                sh_in(&net.dst, &["ethtool", "-K", DST_IF, "tx", "off"]);
                net.relay = Some(relay::Relay::start(w, "r0", "r1"));
            }
            (None, _) => {
                net.link(&net.src, SRC_IF, &net.dst, DST_IF);
                net.addr(&net.src, SRC_IF, SRC_ADDR);
                net.addr(&net.dst, DST_IF, DST_ADDR);
                sh_in(
                    &net.src,
                    &["ip", "-6", "route", "add", "fd00:2::/64", "dev", SRC_IF],
                );
                sh_in(
                    &net.dst,
                    &["ip", "-6", "route", "add", "fd00:1::/64", "dev", DST_IF],
                );
            }
            (Some(r), _) => {
                net.link(&net.src, SRC_IF, r, "r0");
                net.link(r, "r1", &net.dst, DST_IF);
                net.addr(&net.src, SRC_IF, SRC_ADDR);
                net.addr(r, "r0", "fd00:1::fe");
                net.addr(r, "r1", "fd00:2::fe");
                net.addr(&net.dst, DST_IF, DST_ADDR);
                sh_in(r, &["sysctl", "-qw", "net.ipv6.conf.all.forwarding=1"]);
                sh_in(
                    &net.src,
                    &[
                        "ip",
                        "-6",
                        "route",
                        "add",
                        "fd00:2::/64",
                        "via",
                        "fd00:1::fe",
                    ],
                );
                sh_in(
                    &net.dst,
                    &[
                        "ip",
                        "-6",
                        "route",
                        "add",
                        "fd00:1::/64",
                        "via",
                        "fd00:2::fe",
                    ],
                );
            }
        }
        net.wait_reachable();
        net
    }

    /// Ping the destination until it answers (neighbour discovery, router).
    fn wait_reachable(&self) {
        for _ in 0..20 {
            let ok = Command::new("ip")
                .args([
                    "netns", "exec", &self.src, "ping", "-6", "-c", "1", "-W", "1", DST_ADDR,
                ])
                .output()
                .is_ok_and(|o| o.status.success());
            if ok {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        panic!("{DST_ADDR} not reachable from {}", self.src);
    }

    fn all(&self) -> Vec<&String> {
        let mut v = vec![&self.src, &self.dst];
        v.extend(self.router.as_ref());
        v
    }

    fn link(&self, a: &str, a_if: &str, b: &str, b_if: &str) {
        sh(&[
            "ip", "link", "add", a_if, "netns", a, "type", "veth", "peer", "name", b_if, "netns", b,
        ]);
        sh_in(a, &["ip", "link", "set", a_if, "up"]);
        sh_in(b, &["ip", "link", "set", b_if, "up"]);
    }

    fn addr(&self, ns: &str, dev: &str, addr: &str) {
        sh_in(
            ns,
            &[
                "ip",
                "-6",
                "addr",
                "add",
                &format!("{addr}/64"),
                "dev",
                dev,
                "nodad",
            ],
        );
    }

    /// A topology where loss and delay can be imposed: direct with netem
    /// when the kernel has it, else through the relay.
    /// `SG_TEST_RELAY=1` forces the relay (to test it where netem exists).
    pub fn impairable() -> Net {
        let net = Net::new(Topology::Direct);
        let ok = std::env::var_os("SG_TEST_RELAY").is_none()
            && Command::new("ip")
                .args([
                    "netns", "exec", &net.src, "tc", "qdisc", "add", "dev", SRC_IF, "root",
                    "netem", "delay", "0ms",
                ])
                .output()
                .is_ok_and(|o| o.status.success());
        if ok {
            return net;
        }
        drop(net);
        eprintln!("no netem in this kernel: impairing with the user-space relay");
        Net::new(Topology::Wire)
    }

    /// Drop `percent` of the packets leaving the source.
    pub fn set_loss(&self, percent: f64) {
        match &self.relay {
            Some(r) => r
                .impair
                .loss_ppm
                .store((percent * 10_000.0) as u64, Ordering::Relaxed),
            None => self.netem(&["loss", &format!("{percent}%")]),
        }
    }

    /// Delay packets leaving the source by `ms` milliseconds.
    pub fn set_delay(&self, ms: u64) {
        match &self.relay {
            Some(r) => *r.impair.delay.lock().unwrap() = std::time::Duration::from_millis(ms),
            None => self.netem(&["delay", &format!("{ms}ms")]),
        }
    }

    /// Packets dropped by the impairment so far.
    pub fn dropped(&self) -> u64 {
        match &self.relay {
            Some(r) => {
                // Let the relay threads finish what they hold.
                std::thread::sleep(std::time::Duration::from_millis(300));
                let overflow = r.impair.overflow.load(Ordering::Relaxed);
                if overflow > 0 {
                    eprintln!("the relay itself lost {overflow} frames (counted as drops)");
                }
                r.impair.dropped.load(Ordering::Relaxed) + overflow
            }
            None => self.netem_dropped(),
        }
    }

    /// Add or change the netem qdisc on the source interface.
    pub fn netem(&self, args: &[&str]) {
        let mut all = vec!["tc", "qdisc", "replace", "dev", SRC_IF, "root", "netem"];
        all.extend_from_slice(args);
        sh_in(&self.src, &all);
    }

    /// Packets dropped by the netem qdisc so far.
    pub fn netem_dropped(&self) -> u64 {
        let out = sh_in(
            &self.src,
            &["tc", "-s", "qdisc", "show", "dev", SRC_IF, "root"],
        );
        out.split("dropped ")
            .nth(1)
            .and_then(|s| s.split(',').next())
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0)
    }

    /// Waits until the impairment has taken what was sent so far: the
    /// relay reads frames (and decides their delay) on a thread of its own,
    /// which a loaded machine can leave behind; netem decides at once.
    pub fn settle(&self) {
        if self.relay.is_some() {
            std::thread::sleep(std::time::Duration::from_millis(300));
        }
    }

    /// Switch loss and delay off, keeping the drop count.
    pub fn impair_off(&self) {
        match &self.relay {
            Some(r) => {
                r.impair.loss_ppm.store(0, Ordering::Relaxed);
                *r.impair.delay.lock().unwrap() = std::time::Duration::ZERO;
            }
            None => self.netem(&["loss", "0%"]),
        }
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        self.relay = None;
        for ns in self.all() {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

use std::sync::{Arc, Mutex};

use inline::{Agent, LoadOptions, Measurement, Role, Settings};

/// Records collected by a sink.
pub type Records = Arc<Mutex<Vec<Measurement>>>;

/// Start a source on `src`'s interface and a sink on `dst`'s, both with `settings`.
pub fn agents(net: &Net, settings: &Settings) -> (Agent, Agent, Records) {
    agents_with(net, settings, LoadOptions::default())
}

/// [`agents`] with load options (the sink's hook).
pub fn agents_with(net: &Net, settings: &Settings, load: LoadOptions) -> (Agent, Agent, Records) {
    let s = settings.clone();
    let source = inline::netns::run_in(&net.src, move || {
        Agent::start(SRC_IF, Role::Source, &s, load)
    })
    .unwrap()
    .unwrap();
    let s = settings.clone();
    let mut sink =
        inline::netns::run_in(&net.dst, move || Agent::start(DST_IF, Role::Sink, &s, load))
            .unwrap()
            .unwrap();
    let records: Records = Arc::default();
    let r = records.clone();
    sink.read_records(move |m| r.lock().unwrap().push(m))
        .unwrap();
    (source, sink, records)
}

/// Settings selecting traffic from SRC_ADDR to DST_ADDR with `proto`.
pub fn settings(extra: &[&str]) -> Settings {
    let mut s = Settings::default();
    s.set_all([
        format!("src={SRC_ADDR}/64").as_str(),
        format!("dst={DST_ADDR}/64").as_str(),
    ])
    .unwrap();
    s.set_all(extra.iter().copied()).unwrap();
    s
}

/// TCP through a source and a sink attached with `load`, to port `port`:
/// applications get identical bytes and every packet the egress hook
/// sees (a GSO batch counts once) is measured. With the sink at tc the
/// batch reaches it whole (one record per header); a veth with an XDP
/// program turns off its peer's segmentation offload, so batches are cut
/// into segments that each carry a copy of the header (spec/inline.md §9):
/// then every sequence number arrives at least once.
pub fn tcp_case(load: LoadOptions, port: u16) {
    use inline::Counter;
    let net = Net::new(Topology::Direct);
    let s = settings(&["proto=tcp", &format!("dport={port}")]);
    let (source, sink, records) = agents_with(&net, &s, load);
    let rx = traffic::tcp_receiver(&net.dst, port);
    let sent = traffic::tcp_send(&net.src, DST_ADDR, port, 2000, 10_000);
    let got = rx.join().unwrap();
    assert_eq!(got.bytes, 20_000_000);
    assert_eq!(got.digest.as_ref(), sent.as_ref(), "payload bytes differ");
    std::thread::sleep(std::time::Duration::from_millis(100));
    let sc = source.counters().unwrap();
    let kc = sink.counters().unwrap();
    assert_eq!(sink.program().hook(), load.sink_hook);
    let read = sink.stop().unwrap();
    source.stop().unwrap();
    let instrumented = sc.get(Counter::SrcInstrumented);
    assert!(instrumented > 0);
    let marked = kc.get(Counter::SinkMarked);
    if load.sink_hook == inline::SinkHook::Tc {
        assert_eq!(marked, instrumented, "src {sc:?} sink {kc:?}");
    } else {
        assert!(marked >= instrumented, "src {sc:?} sink {kc:?}");
    }
    assert_eq!(kc.get(Counter::SinkError), 0, "{kc:?}");
    assert_eq!(read, marked);
    assert_eq!(
        sc.get(Counter::SrcInstrumented) + sc.get(Counter::SrcMtu),
        sc.get(Counter::SrcMatched)
    );
    let recs = records.lock().unwrap();
    assert!(recs
        .iter()
        .all(|m| m.flow.dport == port && m.flow.proto == 6));
    let seqs: std::collections::BTreeSet<u32> = recs.iter().filter_map(|m| m.seq).collect();
    assert_eq!(seqs.len() as u64, instrumented, "each header arrives");
}

/// The payload sizes [`udp_sizes_arrive`] sends: 1 to 1400 bytes, assorted.
pub fn udp_sizes(n: usize) -> Vec<usize> {
    (0..n).map(|i| 1 + (i * 37) % 1400).collect()
}

/// `n` datagrams of assorted sizes (1 to 1400 bytes, 200 µs apart) from
/// port `sport` to `dport`: asserts that all arrive, byte for byte.
pub fn udp_sizes_arrive(net: &Net, n: usize, sport: u16, dport: u16) {
    let sizes = udp_sizes(n);
    let idle = std::time::Duration::from_millis(700);
    let rx = traffic::udp_receiver(&net.dst, dport, idle);
    let gap = std::time::Duration::from_micros(200);
    let sent = traffic::udp_send(&net.src, sport, DST_ADDR, dport, &sizes, gap);
    let got = rx.join().unwrap();
    assert_eq!(got.count, n);
    assert_eq!(got.digest.as_ref(), sent.as_ref(), "payload bytes differ");
}

/// Sends 200 datagrams of assorted sizes from `port - 1000` to `port`
/// (all must arrive) and asserts that each frame reached the receiving
/// interface `hlen` bytes longer than sent: what a source that inserts
/// headers, with no sink to remove them, adds (the receiving kernel skips
/// our unknown options and delivers the data).
pub fn assert_header_bytes_per_frame(net: &Net, port: u16, hlen: u64, what: &str) {
    let rx = |counter: &str| -> u64 {
        let path = format!("/sys/class/net/{DST_IF}/statistics/rx_{counter}");
        sh_in(&net.dst, &["cat", &path]).trim().parse().unwrap()
    };
    let (bytes, packets) = (rx("bytes"), rx("packets"));
    udp_sizes_arrive(net, 200, port - 1000, port);
    let frames: u64 = udp_sizes(200).iter().map(|s| *s as u64 + 14 + 40 + 8).sum();
    // Other frames (neighbour discovery, MLDv2 reports) may arrive too: an
    // MLDv2 report carries a record per group and was seen at 220 bytes, so
    // each is allowed up to 512. The layouts told apart here differ by at
    // least 8 bytes over 200 frames (1600), more than a few such frames.
    let others = rx("packets") - packets - 200;
    let excess = rx("bytes") - bytes - frames;
    assert!(
        excess >= 200 * hlen && excess <= 200 * hlen + 512 * others,
        "{what}: {excess} bytes over 200 frames and {others} others, expected {hlen} per frame"
    );
}
