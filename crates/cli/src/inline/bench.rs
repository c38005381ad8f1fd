//! `streamgauge inline bench`: 64-byte UDP packets/s between two namespaces
//! without instrumentation, with every packet instrumented, and with
//! one-in-10 sampling, alternating in the same run; plus the BPF run time
//! per packet of each program (kernel.bpf_stats_enabled).
//!
//! The kernel's run-time statistics read the clock twice around every
//! program run, which would itself slow the instrumented phases: packet
//! rates are measured with the statistics off, and each instrumented phase
//! is followed by a shorter blast with them on that gives the cost.

use std::net::UdpSocket;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use inline::{netns, Agent, LoadOptions, Role, RunStats, Settings};

/// Arguments of `streamgauge inline bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Seconds per phase.
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// Rounds of (off, every packet, one in 10).
    #[arg(long, default_value_t = 3)]
    rounds: u32,
    /// UDP payload bytes.
    #[arg(long, default_value_t = 64)]
    payload: usize,
    /// Header to insert: `both` (32 bytes), `delay` (24), `loss` (8) or
    /// `pdm` (16). A UDP socket leaves 10 bytes of headroom in front of the
    /// IPv6 header on Ethernet, so only `loss` is inserted without the
    /// kernel reallocating the packet's head (docs/benchmarks.md).
    #[arg(long, default_value = "both")]
    mode: String,
}

/// Sets kernel.bpf_stats_enabled; restores the value found on drop.
struct BpfStats {
    before: String,
}

const BPF_STATS: &str = "/proc/sys/kernel/bpf_stats_enabled";

impl BpfStats {
    fn take() -> Result<BpfStats> {
        let before = std::fs::read_to_string(BPF_STATS)
            .context("reading kernel.bpf_stats_enabled (is this Linux with BPF?)")?;
        Ok(BpfStats {
            before: before.trim().to_owned(),
        })
    }

    fn set(&self, on: bool) -> Result<()> {
        std::fs::write(BPF_STATS, if on { "1" } else { "0" })
            .context("setting kernel.bpf_stats_enabled (root?)")
    }
}

impl Drop for BpfStats {
    fn drop(&mut self) {
        let _ = std::fs::write(BPF_STATS, &self.before);
    }
}

/// Two namespaces joined by a veth pair; removed on drop.
struct Pair {
    src: String,
    dst: String,
}

fn ip(args: &[&str]) -> Result<()> {
    let st = Command::new("ip")
        .args(args)
        .status()
        .context("running ip")?;
    if !st.success() {
        bail!("ip {args:?} failed");
    }
    Ok(())
}

impl Pair {
    fn new() -> Result<Pair> {
        let id = std::process::id();
        let p = Pair {
            src: format!("sgb{id}-src"),
            dst: format!("sgb{id}-dst"),
        };
        ip(&["netns", "add", &p.src])?;
        ip(&["netns", "add", &p.dst])?;
        ip(&[
            "link", "add", "sg0", "netns", &p.src, "type", "veth", "peer", "name", "sg1", "netns",
            &p.dst,
        ])?;
        for (ns, dev, addr) in [(&p.src, "sg0", "fd00::1/64"), (&p.dst, "sg1", "fd00::2/64")] {
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
            ip(&["-n", ns, "link", "set", dev, "up"])?;
            ip(&["-n", ns, "-6", "addr", "add", addr, "dev", dev, "nodad"])?;
        }
        Ok(p)
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.src]);
        let _ = ip(&["netns", "del", &self.dst]);
    }
}

struct Phase {
    name: &'static str,
    sample: Option<u32>,
    sent: u64,
    received: u64,
    secs: f64,
    src_ns: Vec<f64>,
    dst_ns: Vec<f64>,
}

fn blast(p: &Pair, payload: usize, secs: f64) -> Result<(u64, u64)> {
    let stop = Arc::new(AtomicBool::new(false));
    let received = Arc::new(AtomicU64::new(0));
    let dst = netns::open(&p.dst)?;
    let (tx, rx) = std::sync::mpsc::channel();
    let recv = {
        let (stop, received) = (stop.clone(), received.clone());
        std::thread::spawn(move || -> Result<()> {
            netns::enter_file(&dst, "dst")?;
            let s = UdpSocket::bind("[fd00::2]:9000")?;
            s.set_read_timeout(Some(Duration::from_millis(50)))?;
            tx.send(()).ok();
            let mut buf = [0u8; 2048];
            while !stop.load(Ordering::Relaxed) {
                if s.recv(&mut buf).is_ok() {
                    received.fetch_add(1, Ordering::Relaxed);
                }
            }
            Ok(())
        })
    };
    rx.recv().context("receiver")?;
    let sent = netns::run_in(&p.src, move || -> Result<u64> {
        let s = UdpSocket::bind("[fd00::1]:9001")?;
        s.connect("[fd00::2]:9000")?;
        let buf = vec![0x5au8; payload];
        let end = Instant::now() + Duration::from_secs_f64(secs);
        let mut n = 0u64;
        while Instant::now() < end {
            for _ in 0..64 {
                if s.send(&buf).is_ok() {
                    n += 1;
                }
            }
        }
        Ok(n)
    })??;
    let got_at_end = received.load(Ordering::Relaxed);
    std::thread::sleep(Duration::from_millis(100));
    stop.store(true, Ordering::Relaxed);
    recv.join()
        .map_err(|_| anyhow::anyhow!("receiver panicked"))??;
    Ok((sent, got_at_end))
}

fn per_run(before: Option<RunStats>, after: Option<RunStats>) -> Option<f64> {
    after?.ns_per_run_since(&before?)
}

pub fn run(args: &BenchArgs) -> Result<bool> {
    let mode = format!("mode={}", args.mode);
    Settings::default()
        .set_all([mode.as_str()])
        .context("--mode")?;
    let stats = BpfStats::take()?;
    stats.set(false)?;
    let p = Pair::new()?;
    std::thread::sleep(Duration::from_millis(300));
    let mut phases: Vec<Phase> = [
        ("off", None),
        ("every packet", Some(1)),
        ("one in 10", Some(10)),
    ]
    .into_iter()
    .map(|(name, sample)| Phase {
        name,
        sample,
        sent: 0,
        received: 0,
        secs: 0.0,
        src_ns: vec![],
        dst_ns: vec![],
    })
    .collect();
    let bar = crate::progress::bar(
        u64::from(args.rounds) * phases.len() as u64,
        "{prefix} [{bar:30}] {pos}/{len} phases {msg} {eta}",
        "inline",
    );
    let cost_secs = (args.seconds / 4.0).max(0.25);
    for round in 0..args.rounds {
        for ph in phases.iter_mut() {
            bar.set_message(format!("round {}: {}", round + 1, ph.name));
            let agents = match ph.sample {
                None => None,
                Some(n) => {
                    let mut s = Settings::default();
                    s.set_all([
                        "dst=fd00::2",
                        "proto=udp",
                        mode.as_str(),
                        &format!("sample={n}"),
                    ])?;
                    let s2 = s.clone();
                    let src = netns::run_in(&p.src, move || {
                        Agent::start("sg0", Role::Source, &s2, LoadOptions::default())
                    })??;
                    let mut dst = netns::run_in(&p.dst, move || {
                        Agent::start("sg1", Role::Sink, &s, LoadOptions::default())
                    })??;
                    dst.read_records(|_| {})?;
                    Some((src, dst))
                }
            };
            let (sent, received) = blast(&p, args.payload, args.seconds)?;
            ph.sent += sent;
            ph.received += received;
            ph.secs += args.seconds;
            if let Some((s, d)) = agents {
                stats.set(true)?;
                let (sb, db) = (s.run_stats(), d.run_stats());
                blast(&p, args.payload, cost_secs)?;
                ph.src_ns.extend(per_run(sb, s.run_stats()));
                ph.dst_ns.extend(per_run(db, d.run_stats()));
                stats.set(false)?;
                d.stop()?;
                s.stop()?;
            }
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    drop(stats);
    println!(
        "mode={}, {}-byte payloads, {} round(s) of {} s per phase",
        args.mode, args.payload, args.rounds, args.seconds
    );
    let base = phases[0].received as f64 / phases[0].secs;
    let mean = |v: &[f64]| {
        if v.is_empty() {
            f64::NAN
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        }
    };
    println!("| phase | sent pps | received pps | ratio to off | source ns/pkt | sink ns/pkt |");
    println!("|---|---:|---:|---:|---:|---:|");
    for ph in &phases {
        let rx = ph.received as f64 / ph.secs;
        println!(
            "| {} | {:.0} | {:.0} | {:.3} | {:.0} | {:.0} |",
            ph.name,
            ph.sent as f64 / ph.secs,
            rx,
            rx / base,
            mean(&ph.src_ns),
            mean(&ph.dst_ns)
        );
    }
    Ok(true)
}
