//! `streamgauge bench readers`: small runs on SQLite and on a throwaway
//! PostgreSQL cluster complete, and every live-tail subscriber receives
//! every row of every loaded round (timings are not checked).

#![cfg(feature = "bench")]

use std::process::Command;

/// Runs the bench with `extra` flags; returns, for each measured pair,
/// the `events` column and the rows the tails took from the writer's
/// commits and read from the table.
fn events_per_pair(extra: &[&str]) -> Vec<(u64, u64, u64)> {
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
    // Pair rows: pair, alone, loaded, ratio, events, queries, tail taken,
    // tail read.
    let pairs: Vec<(u64, u64, u64)> = stdout
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|w| w.len() == 8 && w[0].parse::<u32>().is_ok())
        .map(|w| {
            let n = |i: usize| w[i].parse::<u64>().unwrap();
            (n(4), n(6), n(7))
        })
        .collect();
    assert_eq!(pairs.len(), 2, "{stdout}");
    // Every row reached the tails from the commits or from the table (the
    // shared reader's reads, once for all subscribers).
    for &(events, taken, read) in &pairs {
        assert!(taken + read >= events, "{stdout}");
    }
    pairs
}

#[test]
fn readers_bench_on_sqlite_delivers_every_row() {
    let out = events_per_pair(&[]);
    assert_eq!(
        out.iter().map(|p| p.0).collect::<Vec<_>>(),
        [20_000, 20_000]
    );
    // SQLite: no rows are handed over, the tails read them all.
    assert!(out.iter().all(|p| p.1 == 0), "{out:?}");
}

#[test]
fn readers_bench_on_postgres_delivers_every_row() {
    let out = events_per_pair(&["--pg"]);
    assert_eq!(
        out.iter().map(|p| p.0).collect::<Vec<_>>(),
        [20_000, 20_000]
    );
}

#[test]
fn idle_spinners_run_beside_the_readers() {
    let out = events_per_pair(&["--idle-spinners", "2", "--query-every", "off"]);
    assert_eq!(
        out.iter().map(|p| p.0).collect::<Vec<_>>(),
        [20_000, 20_000]
    );
}
