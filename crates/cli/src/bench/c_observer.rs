//! `streamgauge bench c-observer`: its help; the flags and the benchmark
//! are `benchmarks::c_observer`.

use anyhow::Result;

/// Long help of `streamgauge bench c-observer`.
pub const LONG_ABOUT: &str = include_str!("../../help/bench-c_observer.txt");

/// Arguments of `streamgauge bench c-observer`.
pub type CObserverArgs = benchmarks::c_observer::Options;

/// Runs the benchmark; it prints each library's results.
pub fn run(a: &CObserverArgs) -> Result<bool> {
    benchmarks::c_observer::run(a)
}
