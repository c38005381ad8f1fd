//! `streamgauge bench c-observer`: its flags and help; the benchmark is
//! `benchmarks::c_observer`.

use anyhow::Result;
use benchmarks::c_observer::Options;
use clap::Args;

use super::c_libs::LibArgs;

/// Long help of `streamgauge bench c-observer`.
pub const LONG_ABOUT: &str = include_str!("../../help/bench-c_observer.txt");

/// Arguments of `streamgauge bench c-observer`.
#[derive(Debug, Args)]
pub struct CObserverArgs {
    /// Seconds per round.
    #[arg(long, value_name = "S", default_value_t = 3.0)]
    pub seconds: f64,
    /// Rounds of each kind (uninstrumented, instrumented), alternating.
    #[arg(long, value_name = "N", default_value_t = 5,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub rounds: u32,
    /// UDP payload bytes (8 to 65000).
    #[arg(long, value_name = "BYTES", default_value_t = 64,
          value_parser = clap::value_parser!(u32).range(8..=65_000))]
    pub size: u32,
    #[command(flatten)]
    pub libs: LibArgs,
}

/// Runs the benchmark; it prints each library's results.
pub fn run(a: &CObserverArgs) -> Result<bool> {
    benchmarks::c_observer::run(&Options {
        seconds: a.seconds,
        rounds: a.rounds,
        size: a.size,
        libs: a.libs.libraries(),
    })
}
