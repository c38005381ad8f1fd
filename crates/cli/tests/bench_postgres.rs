//! `streamgauge bench server --backend postgresql --pg-temp`: a small run
//! against a throwaway cluster the bench starts itself stores every tuple
//! exactly (zero loss; timings are not checked).

use std::process::Command;

#[test]
fn small_postgres_bench_loses_nothing() {
    let out = Command::new(env!("CARGO_BIN_EXE_streamgauge"))
        .args(["bench", "server", "--backend", "postgresql", "--pg-temp"])
        .args(["-n", "20000", "-c", "1", "--content", "binary"])
        .args(["--raw-batch", "5000", "--insert-sample", "100", "--json"])
        .output()
        .expect("running streamgauge");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "bench failed:\n{stderr}");
    let report: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    assert_eq!(report["backend"], "postgresql");
    let scenarios = report["scenarios"].as_array().expect("scenarios");
    assert_eq!(scenarios.len(), 1);
    let s = &scenarios[0];
    assert_eq!(s["scenario"], "binary x1");
    assert_eq!(s["rows"], 20_000);
    // The bench fails unless the count, every sequence number and the
    // sampled values are exact; these say the check ran.
    assert_eq!(s["verified"], true);
    assert_eq!(s["checked_rows"], 21, "every 997th of 0..20000");
    assert!(s["raw_rows_per_s"].as_f64().is_some_and(|r| r > 0.0));
    assert_eq!(s["row_insert_sample"], 100);
}
