//! The C benchmark programs of `bench/` (run by `streamgauge bench
//! c-inject` and `bench c-observer`) compile strictly against our headers
//! and run, briefly, to completion with every sample written. No timing is
//! asserted: the benchmarks print the figures.

mod common;

use common::{check_ok, compile, decode, run, Link};

/// The value of `key=` in the program's `tag` lines.
fn values(stdout: &str, tag: &str, key: &str) -> Vec<u64> {
    stdout
        .lines()
        .filter(|l| l.starts_with(tag))
        .flat_map(|l| l.split_whitespace())
        .filter_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
        .map(|v| v.parse().expect("a number"))
        .collect()
}

#[test]
fn inject_bench_bursts_and_sustained() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(
        "../../bench/inject_bench.c",
        dir.path(),
        "inject_bench",
        Link::Shared,
    );
    for (mode, enc, threads) in [
        ("burst", "--oml-binary", "2"),
        ("sustained", "--oml-text", "1"),
    ] {
        let file = format!("{mode}.omsp");
        let out = run(
            &exe,
            &[
                "--oml-collect",
                &format!("file:{file}"),
                enc,
                "--threads",
                threads,
                "--mode",
                mode,
                "--bursts",
                "3",
                "--burst-size",
                "100",
                "--pause-us",
                "1000",
                "--millis",
                "50",
            ],
            dir.path(),
        );
        check_ok(&out);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(values(&stdout, "result", "failures"), [0], "{stdout}");
        let calls = values(&stdout, "result", "calls")[0];
        let bytes = std::fs::read(dir.path().join(&file)).unwrap();
        // The warm-up burst (100 per thread) is not counted in `calls`.
        let warmup = 100 * threads.parse::<u64>().unwrap();
        assert_eq!(
            decode(&bytes).rows("cbench_inject").len() as u64,
            calls + warmup
        );
    }
}

#[test]
fn udp_observer_reports_every_packet() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(
        "../../bench/udp_observer.c",
        dir.path(),
        "udp_observer",
        Link::Shared,
    );
    let out = run(
        &exe,
        &[
            "--oml-collect",
            "file:obs.omsp",
            "--rounds",
            "1",
            "--millis",
            "100",
        ],
        dir.path(),
    );
    check_ok(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let sent = values(&stdout, "round", "sent");
    assert_eq!(sent.len(), 2, "{stdout}");
    let reported = values(&stdout, "reported", "reported")[0];
    assert_eq!(reported, sent[1]);
    let bytes = std::fs::read(dir.path().join("obs.omsp")).unwrap();
    assert_eq!(
        decode(&bytes).rows("observer_udp_tx").len() as u64,
        reported
    );
}
