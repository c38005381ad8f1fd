//! `streamgauge bench server`: small runs (a throwaway PostgreSQL cluster
//! the bench starts itself, and SQLite) store every tuple exactly (zero
//! loss; timings are not checked), and the reference oml2-server is
//! measured in the same run on the same workload.

#![cfg(feature = "bench")]

use std::process::Command;

/// Runs `bench server ARGS --json` with the reference suite and returns
/// its one scenario.
fn bench(args: &[&str]) -> serde_json::Value {
    let Some(reference) = testkit::oml_reference() else {
        panic!("the reference OML suite is needed (testkit reports why)");
    };
    let out = Command::new(env!("CARGO_BIN_EXE_streamgauge"))
        .args(["bench", "server"])
        .args(args)
        .args([
            "-c",
            "1",
            "--content",
            "binary",
            "--raw-batch",
            "5000",
            "--json",
        ])
        .arg("--reference")
        .arg(reference)
        .output()
        .expect("running streamgauge");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "bench failed:\n{stderr}");
    let report: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    let scenarios = report["scenarios"].as_array().expect("scenarios");
    assert_eq!(scenarios.len(), 1);
    let s = scenarios[0].clone();
    assert_eq!(s["scenario"], "binary x1");
    s
}

#[test]
fn small_postgres_bench_loses_nothing() {
    let s = bench(&[
        "--backend",
        "postgresql",
        "--pg-temp",
        "-n",
        "20000",
        "--insert-sample",
        "100",
        "--reference-tuples",
        "2000",
    ]);
    assert_eq!(s["rows"], 20_000);
    // The bench fails unless the count, every sequence number and the
    // sampled values are exact; these say the check ran.
    assert_eq!(s["verified"], true);
    assert_eq!(s["checked_rows"], 21, "every 997th of 0..20000");
    assert!(s["raw_rows_per_s"].as_f64().is_some_and(|r| r > 0.0));
    assert_eq!(s["row_insert_sample"], 100);
    // The bench fails unless the reference stored all 2000 rows.
    assert_eq!(s["reference_rows"], 2000);
    assert!(s["reference_rows_per_s"].as_f64().is_some_and(|r| r > 0.0));
    assert!(s["ratio_to_reference"].as_f64().is_some_and(|r| r > 0.0));
}

#[test]
fn small_sqlite_bench_measures_the_reference_beside_ours() {
    let s = bench(&["-n", "30000"]);
    assert_eq!(s["rows"], 30_000);
    assert_eq!(s["verified"], true);
    assert_eq!(s["reference_rows"], 30_000, "the whole workload by default");
    assert!(s["reference_rows_per_s"].as_f64().is_some_and(|r| r > 0.0));
}
