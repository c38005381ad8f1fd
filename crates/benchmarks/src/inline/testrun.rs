//! `streamgauge inline bench --test-run`: each program timed alone by the
//! kernel (`BPF_PROG_TEST_RUN`, see `inline::testrun`), no traffic. The
//! rate phases say what users pay; these say, to a few nanoseconds even
//! on a noisy machine, what each program's code costs over the
//! measurement floor.

use anyhow::{Context, Result};
use inline::testrun::{program_costs, Cost, Part, Side};
use inline::Settings;

use super::{median, Config};

/// Runs per program and round: enough that the kernel clock's own jitter
/// averages out, few enough that the sinks' ring buffers (64 Ki records,
/// not drained here) never fill over 25 rounds.
const RUNS: u32 = 2000;

/// Rounds of test runs that `--calibrate` adds after the traffic phases.
pub(super) const CALIBRATE_ROUNDS: u32 = 25;

pub fn run(args: &Config) -> Result<bool> {
    let costs = measure(&args.mode, args.rounds)?;
    print(&args.mode, args.rounds, &costs);
    Ok(true)
}

/// Times every program `rounds` times, from a thread pinned to CPU 0
/// (the clock between runs is then the same CPU's); the caller's CPU
/// affinity is left as it was.
pub(super) fn measure(mode: &str, rounds: u32) -> Result<Vec<Cost>> {
    let mut s = Settings::default();
    let mode = format!("mode={mode}");
    s.set_all([
        "dst=fd00::2",
        "proto=udp",
        &mode,
        "sample=1",
        "sampling=flow",
    ])
    .context("--mode")?;
    let bar = crate::progress::bar(
        u64::from(rounds),
        "{prefix} [{bar:30}] {pos}/{len} rounds {eta}",
        "test runs",
    );
    let progress = bar.clone();
    let costs = std::thread::scope(|scope| {
        scope
            .spawn(move || -> Result<Vec<Cost>> {
                let mut one = nix::sched::CpuSet::new();
                one.set(0).context("CPU 0")?;
                nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &one)
                    .context("pinning to CPU 0")?;
                program_costs(&s, rounds, RUNS, |r| progress.set_position(u64::from(r)))
                    .context("timing the programs with BPF_PROG_TEST_RUN (root, Linux ≥ 5.10?)")
            })
            .join()
            .map_err(|_| anyhow::anyhow!("the test-run thread panicked"))?
    })?;
    bar.finish_and_clear();
    Ok(costs)
}

/// The table of test-run timings.
pub(super) fn print(mode: &str, rounds: u32, costs: &[Cost]) {
    println!(
        "mode={mode}, one 64-byte UDP datagram per run, {rounds} round(s) of {RUNS} runs per program, programs taking turns within each round, pinned to CPU 0; ns per run (the kernel's timing, median over rounds)"
    );
    println!("\n| side | program | ns per packet | range | above empty | above header only | above measurement floor |");
    println!("|---|---|---:|---:|---:|---:|---:|");
    for side in [Side::Source, Side::Sink] {
        let of = |part: Part| {
            costs
                .iter()
                .find(|c| c.side == side && c.what == part)
                .map(|c| median(&c.ns))
        };
        let (empty, header, floor) = (
            of(Part::Empty),
            of(Part::HeaderOnly),
            of(Part::MeasurementFloor),
        );
        for c in costs.iter().filter(|c| c.side == side) {
            let m = median(&c.ns);
            let above = |base: Option<f64>| match (c.what, base) {
                (Part::Empty, _) | (_, None) => String::new(),
                (_, Some(b)) => format!("{:+.1}", m - b),
            };
            println!(
                "| {} | {} | {m:.1} | {} | {} | {} | {} |",
                if side == Side::Source {
                    "source"
                } else {
                    "sink"
                },
                c.name,
                spread(c),
                above(empty),
                if c.what == Part::HeaderOnly {
                    String::new()
                } else {
                    above(header)
                },
                if c.what == Part::MeasurementFloor {
                    String::new()
                } else {
                    above(floor)
                },
            );
        }
    }
}

fn spread(c: &Cost) -> String {
    let lo = c.ns.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = c.ns.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{lo:.1}–{hi:.1}")
}
