//! `streamgauge bench c-inject`: its help; the flags and the benchmark are
//! `benchmarks::c_inject`.

use anyhow::Result;

/// Long help of `streamgauge bench c-inject`.
pub const LONG_ABOUT: &str = include_str!("../../help/bench-c_inject.txt");

/// Arguments of `streamgauge bench c-inject`.
pub type CInjectArgs = benchmarks::c_inject::Options;

/// Runs the benchmark; it prints one line per configuration.
pub fn run(args: &CInjectArgs) -> Result<bool> {
    benchmarks::c_inject::run(args)
}
