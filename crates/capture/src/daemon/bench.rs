//! `streamgauge bench capture`: the live capture path at the sender's
//! maximum rate, against `tcpdump -s 64 -w` on the same interface in the
//! same run.
//!
//! Two network namespaces joined by a veth pair (created here, deleted on
//! drop); `trafgen` (netsniff-ng) sends UDP frames of a given size from
//! namespace B as fast as it can for a few seconds; in namespace A, one
//! AF_PACKET ring feeds a [`Demux`] with the case's sessions while tcpdump
//! reads the same interface. Reported per case and frame size: frames
//! offered (the veth's receive counter), captured by us and by tcpdump,
//! their kernel drops, our own drops, and the CPU seconds of our capture
//! thread and of tcpdump.

use super::netns;
use crate::config::SessionConfig;
use crate::cryptopan::Key;
use crate::demux::Demux;
use crate::session::{Session, SessionEnv};
use crate::source::{AfPacket, AfPacketConfig};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What runs on our side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Case {
    /// One header-only pcap session, snaplen 64.
    HeaderOnly,
    /// One session: header-only pcap, Crypto-PAn, IPFIX file, counters.
    AnonIpfixCounters,
    /// 256 counters-only sessions over 16 distinct filters.
    Sessions256,
}

/// One measured run.
#[derive(Debug, Clone)]
pub struct BenchResult {
    /// The case.
    pub case: Case,
    /// Frame size in bytes (without FCS).
    pub frame: usize,
    /// Frames that reached the capture interface.
    pub offered: u64,
    /// Frames our ring delivered to the demux.
    pub captured: u64,
    /// Kernel drops of our ring.
    pub kernel_drops: u64,
    /// Packets our outputs could not keep (sum over sessions).
    pub our_drops: u64,
    /// CPU seconds of our capture thread.
    pub cpu_s: f64,
    /// Frames tcpdump wrote.
    pub tcpdump_captured: u64,
    /// tcpdump's kernel drops.
    pub tcpdump_drops: u64,
    /// CPU seconds of tcpdump.
    pub tcpdump_cpu_s: f64,
    /// Seconds the sender ran.
    pub seconds: f64,
}

/// Why a bench could not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A setup command failed or a tool is missing.
    #[error("{0}")]
    Setup(String),
}

struct Namespaces(Vec<String>);
impl Drop for Namespaces {
    fn drop(&mut self) {
        for n in &self.0 {
            let _ = Command::new("ip").args(["netns", "del", n]).status();
        }
    }
}

fn sh(args: &[&str]) -> Result<String, BenchError> {
    let o = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| BenchError::Setup(format!("{}: {e} (installed?)", args[0])))?;
    if !o.status.success() {
        return Err(BenchError::Setup(format!(
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        )));
    }
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

fn counter(ns: &str, dev: &str, what: &str) -> u64 {
    sh(&[
        "ip",
        "netns",
        "exec",
        ns,
        "cat",
        &format!("/sys/class/net/{dev}/statistics/{what}"),
    ])
    .ok()
    .and_then(|s| s.trim().parse().ok())
    .unwrap_or(0)
}

fn sessions(case: Case) -> Vec<String> {
    match case {
        Case::HeaderOnly => vec![
            r#"{"name":"h","snaplen":64,"header_only":true,"outputs":[{"type":"pcap"}]}"#.into(),
        ],
        Case::AnonIpfixCounters => vec![r#"{"name":"a","header_only":true,"snaplen":128,
            "anonymization":{"key":"bench"},"outputs":[{"type":"pcap"},{"type":"counters"},
            {"type":"ipfix","target":{"transport":"file","path":"flows.ipfix"}}]}"#
            .into()],
        Case::Sessions256 => (0..256)
            .map(|i| {
                format!(
                    r#"{{"name":"s{i}","filter":"udp port {}","outputs":[{{"type":"counters"}}]}}"#,
                    9000 + i % 16
                )
            })
            .collect(),
    }
}

/// A trafgen configuration: one UDP frame of `size` bytes to port 9000.
fn trafgen_conf(size: usize) -> String {
    let mut f: Vec<u8> = vec![0xff; 6];
    f.extend_from_slice(&[0x02, 0, 0, 0, 0, 0x0b, 0x08, 0x00]);
    let ip_len = (size - 14) as u16;
    let mut ip = vec![
        0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 80, 0, 2, 10, 80, 0, 1,
    ];
    ip[2..4].copy_from_slice(&ip_len.to_be_bytes());
    let sum = crate::checksum::finish(crate::checksum::sum(&ip, 0));
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&[0x9c, 0x40, 0x23, 0x28]);
    f.extend_from_slice(&(ip_len - 20).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.resize(size, 0x41);
    let bytes: Vec<String> = f.iter().map(|b| format!("0x{b:02x}")).collect();
    format!("{{ {} }}\n", bytes.join(", "))
}

fn proc_cpu_seconds(pid: u32) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0.0;
    };
    let rest = stat.rsplit_once(") ").map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11).and_then(|v| v.parse().ok()).unwrap_or(0.0)
        + f.get(12).and_then(|v| v.parse().ok()).unwrap_or(0.0);
    ticks / 100.0
}

/// Runs one case at one frame size for `seconds` (needs root, `ip`,
/// `trafgen`, `tcpdump`); `work` holds the files written.
pub fn run_one(
    case: Case,
    frame: usize,
    seconds: u64,
    work: &Path,
) -> Result<BenchResult, BenchError> {
    let pid = std::process::id();
    let (a, b) = (format!("sgbA{pid}"), format!("sgbB{pid}"));
    sh(&["ip", "netns", "add", &a])?;
    let mut guard = Namespaces(vec![a.clone()]);
    sh(&["ip", "netns", "add", &b])?;
    guard.0.push(b.clone());
    sh(&[
        "ip", "-n", &a, "link", "add", "va", "type", "veth", "peer", "name", "vb", "netns", &b,
    ])?;
    sh(&["ip", "-n", &a, "link", "set", "va", "up"])?;
    sh(&["ip", "-n", &b, "link", "set", "vb", "up"])?;

    let dir = work.join(format!("{case:?}-{frame}"));
    std::fs::create_dir_all(&dir).map_err(|e| BenchError::Setup(e.to_string()))?;
    let env = SessionEnv {
        data_dir: dir.clone(),
        source: "va".into(),
        key: Some(Key::from_bytes([7; 32])),
        closed: None,
        flows: None,
    };
    let mut demux = Demux::new();
    for s in sessions(case) {
        let cfg = SessionConfig::from_json(&s).map_err(|e| BenchError::Setup(e.to_string()))?;
        demux.add(Session::new(cfg, &env).map_err(|e| BenchError::Setup(e.to_string()))?);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let (stop2, ns) = (Arc::clone(&stop), a.clone());
    let ours = std::thread::spawn(move || -> Result<(u64, u64, u64, f64), String> {
        netns::enter(&ns).map_err(|e| e.to_string())?;
        let mut src = AfPacket::open(AfPacketConfig::new("va")).map_err(|e| e.to_string())?;
        let cpu0 = netns::thread_cpu_seconds();
        while !stop2.load(Ordering::Acquire) {
            src.next_block(20, |ts, f, len| demux.process(ts, f, len))
                .map_err(|e| e.to_string())?;
        }
        // Drain what is left in the ring.
        while src
            .next_block(0, |ts, f, len| demux.process(ts, f, len))
            .unwrap_or(0)
            > 0
        {}
        let cpu = netns::thread_cpu_seconds() - cpu0;
        let drops = src.stats().map(|s| s.drops).unwrap_or(0);
        let now = demux.packets();
        let ours: u64 = demux
            .stop_all(u64::MAX / 2)
            .into_iter()
            .filter_map(|(_, r)| r.ok())
            .map(|c| c.dropped_by_us)
            .sum();
        Ok((now, drops, ours, cpu))
    });
    let pcap = dir.join("tcpdump.pcap");
    let tcpdump = Command::new("ip")
        .args([
            "netns", "exec", &a, "tcpdump", "-i", "va", "-s", "64", "-n", "-w",
        ])
        .arg(&pcap)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| BenchError::Setup(format!("tcpdump: {e}")))?;
    std::thread::sleep(Duration::from_millis(1000));
    let conf = dir.join("trafgen.cfg");
    std::fs::write(&conf, trafgen_conf(frame)).map_err(|e| BenchError::Setup(e.to_string()))?;
    let rx0 = counter(&a, "va", "rx_packets");
    let t0 = std::time::Instant::now();
    let secs = seconds.to_string();
    let tg = Command::new("ip")
        .args([
            "netns", "exec", &b, "timeout", "-s", "INT", &secs, "trafgen", "--dev", "vb", "--cpp",
            "--conf",
        ])
        .arg(&conf)
        .args(["--cpus", "1"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| BenchError::Setup(format!("trafgen: {e}")))?;
    let elapsed = t0.elapsed().as_secs_f64();
    let _ = tg;
    std::thread::sleep(Duration::from_millis(500));
    let offered = counter(&a, "va", "rx_packets") - rx0;
    let tcpdump_cpu_s = proc_cpu_seconds(tcpdump.id());
    let _ = Command::new("kill")
        .args(["-INT", &tcpdump.id().to_string()])
        .status();
    let out = tcpdump
        .wait_with_output()
        .map_err(|e| BenchError::Setup(e.to_string()))?;
    let err = String::from_utf8_lossy(&out.stderr);
    let grab = |what: &str| -> u64 {
        err.lines()
            .find(|l| l.contains(what))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    stop.store(true, Ordering::Release);
    let (captured, kernel_drops, our_drops, cpu_s) = ours
        .join()
        .map_err(|_| BenchError::Setup("capture thread panicked".into()))?
        .map_err(BenchError::Setup)?;
    drop(guard);
    Ok(BenchResult {
        case,
        frame,
        offered,
        captured,
        kernel_drops,
        our_drops,
        cpu_s,
        tcpdump_captured: grab("packets captured"),
        tcpdump_drops: grab("dropped by kernel"),
        tcpdump_cpu_s,
        seconds: elapsed,
    })
}

/// Runs every case at 64, 512 and 1500 bytes and prints one line per run.
pub fn run_all(seconds: u64, work: &Path) -> Result<Vec<BenchResult>, BenchError> {
    let mut out = Vec::new();
    println!("case                 frame   offered/s   ours/offered  k.drops  our.drops  cpu.s | tcpdump/offered  k.drops  cpu.s");
    for case in [Case::HeaderOnly, Case::AnonIpfixCounters, Case::Sessions256] {
        for frame in [64, 512, 1500] {
            let r = run_one(case, frame, seconds, work)?;
            let ratio = |n: u64| {
                if r.offered == 0 {
                    0.0
                } else {
                    100.0 * n as f64 / r.offered as f64
                }
            };
            println!(
                "{:<20} {:>5} {:>11.0} {:>12.2}% {:>8} {:>10} {:>6.2} | {:>14.2}% {:>8} {:>6.2}",
                format!("{:?}", r.case),
                r.frame,
                r.offered as f64 / r.seconds,
                ratio(r.captured),
                r.kernel_drops,
                r.our_drops,
                r.cpu_s,
                ratio(r.tcpdump_captured),
                r.tcpdump_drops,
                r.tcpdump_cpu_s
            );
            out.push(r);
        }
    }
    Ok(out)
}
