//! `streamgauge bench readers`: its help; the flags and the benchmark are
//! `benchmarks::readers`.

use anyhow::Result;

/// Long help of `streamgauge bench readers`.
pub const LONG_ABOUT: &str = include_str!("../../help/bench-readers.txt");

/// Arguments of `streamgauge bench readers`.
pub type ReadersArgs = benchmarks::readers::Options;

/// Runs the benchmark; it prints the results as they come.
pub fn run(a: &ReadersArgs) -> Result<bool> {
    benchmarks::readers::run(a)?;
    Ok(true)
}
