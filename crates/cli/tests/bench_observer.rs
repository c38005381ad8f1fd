//! `streamgauge bench observer` runs end to end: both kinds of rounds, and
//! every packet reported by the instrumented sender is stored.

#![cfg(feature = "bench")]

use std::process::Command;

fn run(target: &str) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_streamgauge"))
        .args([
            "bench",
            "observer",
            "--rounds",
            "1",
            "--seconds",
            "0.3",
            "--json",
        ])
        .args(["--target", target])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn every_reported_packet_is_stored() {
    for target in ["server", "file"] {
        let v = run(target);
        assert_eq!(v["rounds"].as_array().unwrap().len(), 2, "{v}");
        assert!(v["median_plain"].as_f64().unwrap() > 0.0, "{v}");
        assert!(v["ratio"].as_f64().unwrap() > 0.0, "{v}");
        let reported = v["reported"].as_u64().unwrap();
        assert!(reported > 0, "{v}");
        assert_eq!(v["stored"].as_u64().unwrap(), reported, "{v}");
        assert_eq!(v["dropped"].as_u64().unwrap(), 0, "{v}");
        assert_eq!(v["lossless"], true);
    }
}

#[test]
fn bad_arguments_are_refused() {
    let out = Command::new(env!("CARGO_BIN_EXE_streamgauge"))
        .args(["bench", "observer", "--size", "2"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--size"));
}
