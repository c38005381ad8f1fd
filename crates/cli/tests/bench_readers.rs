//! `streamgauge bench readers`: small runs on SQLite and on a throwaway
//! PostgreSQL cluster complete, and every live-tail subscriber receives
//! every row of every loaded round (timings are not checked).

#![cfg(feature = "bench")]

use std::process::Command;

/// Runs the bench with `extra` flags; returns the `events` column of each
/// measured pair.
fn events_per_pair(extra: &[&str]) -> Vec<u64> {
    let out = Command::new(env!("CARGO_BIN_EXE_streamgauge"))
        .args(["bench", "readers", "--tuples", "20000", "--rounds", "2"])
        .args(["--subscribers", "3", "--latency-seconds", "1"])
        .args(extra)
        .output()
        .expect("running streamgauge");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "bench failed:\n{stdout}\n{stderr}");
    // A panic in a server task does not end the process: look for it.
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stdout.contains("median ratio loaded/alone:"), "{stdout}");
    assert!(stdout.contains("tail latency"), "{stdout}");
    // Pair rows: pair, alone, loaded, ratio, events, queries.
    let pairs: Vec<u64> = stdout
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|w| w.len() == 6 && w[0].parse::<u32>().is_ok())
        .map(|w| w[4].parse().unwrap())
        .collect();
    assert_eq!(pairs.len(), 2, "{stdout}");
    pairs
}

#[test]
fn readers_bench_on_sqlite_delivers_every_row() {
    assert_eq!(events_per_pair(&[]), [20_000, 20_000]);
}

#[test]
fn readers_bench_on_postgres_delivers_every_row() {
    let out = events_per_pair(&["--pg"]);
    assert_eq!(out, [20_000, 20_000]);
}
