//! The in-line targets, judged on one `inline bench --calibrate` run: each
//! target's figure from this run and, where it is missed, the same run's
//! calibration row that says whether what is left is our code's.
//!
//! Why a calibration row can settle a missed target: on this kind of
//! machine the kernel's part of an in-line measurement (room for the
//! header, the flow-table lookup and atomic sequence number, the clock,
//! the ring buffer, the hook itself) can cost more than a target allows
//! over *off* or *header only*. The *measurement floor* and *empty
//! programs* phases do exactly that kernel work and nothing of ours, so a
//! phase within the target's allowance of them has spent no more than
//! that allowance on our code. Such a target is shown *at floor*, not
//! *met*.

use inline::testrun::{Cost, Part, Side};
use inline::Mode;

use super::net::Placement;
use super::testrun::above;
use super::{median, Kind, Phase, Samples};

/// What one run shows of a target.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Met,
    /// Missed, but within the target's allowance of the kernel work the
    /// same run measured alone.
    AtFloor,
    Missed,
}

struct Row {
    target: String,
    measured: String,
    verdict: Verdict,
    calibration: String,
}

impl Row {
    /// Met if `met`; otherwise at floor if `at_floor`, with `calibration`
    /// shown (NaN comparisons are false, so a missing figure is missed).
    fn judged(
        target: String,
        measured: String,
        met: bool,
        at_floor: bool,
        calibration: String,
    ) -> Row {
        let verdict = match (met, at_floor) {
            (true, _) => Verdict::Met,
            (false, true) => Verdict::AtFloor,
            (false, false) => Verdict::Missed,
        };
        Row {
            target,
            measured,
            verdict,
            calibration: if met { String::new() } else { calibration },
        }
    }
}

/// A ratio target: `measured ≥ min`; if not, `against` (the phase's ratio
/// to a calibration phase) ≥ `min` puts it at the floor.
fn ratio_row(target: String, min: f64, measured: f64, against: f64, why: String) -> Row {
    Row::judged(
        format!("{target} ≥ {min:.2}"),
        format!("{measured:.3}"),
        measured >= min,
        against >= min,
        why,
    )
}

/// A cost target: `ns ≤ max`; if not, `over_floor` ≤ `max` puts it at
/// the floor.
fn ns_row(target: String, max: f64, ns: f64, over_floor: f64) -> Row {
    Row::judged(
        format!("{target} ≤ {max:.0} ns"),
        format!("{ns:+.0} ns"),
        ns <= max,
        over_floor <= max,
        format!("our code {over_floor:+.0} ns above the measurement floor"),
    )
}

/// The every-packet target against *header only*: 0.97 for the
/// 8-byte layouts, 0.95 for those that need the kernel to make room.
fn every_packet_min(mode: Mode) -> f64 {
    match mode {
        Mode::Loss | Mode::Compact => 0.97,
        _ => 0.95,
    }
}

/// Allowed BPF ns per packet and side above *header only*.
const NS_MAX: f64 = 50.0;
/// One in 10 against *off*.
const ONE_IN_10_MIN: f64 = 0.97;
/// Every packet against *off* with the receive side on its own core.
const SPLIT_MIN: f64 = 0.95;

/// Builds the rows for one placement's UDP results.
fn placement_rows(
    placement: Placement,
    phases: &[Phase],
    results: &[Samples],
    mode: Mode,
    rows: &mut Vec<Row>,
) {
    let find = |pred: &dyn Fn(&Phase) -> bool| phases.iter().position(pred);
    for (k, ph) in phases.iter().enumerate() {
        let s = &results[k];
        let name = format!("{}, {}", placement.name(), ph.name);
        let of_phase = |c: &dyn Fn(&Kind) -> bool| {
            find(&|f: &Phase| c(&f.kind) && f.hook == ph.hook).map(|i| &results[i])
        };
        match ph.kind {
            Kind::Measure { every: 1, .. } => {
                let mfloor = of_phase(&|k| {
                    matches!(
                        k,
                        Kind::Calibration(inline::Calibration::MeasurementFloor(_))
                    )
                });
                let to_mfloor = median(&s.ratio_mfloor);
                let mfloor_of =
                    |f: fn(&Samples) -> &Vec<f64>| mfloor.map_or(f64::NAN, |m| median(f(m)));
                let min = every_packet_min(mode);
                rows.push(ratio_row(
                    format!("{name} / header only"),
                    min,
                    median(&s.ratio_floor),
                    to_mfloor,
                    format!(
                        "{to_mfloor:.3} of the measurement floor, which is {:.3} of header only",
                        mfloor_of(|m| &m.ratio_floor)
                    ),
                ));
                if placement == Placement::Split {
                    rows.push(ratio_row(
                        format!("{name} / off"),
                        SPLIT_MIN,
                        median(&s.ratio_off),
                        to_mfloor,
                        format!(
                            "{to_mfloor:.3} of the measurement floor, which is {:.3} of off",
                            mfloor_of(|m| &m.ratio_off)
                        ),
                    ));
                }
                for (side, over_header, over_floor) in [
                    ("source", &s.src_over_header, &s.src_over),
                    ("sink", &s.dst_over_header, &s.dst_over),
                ] {
                    rows.push(ns_row(
                        format!("{name}: {side} BPF ns above header only (kernel statistics)"),
                        NS_MAX,
                        median(over_header),
                        median(over_floor),
                    ));
                }
            }
            Kind::Measure { every: 10, .. } => {
                let to_empty = median(&s.ratio_empty);
                let empty = of_phase(&|k| *k == Kind::Calibration(inline::Calibration::Empty));
                rows.push(ratio_row(
                    format!("{name} / off"),
                    ONE_IN_10_MIN,
                    median(&s.ratio_off),
                    to_empty,
                    format!(
                        "{to_empty:.3} of empty programs, which are {:.3} of off",
                        empty.map_or(f64::NAN, |e| median(&e.ratio_off))
                    ),
                ));
            }
            _ => {}
        }
    }
}

/// Prints the targets table for a calibrated run: `udp[i]` holds
/// `placements[i]`'s UDP results, `tests` the test runs of the same run.
pub(super) fn print(
    placements: &[Placement],
    phases: &[Phase],
    udp: &[&[Samples]],
    mode: Mode,
    tests: &[Cost],
) {
    let mut rows = Vec::new();
    for (placement, results) in placements.iter().zip(udp) {
        placement_rows(*placement, phases, results, mode, &mut rows);
    }
    for (side, name) in [(Side::Source, "source"), (Side::Sink, "sink")] {
        let at = |base| above(tests, side, Part::Loaded, base).unwrap_or(f64::NAN);
        rows.push(ns_row(
            format!("{name} ns above header only (test runs, no traffic, no statistics)"),
            NS_MAX,
            at(Part::HeaderOnly),
            at(Part::MeasurementFloor),
        ));
    }
    println!(
        "\nTargets, judged on this run (\"at floor\": missed, but within the target's allowance of the same run's calibration phase, which does only the kernel's part):\n"
    );
    println!("| target | measured | verdict | same-run calibration |");
    println!("|---|---:|---|---|");
    for r in &rows {
        let verdict = match r.verdict {
            Verdict::Met => "met",
            Verdict::AtFloor => "at floor",
            Verdict::Missed => "MISSED",
        };
        println!(
            "| {} | {} | {verdict} | {} |",
            r.target, r.measured, r.calibration
        );
    }
    let count = |v| rows.iter().filter(|r| r.verdict == v).count();
    println!(
        "\n{} target(s) met, {} at floor, {} missed",
        count(Verdict::Met),
        count(Verdict::AtFloor),
        count(Verdict::Missed)
    );
}
