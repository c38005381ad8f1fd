//! `streamgauge inline bench`: packet (UDP) or bit (TCP, iperf3) rates
//! between two namespaces joined by a veth pair, with nothing attached and
//! with the in-line programs, alternating in the same run; plus the BPF run
//! time per packet of each program (kernel.bpf_stats_enabled) and each
//! CPU's busy time.
//!
//! Phases of every round: *off*; with `--calibrate`, *empty programs* (a
//! program that returns at once on each hook), *header only* (insert and
//! remove an 8-byte header, nothing measured) and *measurement floor*
//! (a header of `--mode`'s length plus the kernel work an exact
//! measurement with that layout cannot avoid: a flow-table lookup and an
//! atomic sequence number at the source where the layout carries one, a
//! clock read where it carries a timestamp; a clock read, a batched record
//! and its ring-buffer output at the sink; none of our logic); *every packet* and *one in 10* with the
//! real programs, for each `--sink-hook`; and *one in 10, per CPU*
//! (sampling decided before the flow lookup). This machine's rates wander
//! by several per cent from second to second, so each phase's ratio is
//! taken against the same round's *off*, *header only* and *measurement
//! floor* phases and the tables show medians over rounds with the range of
//! ratios; *every packet* also shows its BPF time per packet above the
//! same round's measurement floor, per side: the cost of our code's own
//! logic.
//!
//! Placements (`--placement`): *same-core*, where the veth delivers on the
//! sender's CPU so one core pays for sender, source, sink and receive path;
//! and *split*, where receive packet steering (and, for an XDP sink, a
//! pinned NAPI thread) moves the receive side to the other core, as two
//! hosts would pay for it.
//!
//! The kernel's run-time statistics read the clock twice around every
//! program run, which would itself slow the instrumented phases: rates are
//! measured with the statistics off, and each UDP phase with programs is
//! followed by a shorter blast with them on that gives the cost.
//!
//! With `--calibrate`, the programs are then timed alone (`testrun`) and
//! the run ends with the in-line budgets judged on its figures
//! (`budgets`).

mod budgets;
mod net;
mod testrun;
mod traffic;

use std::time::Duration;

use anyhow::{Context, Result};
use inline::{
    netns, Agent, Calibration, CalibrationProgram, LoadOptions, Mode, Role, RunStats, Settings,
    SinkHook,
};

use net::{load_average, CpuTimes, Pair, Placement, DST_IF, SRC_IF};
use traffic::{tcp_run, udp_blast, Iperf};

/// What `streamgauge inline bench` measures (its flags say each in full).
#[derive(Debug, Clone)]
pub struct Config {
    /// Seconds per phase (TCP phases: whole seconds, at least 1).
    pub seconds: f64,
    /// Rounds; every round runs every phase of every placement.
    pub rounds: u32,
    /// UDP payload bytes.
    pub payload: usize,
    /// Header layout to insert: `both`, `delay`, `loss`, `pdm` or `compact`.
    pub mode: String,
    /// Also run the calibration phases, time each program alone and judge
    /// the in-line budgets on the run.
    pub calibrate: bool,
    /// Where the receive side runs: `same-core`, `split` or `both`.
    pub placement: String,
    /// Sink hook(s) to measure: `tc`, `xdp` or `both`.
    pub sink_hook: String,
    /// Also measure TCP with iperf3.
    pub tcp: bool,
    /// Instead of traffic: time each program alone with the kernel's test
    /// runs.
    pub test_run: bool,
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

#[derive(Clone, Copy, PartialEq, Eq)]
enum Traffic {
    Udp,
    Tcp,
}

/// What is attached during a phase.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Nothing.
    Off,
    /// A calibration program on each end.
    Calibration(Calibration),
    /// The real programs with one-in-N sampling, per flow or per CPU.
    Measure { every: u32, per_cpu: bool },
}

struct Phase {
    name: String,
    kind: Kind,
    hook: SinkHook,
}

/// One phase's figures over the rounds, for one placement and traffic.
#[derive(Default)]
struct Samples {
    rate: Vec<f64>,
    ratio_off: Vec<f64>,
    ratio_empty: Vec<f64>,
    ratio_floor: Vec<f64>,
    ratio_mfloor: Vec<f64>,
    /// BPF ns per packet, one per round (NaN when unavailable).
    src_ns: Vec<f64>,
    dst_ns: Vec<f64>,
    /// BPF ns per packet above the same round's measurement floor
    /// (*every packet* phases).
    src_over: Vec<f64>,
    dst_over: Vec<f64>,
    /// The same above the same round's *header only* phase.
    src_over_header: Vec<f64>,
    dst_over_header: Vec<f64>,
    busy: [Vec<f64>; 2],
    sender_cpu: Vec<f64>,
    receiver_cpu: Vec<f64>,
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

    /// Records the measurement floor's sink lost to a full ring buffer.
    fn ring_drops(&self) -> u64 {
        match self {
            Attachment::Calibration(_, d) => d.ring_drops().unwrap_or(0),
            Attachment::Agents(_) => 0,
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

fn attach(p: &Pair, ph: &Phase, mode: &str, traffic: Traffic) -> Result<Option<Attachment>> {
    let hook = ph.hook;
    match ph.kind {
        Kind::Off => Ok(None),
        Kind::Calibration(c) => {
            let src = netns::run_in(&p.src, move || {
                CalibrationProgram::attach(SRC_IF, Role::Source, c)
            })??;
            let dst = netns::run_in(&p.dst, move || {
                CalibrationProgram::attach_at(DST_IF, Role::Sink, c, hook)
            })??;
            Ok(Some(Attachment::Calibration(src, dst)))
        }
        Kind::Measure { every, per_cpu } => {
            let mut s = Settings::default();
            let proto = if traffic == Traffic::Tcp {
                "proto=tcp"
            } else {
                "proto=udp"
            };
            let sample = format!("sample={every}");
            let sampling = if per_cpu {
                "sampling=cpu"
            } else {
                "sampling=flow"
            };
            s.set_all(["dst=fd00::2", proto, mode, &sample, sampling])?;
            let s2 = s.clone();
            let src = netns::run_in(&p.src, move || {
                Agent::start(SRC_IF, Role::Source, &s2, LoadOptions::default())
            })??;
            let load = LoadOptions {
                sink_hook: hook,
                ..LoadOptions::default()
            };
            let mut dst =
                netns::run_in(&p.dst, move || Agent::start(DST_IF, Role::Sink, &s, load))??;
            if dst.program().hook() != hook {
                anyhow::bail!("the sink could not attach at {}", hook.name());
            }
            dst.read_records(|_| {})?;
            Ok(Some(Attachment::Agents(Box::new((src, dst)))))
        }
    }
}

fn per_run(before: Option<RunStats>, after: Option<RunStats>) -> Option<f64> {
    after?.ns_per_run_since(&before?)
}

fn median(v: &[f64]) -> f64 {
    let mut v: Vec<f64> = v.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

fn range(v: &[f64]) -> String {
    let v: Vec<f64> = v.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return String::new();
    }
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{lo:.3}–{hi:.3}")
}

/// The phases of one round, in order; the measurement floor carries `layout`.
fn phases(args: &Config, layout: Mode) -> Vec<Phase> {
    let hooks: &[SinkHook] = match args.sink_hook.as_str() {
        "xdp" => &[SinkHook::Xdp],
        "both" => &[SinkHook::Tc, SinkHook::Xdp],
        _ => &[SinkHook::Tc],
    };
    let at = |name: &str, hook: SinkHook| format!("{name} [{} sink]", hook.name());
    let mut v = vec![Phase {
        name: "off".into(),
        kind: Kind::Off,
        hook: SinkHook::Tc,
    }];
    for &hook in hooks {
        if args.calibrate {
            for (name, c) in [
                ("empty programs", Calibration::Empty),
                ("header only", Calibration::Floor),
                ("measurement floor", Calibration::MeasurementFloor(layout)),
            ] {
                v.push(Phase {
                    name: at(name, hook),
                    kind: Kind::Calibration(c),
                    hook,
                });
            }
        }
        for (name, every) in [("every packet", 1), ("one in 10", 10)] {
            v.push(Phase {
                name: at(name, hook),
                kind: Kind::Measure {
                    every,
                    per_cpu: false,
                },
                hook,
            });
        }
    }
    v.push(Phase {
        name: at("one in 10, per CPU", hooks[0]),
        kind: Kind::Measure {
            every: 10,
            per_cpu: true,
        },
        hook: hooks[0],
    });
    v
}

/// Runs the benchmark and prints its tables; `Ok(false)` when the
/// run's figures say something went wrong (its own message says what).
pub fn run(args: &Config) -> Result<bool> {
    if args.test_run {
        return testrun::run(args);
    }
    let mode = format!("mode={}", args.mode);
    let mut parsed = Settings::default();
    parsed.set_all([mode.as_str()]).context("--mode")?;
    let placements: &[Placement] = match args.placement.as_str() {
        "same-core" => &[Placement::SameCore],
        "split" => &[Placement::Split],
        _ => &[Placement::SameCore, Placement::Split],
    };
    let traffics: &[Traffic] = if args.tcp {
        &[Traffic::Udp, Traffic::Tcp]
    } else {
        &[Traffic::Udp]
    };
    let load_before = load_average();
    let stats = BpfStats::take()?;
    stats.set(false)?;
    let p = Pair::new()?;
    let iperf = args.tcp.then(|| Iperf::start(&p)).transpose()?;
    std::thread::sleep(Duration::from_millis(300));
    let phases = phases(args, parsed.mode);
    // results[placement][traffic][phase]
    let mut results: Vec<Vec<Vec<Samples>>> = placements
        .iter()
        .map(|_| {
            traffics
                .iter()
                .map(|_| phases.iter().map(|_| Samples::default()).collect())
                .collect()
        })
        .collect();
    let bar = crate::progress::bar(
        u64::from(args.rounds) * (placements.len() * traffics.len() * phases.len()) as u64,
        "{prefix} [{bar:30}] {pos}/{len} phases {msg} {eta}",
        "inline",
    );
    let cost_secs = (args.seconds / 4.0).max(0.25);
    let mut ring_drops = 0u64;
    for round in 0..args.rounds {
        for (pi, &placement) in placements.iter().enumerate() {
            p.place(placement)?;
            for (ti, &traffic) in traffics.iter().enumerate() {
                let mut rates = vec![f64::NAN; phases.len()];
                let mut costs = vec![(f64::NAN, f64::NAN); phases.len()];
                for (k, ph) in phases.iter().enumerate() {
                    bar.set_message(format!(
                        "round {}: {} {}",
                        round + 1,
                        placement.name(),
                        ph.name
                    ));
                    let attached = attach(&p, ph, &mode, traffic)
                        .with_context(|| format!("attaching for phase {:?}", ph.name))?;
                    if placement == Placement::Split && ph.hook == SinkHook::Xdp {
                        p.pin_napi();
                    }
                    let s = &mut results[pi][ti][k];
                    let before = CpuTimes::now();
                    rates[k] = match traffic {
                        Traffic::Udp => {
                            udp_blast(&p, args.payload, args.seconds)?.1 as f64 / args.seconds
                        }
                        Traffic::Tcp => {
                            let r = tcp_run(&p, args.seconds)?;
                            s.sender_cpu.push(r.sender_cpu);
                            s.receiver_cpu.push(r.receiver_cpu);
                            r.bps
                        }
                    };
                    let busy = CpuTimes::now().busy_since(&before);
                    for (cpu, b) in s.busy.iter_mut().enumerate() {
                        b.push(busy.get(cpu).copied().unwrap_or(f64::NAN));
                    }
                    s.rate.push(rates[k]);
                    if let Some(a) = attached {
                        if traffic == Traffic::Udp {
                            stats.set(true)?;
                            let (sb, db) = a.stats();
                            udp_blast(&p, args.payload, cost_secs)?;
                            let (sa, da) = a.stats();
                            costs[k] = (
                                per_run(sb, sa).unwrap_or(f64::NAN),
                                per_run(db, da).unwrap_or(f64::NAN),
                            );
                            s.src_ns.push(costs[k].0);
                            s.dst_ns.push(costs[k].1);
                            stats.set(false)?;
                        }
                        ring_drops += a.ring_drops();
                        a.stop()?;
                    }
                    bar.inc(1);
                }
                for (k, ph) in phases.iter().enumerate() {
                    let calibration = |c| {
                        phases
                            .iter()
                            .position(|f| f.kind == Kind::Calibration(c) && f.hook == ph.hook)
                    };
                    let empty = calibration(Calibration::Empty);
                    let floor = calibration(Calibration::Floor);
                    let mfloor = phases.iter().position(|f| {
                        matches!(f.kind, Kind::Calibration(Calibration::MeasurementFloor(_)))
                            && f.hook == ph.hook
                    });
                    let s = &mut results[pi][ti][k];
                    s.ratio_off.push(rates[k] / rates[0]);
                    s.ratio_empty
                        .push(empty.map_or(f64::NAN, |f| rates[k] / rates[f]));
                    s.ratio_floor
                        .push(floor.map_or(f64::NAN, |f| rates[k] / rates[f]));
                    s.ratio_mfloor
                        .push(mfloor.map_or(f64::NAN, |f| rates[k] / rates[f]));
                    // Every packet only: the floor measures every packet too.
                    if let (Kind::Measure { every: 1, .. }, Some(f), Some(h)) =
                        (ph.kind, mfloor, floor)
                    {
                        if traffic == Traffic::Udp {
                            s.src_over.push(costs[k].0 - costs[f].0);
                            s.dst_over.push(costs[k].1 - costs[f].1);
                            s.src_over_header.push(costs[k].0 - costs[h].0);
                            s.dst_over_header.push(costs[k].1 - costs[h].1);
                        }
                    }
                }
            }
        }
    }
    bar.finish_and_clear();
    drop(stats);
    drop(iperf);
    drop(p);
    // The programs timed alone, for the budgets' cost rows; after the
    // traffic, so they never share the cores with it.
    let tests = if args.calibrate {
        Some(testrun::measure(&args.mode, testrun::CALIBRATE_ROUNDS)?)
    } else {
        None
    };
    println!(
        "mode={}, {}-byte UDP payloads, {} round(s) of {} s per phase; medians over rounds; load average {} before, {} after",
        args.mode,
        args.payload,
        args.rounds,
        args.seconds,
        load_before,
        load_average()
    );
    for (pi, placement) in placements.iter().enumerate() {
        for (ti, traffic) in traffics.iter().enumerate() {
            print_table(*placement, *traffic, &phases, &results[pi][ti]);
        }
    }
    if let Some(tests) = &tests {
        println!("\nThe same programs timed alone (no traffic):\n");
        testrun::print(&args.mode, testrun::CALIBRATE_ROUNDS, tests);
        let udp: Vec<&[Samples]> = results.iter().map(|r| r[0].as_slice()).collect();
        budgets::print(placements, &phases, &udp, parsed.mode, tests);
    }
    if ring_drops > 0 {
        println!(
            "\nnote: the measurement floor's ring buffer was full for {ring_drops} record(s): those phases did less than a measurement"
        );
    }
    Ok(true)
}

fn print_table(placement: Placement, traffic: Traffic, phases: &[Phase], results: &[Samples]) {
    let (what, unit, scale) = match traffic {
        Traffic::Udp => ("UDP", "received pps", 1.0),
        Traffic::Tcp => ("TCP (iperf3)", "received Gbit/s", 1e-9),
    };
    println!("\n{what}, placement {}:\n", placement.name());
    print!("| phase | {unit} | ratio to off | range | ratio to header only | range |");
    let cols = match traffic {
        Traffic::Udp => {
            println!(
                " source ns/pkt | sink ns/pkt | CPU0 busy | CPU1 busy | ratio to measurement floor | range | source ns over measurement floor | sink ns over measurement floor |"
            );
            14
        }
        Traffic::Tcp => {
            println!(
                " CPU0 busy | CPU1 busy | sender CPU (iperf3) | receiver CPU (iperf3) | ratio to measurement floor | range |"
            );
            12
        }
    };
    println!("|---|{}", "---:|".repeat(cols - 1));
    for (ph, s) in phases.iter().zip(results) {
        let rate = median(&s.rate) * scale;
        let rate = if traffic == Traffic::Udp {
            format!("{rate:.0}")
        } else {
            format!("{rate:.2}")
        };
        let ratio = |v: &[f64]| {
            let m = median(v);
            if m.is_nan() {
                String::new()
            } else {
                format!("{m:.3}")
            }
        };
        let floor = ratio(&s.ratio_floor);
        let mfloor = format!(" {} | {} |", ratio(&s.ratio_mfloor), range(&s.ratio_mfloor));
        let pct = |v: &[f64]| format!("{:.0} %", median(v) * 100.0);
        print!(
            "| {} | {} | {:.3} | {} | {} | {} |",
            ph.name,
            rate,
            median(&s.ratio_off),
            range(&s.ratio_off),
            floor,
            range(&s.ratio_floor),
        );
        let ns = |v: &[f64]| {
            let m = median(v);
            if m.is_nan() {
                String::new()
            } else {
                format!("{m:.0}")
            }
        };
        match traffic {
            Traffic::Udp => println!(
                " {} | {} | {} | {} |{mfloor} {} | {} |",
                ns(&s.src_ns),
                ns(&s.dst_ns),
                pct(&s.busy[0]),
                pct(&s.busy[1]),
                ns(&s.src_over),
                ns(&s.dst_over),
            ),
            Traffic::Tcp => println!(
                " {} | {} | {:.0} % | {:.0} % |{mfloor}",
                pct(&s.busy[0]),
                pct(&s.busy[1]),
                median(&s.sender_cpu),
                median(&s.receiver_cpu)
            ),
        }
    }
}
