//! `streamgauge inline bench`: 64-byte UDP packets/s between two namespaces
//! without instrumentation, with every packet instrumented, and with
//! one-in-10 sampling, alternating in the same run; plus the BPF run time
//! per packet of each program (kernel.bpf_stats_enabled). With
//! `--calibrate`, two more phases attach calibration programs instead: an
//! empty one, and one that only carries an 8-byte header. This machine's
//! rates wander by several per cent from second to second, so each phase's
//! ratio is taken against the same round's "off" phase and the table shows
//! medians over rounds with the range of ratios.
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
use inline::{
    netns, Agent, Calibration, CalibrationProgram, LoadOptions, Role, RunStats, Settings,
};

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
    /// Also run two calibration phases (needs tcx, Linux ≥ 6.6): `empty
    /// programs` (a program that returns at once on each hook) and `header
    /// only` (insert and remove an 8-byte header, nothing measured): the
    /// floor any in-line measurement with tc programs has on this machine.
    #[arg(long)]
    calibrate: bool,
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

/// What is attached during a phase.
#[derive(Clone, Copy)]
enum Kind {
    /// Nothing.
    Off,
    /// A calibration program on each end (tcx only).
    Calibration(Calibration),
    /// The real programs with one-in-N sampling.
    Measure(u32),
}

struct Phase {
    name: &'static str,
    kind: Kind,
    /// Received packets/s of each round.
    pps: Vec<f64>,
    /// Ratio to the same round's "off" phase.
    ratios: Vec<f64>,
    src_ns: Vec<f64>,
    dst_ns: Vec<f64>,
}

/// Programs attached for one phase, detached on drop.
enum Attachment {
    Agents(Box<(Agent, Agent)>),
    Calibration(CalibrationProgram, CalibrationProgram),
}

impl Attachment {
    fn stats(&self) -> (Option<RunStats>, Option<RunStats>) {
        match self {
            Attachment::Agents(a) => (a.0.run_stats(), a.1.run_stats()),
            Attachment::Calibration(s, d) => (s.run_stats(), d.run_stats()),
        }
    }

    fn stop(self) -> Result<()> {
        if let Attachment::Agents(a) = self {
            let (s, d) = *a;
            d.stop()?;
            s.stop()?;
        }
        Ok(())
    }
}

fn attach(p: &Pair, kind: Kind, mode: &str) -> Result<Option<Attachment>> {
    match kind {
        Kind::Off => Ok(None),
        Kind::Calibration(c) => {
            let src = netns::run_in(&p.src, move || {
                CalibrationProgram::attach("sg0", Role::Source, c)
            })??;
            let dst = netns::run_in(&p.dst, move || {
                CalibrationProgram::attach("sg1", Role::Sink, c)
            })??;
            Ok(Some(Attachment::Calibration(src, dst)))
        }
        Kind::Measure(n) => {
            let mut s = Settings::default();
            s.set_all(["dst=fd00::2", "proto=udp", mode, &format!("sample={n}")])?;
            let s2 = s.clone();
            let src = netns::run_in(&p.src, move || {
                Agent::start("sg0", Role::Source, &s2, LoadOptions::default())
            })??;
            let mut dst = netns::run_in(&p.dst, move || {
                Agent::start("sg1", Role::Sink, &s, LoadOptions::default())
            })??;
            dst.read_records(|_| {})?;
            Ok(Some(Attachment::Agents(Box::new((src, dst)))))
        }
    }
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

fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

fn range(v: &[f64]) -> String {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if v.is_empty() {
        "-".to_owned()
    } else {
        format!("{lo:.3}–{hi:.3}")
    }
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
    let mut kinds = vec![("off", Kind::Off)];
    if args.calibrate {
        kinds.push(("empty programs", Kind::Calibration(Calibration::Empty)));
        kinds.push(("header only", Kind::Calibration(Calibration::Floor)));
    }
    kinds.push(("every packet", Kind::Measure(1)));
    kinds.push(("one in 10", Kind::Measure(10)));
    let mut phases: Vec<Phase> = kinds
        .into_iter()
        .map(|(name, kind)| Phase {
            name,
            kind,
            pps: vec![],
            ratios: vec![],
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
        let mut off = f64::NAN;
        for ph in phases.iter_mut() {
            bar.set_message(format!("round {}: {}", round + 1, ph.name));
            let attached = attach(&p, ph.kind, &mode)
                .with_context(|| format!("attaching for phase {:?}", ph.name))?;
            let (_, received) = blast(&p, args.payload, args.seconds)?;
            let pps = received as f64 / args.seconds;
            if matches!(ph.kind, Kind::Off) {
                off = pps;
            }
            ph.pps.push(pps);
            ph.ratios.push(pps / off);
            if let Some(a) = attached {
                stats.set(true)?;
                let (sb, db) = a.stats();
                blast(&p, args.payload, cost_secs)?;
                let (sa, da) = a.stats();
                ph.src_ns.extend(per_run(sb, sa));
                ph.dst_ns.extend(per_run(db, da));
                stats.set(false)?;
                a.stop()?;
            }
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    drop(stats);
    println!(
        "mode={}, {}-byte payloads, {} round(s) of {} s per phase; medians over rounds",
        args.mode, args.payload, args.rounds, args.seconds
    );
    println!("| phase | received pps | ratio to off | ratio range | source ns/pkt | sink ns/pkt |");
    println!("|---|---:|---:|---:|---:|---:|");
    for ph in &phases {
        println!(
            "| {} | {:.0} | {:.3} | {} | {:.0} | {:.0} |",
            ph.name,
            median(&ph.pps),
            median(&ph.ratios),
            range(&ph.ratios),
            median(&ph.src_ns),
            median(&ph.dst_ns)
        );
    }
    Ok(true)
}
