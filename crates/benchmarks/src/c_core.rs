//! The Rust core measured exactly as `inject_bench.c` measures liboml2: the
//! same sample, bursts, pauses, clock reads and statistic, with
//! `Mp::inject` instead of `omlc_inject`. It gives `bench c-inject` the
//! figure the C path is compared with (it should be as fast as the Rust
//! core), in the same run.

use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use client::{Client, Mp};
use omsp::{OmlType, ValueRef};

/// How to inject (the C program's options).
pub struct Plan {
    pub threads: u32,
    pub sustained: bool,
    pub bursts: u32,
    pub burst_size: u32,
    pub pause: Duration,
    pub length: Duration,
}

/// Runs `plan` with a client configured by `oml_args` (`--oml-*` options);
/// returns the median ns per inject over all bursts of all threads (over
/// threads when sustained), as `inject_bench.c` prints it.
pub fn run(plan: &Plan, oml_args: &[String]) -> Result<f64> {
    let mut argv = vec!["cbench".to_owned()];
    argv.extend(oml_args.iter().cloned());
    let parsed =
        client::config::args::parse("cbench", &mut argv, &|_| None, "2026-01-01t00.00.00+0000")?;
    let client::config::args::Outcome::Run(spec) = parsed.outcome else {
        bail!("unexpected client configuration outcome");
    };
    let client = Client::new(spec)?;
    let mp = client.add_mp(
        "inject",
        &[
            ("i", OmlType::Int32),
            ("x", OmlType::Double),
            ("label", OmlType::String),
        ],
    )?;
    client.start()?;
    let figures = std::thread::scope(|s| {
        let workers: Vec<_> = (0..plan.threads)
            .map(|_| s.spawn(|| worker(plan, &mp)))
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().unwrap_or_else(|_| Ok(Vec::new())))
            .collect::<Result<Vec<_>>>()
    })?;
    client.close()?;
    let all: Vec<f64> = figures.into_iter().flatten().collect();
    Ok(crate::c_common::stats(&all).0)
}

/// One thread: warm-up burst, then bursts or a sustained run.
fn worker(plan: &Plan, mp: &Mp) -> Result<Vec<f64>> {
    let burst = |n: u32, base: u64| -> Result<()> {
        for i in 0..u64::from(n) {
            let k = base + i;
            let values = [
                ValueRef::Int32(k as i32),
                ValueRef::Double(k as f64 * 0.5),
                ValueRef::String("sixteen-chars-ab"),
            ];
            // Opaque, as an array a C program fills is to the library:
            // otherwise the inlined inject is specialised for these types
            // and this string length, which no call through the C ABI gets.
            mp.inject(std::hint::black_box(&values))?;
        }
        Ok(())
    };
    burst(plan.burst_size, 0)?;
    std::thread::sleep(plan.pause);
    let mut n = 0u64;
    if plan.sustained {
        let t0 = Instant::now();
        while t0.elapsed() < plan.length {
            burst(1024, n)?;
            n += 1024;
        }
        return Ok(vec![t0.elapsed().as_nanos() as f64 / n as f64]);
    }
    let mut figures = Vec::with_capacity(plan.bursts as usize);
    for _ in 0..plan.bursts {
        let t0 = Instant::now();
        burst(plan.burst_size, n)?;
        figures.push(t0.elapsed().as_nanos() as f64 / f64::from(plan.burst_size));
        n += u64::from(plan.burst_size);
        std::thread::sleep(plan.pause);
    }
    Ok(figures)
}
