//! The in-line budgets, judged on one `inline bench --calibrate` run: each
//! budget's figure from this run and, where it is missed, the same run's
//! calibration row that says whether what is left is our code's.
//!
//! Why a calibration row can settle a missed budget: on this kind of
//! machine the kernel's part of an in-line measurement (room for the
//! header, the flow-table lookup and atomic sequence number, the clock,
//! the ring buffer, the hook itself) can cost more than a budget allows
//! over *off* or *header only*. The *measurement floor* phase does
//! exactly that kernel work and nothing of ours (for one in 10: the
//! *empty programs*, the hooks alone, for nine packets and the floor for
//! the tenth), so a phase within the budget's allowance of it has spent
//! no more than that allowance on our code. Such a budget is shown *at floor*, not
//! *met*.
//!
//! Why intervals: on a shared 2-vCPU machine the rounds' ratios spread by
//! ±30 %, so a median can fall on either side of a 3 % bound by chance.
//! Each figure carries a distribution-free interval for its median (order
//! statistics, at least 95 % where the rounds allow), and a verdict whose
//! interval contains its bound is marked as not decided by this run.

use inline::testrun::{Cost, Part, Side};
use inline::{Calibration, Mode};

use super::net::Placement;
use super::{median, Kind, Phase, Samples};

/// What one run shows of a budget.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Met,
    /// Missed, but within the budget's allowance of the kernel work the
    /// same run measured alone.
    AtFloor,
    Missed,
}

/// A budget's bound.
#[derive(Clone, Copy)]
enum Bound {
    AtLeast(f64),
    AtMost(f64),
}

impl Bound {
    fn meets(self, x: f64) -> bool {
        match self {
            Bound::AtLeast(b) => x >= b,
            Bound::AtMost(b) => x <= b,
        }
    }

    /// Whether an interval lies wholly on one side of the bound.
    fn clear_of(self, (lo, hi): (f64, f64)) -> bool {
        self.meets(lo) == self.meets(hi)
    }
}

/// A distribution-free interval for the median of `v`: the order
/// statistics x(k) and x(n+1-k) for the largest k with
/// P(Binomial(n, 1/2) < k) ≤ 2.5 %, so at least 95 % coverage; with
/// fewer than 6 values no such k exists and the whole range is given.
fn median_interval(v: &[f64]) -> (f64, f64) {
    let mut x: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if x.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    x.sort_by(f64::total_cmp);
    let n = x.len();
    // cdf = P(B ≤ j) for j = 0, 1, ...; k = j + 1 while it is ≤ 2.5 %.
    let (mut k, mut term, mut cdf) = (0, 0.5f64.powi(n as i32), 0.0);
    for j in 0..n / 2 {
        cdf += term;
        if cdf > 0.025 {
            break;
        }
        k = j + 1;
        term *= (n - j) as f64 / (j + 1) as f64;
    }
    if k == 0 {
        (x[0], x[n - 1])
    } else {
        (x[k - 1], x[n - k])
    }
}

struct Row {
    budget: String,
    measured: String,
    verdict: Verdict,
    /// Whether the deciding figures' intervals are clear of the bound.
    decided: bool,
    calibration: String,
}

/// Formats a figure for the table: a ratio, or ns with a sign.
#[derive(Clone, Copy)]
enum Unit {
    Ratio,
    Ns,
}

impl Unit {
    fn show(self, x: f64) -> String {
        match self {
            Unit::Ratio => format!("{x:.3}"),
            Unit::Ns => format!("{x:+.0}"),
        }
    }

    fn with_interval(self, v: &[f64]) -> String {
        let (lo, hi) = median_interval(v);
        format!(
            "{} ({}…{})",
            self.show(median(v)),
            self.show(lo),
            self.show(hi)
        )
    }
}

impl Row {
    /// Judges `figure` (one value per round) against `bound`; if it
    /// misses, `calibration` (the same phase against its calibration
    /// phase, one value per round) within the bound puts it at the floor;
    /// `why` names the calibration phase.
    fn judged(
        budget: String,
        bound: Bound,
        unit: Unit,
        figure: &[f64],
        calibration: &[f64],
        why: &str,
    ) -> Row {
        let verdict = if bound.meets(median(figure)) {
            Verdict::Met
        } else if bound.meets(median(calibration)) {
            Verdict::AtFloor
        } else {
            Verdict::Missed
        };
        let (f, c) = (median_interval(figure), median_interval(calibration));
        let decided = match verdict {
            Verdict::Met => bound.clear_of(f),
            Verdict::AtFloor => bound.clear_of(c),
            Verdict::Missed => bound.clear_of(f) && bound.clear_of(c),
        };
        let shown = match bound {
            Bound::AtLeast(b) => format!("{budget} ≥ {b:.2}"),
            Bound::AtMost(b) => format!("{budget} ≤ {b:.0} ns"),
        };
        Row {
            budget: shown,
            measured: unit.with_interval(figure),
            verdict,
            decided,
            calibration: if verdict == Verdict::Met {
                String::new()
            } else {
                format!("{} {why}", unit.with_interval(calibration))
            },
        }
    }
}

/// The every-packet budget against *header only*: 0.97 for the
/// 8-byte layouts, 0.95 for those that need the kernel to make room.
fn every_packet_min(mode: Mode) -> f64 {
    match mode {
        Mode::Loss | Mode::Compact => 0.97,
        _ => 0.95,
    }
}

/// Allowed BPF ns per packet and side above *header only*.
const NS_MAX: Bound = Bound::AtMost(50.0);
/// One in 10 against *off*.
const ONE_IN_10: Bound = Bound::AtLeast(0.97);
/// Every packet against *off* with the receive side on its own core.
const SPLIT: Bound = Bound::AtLeast(0.95);

/// Builds the rows for one placement's UDP results.
fn placement_rows(
    placement: Placement,
    phases: &[Phase],
    results: &[Samples],
    mode: Mode,
    rows: &mut Vec<Row>,
) {
    // A calibration phase's median ratio to *off* or *header only*, for
    // the reader: how much of the budget the kernel's part takes alone.
    let phase = |c: Calibration, hook| {
        phases
            .iter()
            .position(|f| f.kind == Kind::Calibration(c) && f.hook == hook)
            .map(|i| &results[i])
    };
    let calibration = |c: Calibration, hook, of: fn(&Samples) -> &Vec<f64>| {
        phase(c, hook).map_or(f64::NAN, |s| median(of(s)))
    };
    for (ph, s) in phases.iter().zip(results) {
        let name = format!("{}, {}", placement.name(), ph.name);
        let mfloor = Calibration::MeasurementFloor(mode);
        match ph.kind {
            Kind::Measure { every: 1, .. } => {
                rows.push(Row::judged(
                    format!("{name} / header only"),
                    Bound::AtLeast(every_packet_min(mode)),
                    Unit::Ratio,
                    &s.ratio_floor,
                    &s.ratio_mfloor,
                    &format!(
                        "of the measurement floor, which is {:.3} of header only",
                        calibration(mfloor, ph.hook, |m| &m.ratio_floor)
                    ),
                ));
                if placement == Placement::Split {
                    rows.push(Row::judged(
                        format!("{name} / off"),
                        SPLIT,
                        Unit::Ratio,
                        &s.ratio_off,
                        &s.ratio_mfloor,
                        &format!(
                            "of the measurement floor, which is {:.3} of off",
                            calibration(mfloor, ph.hook, |m| &m.ratio_off)
                        ),
                    ));
                }
                for (side, over_header, over_floor) in [
                    ("source", &s.src_over_header, &s.src_over),
                    ("sink", &s.dst_over_header, &s.dst_over),
                ] {
                    rows.push(Row::judged(
                        format!("{name}: {side} BPF ns above header only (kernel statistics)"),
                        NS_MAX,
                        Unit::Ns,
                        over_header,
                        over_floor,
                        "ns: our code above the measurement floor",
                    ));
                }
            }
            Kind::Measure { every: 10, .. } => {
                // The kernel's part of one in 10: the hooks for nine
                // packets, the measurement floor for the tenth. Per packet
                // time is the mix, so the ratio to it is the mix of the
                // ratios to each, round by round.
                let mix = |e: &[f64], m: &[f64]| -> Vec<f64> {
                    e.iter().zip(m).map(|(e, m)| 0.9 * e + 0.1 * m).collect()
                };
                let floor_off = match (phase(Calibration::Empty, ph.hook), phase(mfloor, ph.hook)) {
                    (Some(e), Some(m)) => median(
                        &e.ratio_off
                            .iter()
                            .zip(&m.ratio_off)
                            .map(|(e, m)| 1.0 / (0.9 / e + 0.1 / m))
                            .collect::<Vec<_>>(),
                    ),
                    _ => f64::NAN,
                };
                rows.push(Row::judged(
                    format!("{name} / off"),
                    ONE_IN_10,
                    Unit::Ratio,
                    &s.ratio_off,
                    &mix(&s.ratio_empty, &s.ratio_mfloor),
                    &format!(
                        "of the one-in-10 floor (empty programs for nine packets, the measurement floor for the tenth), which is {floor_off:.3} of off"
                    ),
                ));
            }
            _ => {}
        }
    }
}

/// Per round, `part`'s ns on `side` minus `base`'s (the programs take
/// turns within a round, so a round's difference is a paired one).
fn per_round(tests: &[Cost], side: Side, part: Part, base: Part) -> Vec<f64> {
    let of = |what| tests.iter().find(|c| c.side == side && c.what == what);
    match (of(part), of(base)) {
        (Some(p), Some(b)) => p.ns.iter().zip(&b.ns).map(|(p, b)| p - b).collect(),
        _ => Vec::new(),
    }
}

/// Prints the budgets table for a calibrated run: `udp[i]` holds
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
        rows.push(Row::judged(
            format!("{name} ns above header only (test runs, no traffic, no statistics)"),
            NS_MAX,
            Unit::Ns,
            &per_round(tests, side, Part::Loaded, Part::HeaderOnly),
            &per_round(tests, side, Part::Loaded, Part::MeasurementFloor),
            "ns: our code above the measurement floor",
        ));
    }
    println!(
        "\nBudgets, judged on this run: median over rounds (interval of at least 95 % for the median). \"at floor\": missed, but within the budget's allowance of the same run's calibration phase, which does only the kernel's part. \"decided\": no where the interval that decides the verdict contains the bound, so this run's noise could have put it on the other side.\n"
    );
    println!("| budget | measured | verdict | decided | same-run calibration |");
    println!("|---|---:|---|---|---|");
    for r in &rows {
        let verdict = match r.verdict {
            Verdict::Met => "met",
            Verdict::AtFloor => "at floor",
            Verdict::Missed => "MISSED",
        };
        println!(
            "| {} | {} | {verdict} | {} | {} |",
            r.budget,
            r.measured,
            if r.decided { "yes" } else { "no" },
            r.calibration
        );
    }
    let count = |v| rows.iter().filter(|r| r.verdict == v).count();
    println!(
        "\n{} budget(s) met, {} at floor, {} missed; {} of them not decided by this run",
        count(Verdict::Met),
        count(Verdict::AtFloor),
        count(Verdict::Missed),
        rows.iter().filter(|r| !r.decided).count()
    );
}

#[cfg(test)]
mod tests {
    use super::median_interval;

    #[test]
    fn the_median_interval_widens_as_rounds_get_fewer() {
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        // n = 20: P(B ≤ 5) = 2.1 %, P(B ≤ 6) = 5.8 %: x(6)..x(15).
        assert_eq!(median_interval(&v), (6.0, 15.0));
        // n = 6: P(B = 0) = 1.6 %: x(1)..x(6), the whole range.
        assert_eq!(median_interval(&v[..6]), (1.0, 6.0));
        // n = 9: P(B ≤ 1) = 2.0 %: x(2)..x(8).
        assert_eq!(median_interval(&v[..9]), (2.0, 8.0));
        // Too few for 95 %: the whole range; NaN is left out.
        assert_eq!(median_interval(&[3.0, f64::NAN, 1.0, 2.0]), (1.0, 3.0));
        assert!(median_interval(&[]).0.is_nan());
    }
}
