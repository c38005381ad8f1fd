//! `streamgauge inline bench` end to end (root: namespaces, tc, XDP, BPF):
//! a short run with the calibration phases and both sink hooks prints
//! every phase with a rate, ratios to *off*, *header only* and
//! *measurement floor* and, for attached phases, per-packet costs (for
//! *every packet* also the cost above the measurement floor), times the
//! programs alone and judges every in-line budget on the run, and leaves
//! no namespace or BPF statistics switch behind.
#![cfg(feature = "inline")]

use std::process::{Command, Stdio};

#[test]
fn a_short_calibrated_run_prints_every_phase() {
    if !nix::unistd::geteuid().is_root() {
        assert!(
            std::env::var_os("SG_INLINE_SKIP_ROOT_TESTS").is_some(),
            "the in-line bench needs root; run as root or set SG_INLINE_SKIP_ROOT_TESTS=1"
        );
        return;
    }
    let stats_before = std::fs::read_to_string("/proc/sys/kernel/bpf_stats_enabled").unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_streamgauge"))
        .args([
            "inline",
            "bench",
            "--seconds",
            "0.3",
            "--rounds",
            "1",
            "--calibrate",
            "--mode",
            "loss",
            "--placement",
            "same-core",
            "--sink-hook",
            "both",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut phases = vec!["off".to_owned()];
    for hook in ["tc", "xdp"] {
        for phase in [
            "empty programs",
            "header only",
            "measurement floor",
            "every packet",
            "one in 10",
        ] {
            phases.push(format!("{phase} [{hook} sink]"));
        }
    }
    phases.push("one in 10, per CPU [tc sink]".to_owned());
    for phase in &phases {
        let row = stdout
            .lines()
            .find(|l| l.starts_with(&format!("| {phase} |")))
            .unwrap_or_else(|| panic!("no row for {phase}:\n{stdout}"));
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let pps: f64 = cells[2].parse().unwrap();
        let ratio: f64 = cells[3].parse().unwrap();
        assert!(pps > 1000.0, "{row}");
        assert!(ratio > 0.2 && ratio < 5.0, "{row}");
        let to_floor: f64 = cells[5].parse().unwrap();
        assert!(to_floor > 0.2 && to_floor < 5.0, "{row}");
        let to_mfloor: f64 = cells[11].parse().unwrap();
        assert!(to_mfloor > 0.2 && to_mfloor < 5.0, "{row}");
        if phase != "off" {
            let (src, dst): (f64, f64) = (cells[7].parse().unwrap(), cells[8].parse().unwrap());
            assert!(src > 0.0 && src < 100_000.0, "{row}");
            assert!(dst > 0.0 && dst < 100_000.0, "{row}");
        }
        // Our code's own cost: every packet only, and a difference of two
        // noisy short samples, so only its presence and scale.
        if phase.starts_with("every packet") {
            let (src, dst): (f64, f64) = (cells[13].parse().unwrap(), cells[14].parse().unwrap());
            assert!(src.abs() < 100_000.0 && dst.abs() < 100_000.0, "{row}");
        } else {
            assert!(cells[13].is_empty() && cells[14].is_empty(), "{row}");
        }
    }
    assert_budgets_judged(&stdout);
    let netns = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let ours = format!("sgb{pid}-");
    let listed = String::from_utf8_lossy(&netns.stdout);
    assert!(!listed.contains(&ours), "namespaces left behind:\n{listed}");
    assert!(
        !stdout.contains("ring buffer was full"),
        "the measurement floor dropped records:\n{stdout}"
    );
    let stats_after = std::fs::read_to_string("/proc/sys/kernel/bpf_stats_enabled").unwrap();
    assert_eq!(stats_before, stats_after, "bpf_stats_enabled not restored");
}

#[test]
fn a_test_run_times_every_program_on_both_sides() {
    if !nix::unistd::geteuid().is_root() {
        assert!(
            std::env::var_os("SG_INLINE_SKIP_ROOT_TESTS").is_some(),
            "the in-line bench needs root; run as root or set SG_INLINE_SKIP_ROOT_TESTS=1"
        );
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_streamgauge"))
        .args([
            "inline",
            "bench",
            "--test-run",
            "--rounds",
            "2",
            "--mode",
            "both",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .filter(|l| l.starts_with("| source |") || l.starts_with("| sink |"))
        .map(|l| l.split('|').map(str::trim).collect())
        .collect();
    let names: Vec<String> = rows.iter().map(|r| format!("{} {}", r[1], r[2])).collect();
    assert_eq!(
        names,
        [
            "source empty program",
            "source header only",
            "source measurement floor",
            "source source, loaded settings",
            "source source, after a live change",
            "sink empty program",
            "sink header only",
            "sink measurement floor",
            "sink sink",
        ],
        "{stdout}"
    );
    for r in &rows {
        let ns: f64 = r[3].parse().unwrap();
        assert!(ns > 0.0 && ns < 1_000_000.0, "{r:?}");
        if r[2] != "empty program" {
            // Every other program is compared with the empty one.
            let above: f64 = r[5].parse().unwrap();
            assert!(above.abs() < 1_000_000.0, "{r:?}");
        }
    }
    // Traffic options do not mix with test runs.
    let refused = Command::new(env!("CARGO_BIN_EXE_streamgauge"))
        .args(["inline", "bench", "--test-run", "--tcp"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("cannot be used with"));
}

/// The budgets table of a same-core run with both sink hooks: every
/// budget once, each with a figure and a verdict, a calibration row for
/// every budget not met, and a summary that counts them all.
fn assert_budgets_judged(stdout: &str) {
    let mut budgets = Vec::new();
    for hook in ["tc", "xdp"] {
        let phase = format!("same-core, every packet [{hook} sink]");
        budgets.push(format!("{phase} / header only ≥ 0.97"));
        for side in ["source", "sink"] {
            budgets.push(format!(
                "{phase}: {side} BPF ns above header only (kernel statistics) ≤ 50 ns"
            ));
        }
        budgets.push(format!("same-core, one in 10 [{hook} sink] / off ≥ 0.97"));
    }
    budgets.push("same-core, one in 10, per CPU [tc sink] / off ≥ 0.97".to_owned());
    for side in ["source", "sink"] {
        budgets.push(format!(
            "{side} ns above header only (test runs, no traffic, no statistics) ≤ 50 ns"
        ));
    }
    assert!(
        stdout.contains("| source | source, loaded settings |")
            && stdout.contains("| sink | sink |"),
        "no test-run table:\n{stdout}"
    );
    for t in &budgets {
        let row = stdout
            .lines()
            .find(|l| l.starts_with(&format!("| {t} |")))
            .unwrap_or_else(|| panic!("no budget row {t:?}:\n{stdout}"));
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        // "median (low…high)": the median within its interval.
        let figures: Vec<f64> = cells[2]
            .split(['(', '…', ')', ' '])
            .filter(|w| !w.is_empty())
            .map(|w| w.parse().unwrap_or_else(|_| panic!("{w:?} in {row}")))
            .collect();
        assert_eq!(figures.len(), 3, "{row}");
        assert!(figures.iter().all(|f| f.is_finite()), "{row}");
        assert!(
            figures[1] <= figures[0] && figures[0] <= figures[2],
            "{row}"
        );
        match cells[3] {
            "met" => assert!(cells[5].is_empty(), "{row}"),
            "at floor" | "MISSED" => assert!(!cells[5].is_empty(), "{row}"),
            v => panic!("verdict {v:?} in {row}"),
        }
        assert!(["yes", "no"].contains(&cells[4]), "{row}");
    }
    let summary = stdout
        .lines()
        .find(|l| l.contains(" budget(s) met, "))
        .unwrap_or_else(|| panic!("no summary:\n{stdout}"));
    let (verdicts, undecided) = summary.split_once(';').unwrap();
    let total: usize = verdicts
        .split(|c: char| !c.is_ascii_digit())
        .filter(|w| !w.is_empty())
        .map(|w| w.parse::<usize>().unwrap())
        .sum();
    assert_eq!(total, budgets.len(), "{summary}");
    let undecided: usize = undecided.trim().split(' ').next().unwrap().parse().unwrap();
    assert!(undecided <= total, "{summary}");
}
