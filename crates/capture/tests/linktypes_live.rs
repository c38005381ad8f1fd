//! Live link types, in network namespaces this test creates (and deletes):
//! on a loopback interface each packet is kept once, as tcpdump keeps it,
//! and a tun device is a raw IP source whose `udp` filter matches and
//! whose files say raw IP.
#![allow(unsafe_code)] // the tun device's ioctl

mod common;

use capture::config::SessionConfig;
use capture::demux::Demux;
use capture::session::{Session, SessionEnv};
use capture::source::{AfPacket, AfPacketConfig};
use capture::LinkType;
use common::netns::{in_netns, ip, root_or_skip, Netns};
use std::io::{BufRead, BufReader};
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn env(dir: &std::path::Path, source: &str) -> SessionEnv {
    SessionEnv {
        data_dir: dir.into(),
        source: source.into(),
        key: None,
        closed: None,
        flows: None,
    }
}

fn small_ring(iface: &str) -> AfPacketConfig {
    let mut cfg = AfPacketConfig::new(iface);
    cfg.block_size = 1 << 16;
    cfg.block_count = 8;
    cfg
}

/// Reads the ring into the demux until session 0 matched `want` packets
/// (or 5 s passed), then until a wait of 100 ms brings nothing more.
fn read_until(src: &mut AfPacket, d: &mut Demux, want: u64) {
    let t0 = Instant::now();
    while d.sessions()[0].counters().matched < want && t0.elapsed() < Duration::from_secs(5) {
        src.next_block(100, |ts, f, len| d.process(ts, f, len))
            .unwrap();
    }
    while src
        .next_block(100, |ts, f, len| d.process(ts, f, len))
        .unwrap()
        > 0
    {}
}

#[test]
fn loopback_keeps_each_packet_once_like_tcpdump() {
    if !root_or_skip("loopback capture") || !common::have("ip") || !common::have("tcpdump") {
        return;
    }
    let ns = format!("sglo{}", std::process::id());
    let _guard = Netns::add(&[&ns]);
    ip(&["-n", &ns, "link", "set", "lo", "up"]);
    let mut src = in_netns(&ns, || AfPacket::open(small_ring("lo")).unwrap());
    assert_eq!(src.link_type(), LinkType::Ethernet);

    let t = tempfile::tempdir().unwrap();
    let theirs = t.path().join("tcpdump.pcap");
    let mut tcpdump = Command::new("ip")
        .args([
            "netns",
            "exec",
            &ns,
            "tcpdump",
            "-Z",
            "root",
            "--immediate-mode",
            "-U",
            "-n",
            "-i",
            "lo",
            "-w",
        ])
        .arg(&theirs)
        .arg("icmp")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(tcpdump.stderr.take().unwrap()).lines();
    assert!(
        lines.any(|l| l.is_ok_and(|l| l.contains("listening"))),
        "tcpdump did not start"
    );

    let mut d = Demux::new();
    let cfg =
        SessionConfig::from_json(r#"{"name":"lo","filter":"icmp","outputs":[{"type":"pcap"}]}"#)
            .unwrap();
    d.add(Session::new_for(cfg, &env(t.path(), "lo"), src.link_type()).unwrap());
    let ping = Command::new("ip")
        .args([
            "netns",
            "exec",
            &ns,
            "ping",
            "-c",
            "5",
            "-i",
            "0.05",
            "-q",
            "127.0.0.1",
        ])
        .output()
        .unwrap();
    assert!(ping.status.success(), "{ping:?}");
    read_until(&mut src, &mut d, 10);
    // SAFETY: a signal to the tcpdump this test started.
    unsafe { libc::kill(tcpdump.id() as i32, libc::SIGTERM) };
    tcpdump.wait().unwrap();
    let mut cap = pcap::Capture::from_file(&theirs).unwrap();
    let mut tcpdump_count = 0u64;
    while cap.next_packet().is_ok() {
        tcpdump_count += 1;
    }
    let c = d.stop_all(0).pop().unwrap().1.unwrap();
    assert_eq!(tcpdump_count, 10, "5 requests and 5 replies");
    assert_eq!(c.matched, tcpdump_count, "{c:?}");
    assert_eq!(c.stored, 10);
}

/// Attaches to (creating if needed) tun device `name` in the calling
/// thread's namespace; the device carries traffic while the fd is open.
fn tun_attach(name: &str) -> OwnedFd {
    const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
    const IFF_TUN: i16 = 0x0001;
    const IFF_NO_PI: i16 = 0x1000;
    // SAFETY: opening a device node; the result is checked.
    let fd = unsafe { libc::open(c"/dev/net/tun".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    assert!(fd >= 0, "/dev/net/tun: {}", std::io::Error::last_os_error());
    // SAFETY: fd is a fresh descriptor we own.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    // struct ifreq: 16 bytes of name, then the flags.
    let mut req = [0u8; 40];
    req[..name.len()].copy_from_slice(name.as_bytes());
    req[16..18].copy_from_slice(&(IFF_TUN | IFF_NO_PI).to_ne_bytes());
    // SAFETY: req is a valid ifreq-sized buffer for the kernel to read and fill.
    let rc = unsafe { libc::ioctl(fd, TUNSETIFF, req.as_mut_ptr()) };
    assert_eq!(rc, 0, "TUNSETIFF: {}", std::io::Error::last_os_error());
    owned
}

#[test]
fn tun_device_is_raw_ip_and_udp_matches() {
    if !root_or_skip("tun capture") || !common::have("ip") {
        return;
    }
    let ns = format!("sgtun{}", std::process::id());
    let _guard = Netns::add(&[&ns]);
    let tun = in_netns(&ns, || tun_attach("tun0"));
    ip(&["-n", &ns, "addr", "add", "10.89.0.1/24", "dev", "tun0"]);
    ip(&["-n", &ns, "link", "set", "tun0", "up"]);
    let mut src = in_netns(&ns, || AfPacket::open(small_ring("tun0")).unwrap());
    assert_eq!(src.link_type(), LinkType::Raw);

    let t = tempfile::tempdir().unwrap();
    let mut d = Demux::new();
    let cfg =
        SessionConfig::from_json(r#"{"name":"tun","filter":"udp","outputs":[{"type":"pcap"}]}"#)
            .unwrap();
    d.add(Session::new_for(cfg, &env(t.path(), "tun0"), src.link_type()).unwrap());
    // A ping the filter must not take, then three datagrams it must.
    let _ = Command::new("ip")
        .args([
            "netns",
            "exec",
            &ns,
            "ping",
            "-c",
            "1",
            "-W",
            "0.1",
            "-q",
            "10.89.0.2",
        ])
        .output()
        .unwrap();
    in_netns(&ns, || {
        let s = std::net::UdpSocket::bind("10.89.0.1:0").unwrap();
        for i in 0..3u8 {
            s.send_to(&[i; 20], "10.89.0.2:9999").unwrap();
        }
    });
    read_until(&mut src, &mut d, 3);
    drop(tun);
    let c = d.stop_all(0).pop().unwrap().1.unwrap();
    assert_eq!(c.matched, 3, "{c:?}");
    assert!(c.seen >= 4, "the ping was seen and not taken: {c:?}");
    let file = std::fs::read_dir(t.path().join("tun"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "pcap"))
        .unwrap();
    let bytes = std::fs::read(&file).unwrap();
    assert_eq!(
        u32::from_le_bytes(bytes[20..24].try_into().unwrap()),
        101,
        "LINKTYPE_RAW"
    );
    let mut cap = pcap::Capture::from_file(&file).unwrap();
    let mut n = 0;
    while let Ok(p) = cap.next_packet() {
        assert_eq!(p.data[0], 0x45, "an IPv4 header first");
        assert_eq!(p.data[9], 17, "UDP");
        assert_eq!(&p.data[22..24], &9999u16.to_be_bytes());
        n += 1;
    }
    assert_eq!(n, 3);
}

fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !ok() {
        assert!(t0.elapsed() < Duration::from_secs(10), "timed out: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn daemon_builds_sessions_for_the_interface_link_type() {
    use capture::daemon::ctl::{CtlClient, CtlError};
    use capture::daemon::{Daemon, DaemonConfig};
    if !root_or_skip("daemon on a tun device") || !common::have("ip") {
        return;
    }
    let ns = format!("sgtund{}", std::process::id());
    let _guard = Netns::add(&[&ns]);
    let tun = in_netns(&ns, || tun_attach("tun0"));
    ip(&["-n", &ns, "addr", "add", "10.90.0.1/24", "dev", "tun0"]);
    ip(&["-n", &ns, "link", "set", "tun0", "up"]);

    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut cfg = DaemonConfig::new(&["tun0"], &data);
    cfg.listen = "127.0.0.1:0".parse().unwrap();
    cfg.plain_http = true;
    cfg.netns = Some(ns.clone());
    let token_file = cfg.effective_token_file();
    let daemon = rt.block_on(Daemon::start(cfg)).unwrap();
    let token = httpkit::token_init::own_token(&token_file).unwrap();
    let c = CtlClient::new(&daemon.local_addr().to_string(), token);
    let status = |id: &str| -> serde_json::Value {
        serde_json::from_str(&c.get(&format!("/api/v1/sessions/{id}/status")).unwrap()).unwrap()
    };

    // An Ethernet-only expression is refused at start, naming the link type.
    c.post(
        "/api/v1/sessions?experiment=lab",
        r#"{"name":"eth","interface":"tun0","filter":"ether broadcast"}"#,
    )
    .unwrap();
    match c.post("/api/v1/sessions/eth/start", "{}") {
        Err(CtlError::Status { message, .. }) => {
            assert!(message.contains("for link type RAW (101)"), "{message}")
        }
        r => panic!("{r:?}"),
    }
    assert_eq!(status("eth")["state"], "failed");

    c.post(
        "/api/v1/sessions?experiment=lab",
        r#"{"name":"u","interface":"tun0","filter":"udp","outputs":[{"type":"pcap"}]}"#,
    )
    .unwrap();
    c.post("/api/v1/sessions/u/start", "{}").unwrap();
    in_netns(&ns, || {
        let s = std::net::UdpSocket::bind("10.90.0.1:0").unwrap();
        for i in 0..3u8 {
            s.send_to(&[i; 8], "10.90.0.2:9999").unwrap();
        }
    });
    wait_for("3 datagrams stored", || {
        status("u")["counters"]["stored"] == 3
    });
    c.post("/api/v1/sessions/u/stop", "{}").unwrap();
    drop(tun);
    let file = std::fs::read_dir(data.join("u"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "pcap"))
        .unwrap();
    let bytes = std::fs::read(&file).unwrap();
    assert_eq!(u32::from_le_bytes(bytes[20..24].try_into().unwrap()), 101);
    let md: serde_json::Value =
        serde_json::from_slice(&std::fs::read(file.with_extension("pcap.json")).unwrap()).unwrap();
    assert_eq!(md["linktype"], 101);
    rt.block_on(daemon.shutdown());
}
