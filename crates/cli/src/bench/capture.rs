//! `streamgauge bench capture`: its flags and help; the benchmark is
//! `benchmarks::capture`.

use anyhow::Result;
use clap::Args;

/// Long help of `streamgauge bench capture`.
pub const LONG_ABOUT: &str = include_str!("../../help/bench-capture.txt");

/// Arguments of `streamgauge bench capture`.
#[derive(Debug, Args)]
pub struct CaptureBenchArgs {
    /// Seconds the generator runs per case and frame size.
    #[arg(long, value_name = "SECONDS", default_value_t = 3)]
    pub seconds: u64,
}

/// Runs every case; one line is printed per run.
pub fn run(args: &CaptureBenchArgs) -> Result<bool> {
    benchmarks::capture::run(args.seconds)?;
    Ok(true)
}
