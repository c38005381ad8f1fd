//! `streamgauge bench server`: its help and output; the flags and the
//! benchmark are `benchmarks::server`.

use anyhow::Result;
use clap::Args;

/// Long help of `streamgauge bench server`.
pub const LONG_ABOUT: &str = include_str!("../../help/bench-server.txt");

/// Arguments of `streamgauge bench server`.
#[derive(Debug, Args)]
pub struct ServerBenchArgs {
    #[command(flatten)]
    options: benchmarks::server::Options,
    /// Print the results as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs every scenario and prints the results.
pub fn run(args: &ServerBenchArgs) -> Result<bool> {
    let report = benchmarks::server::run(&args.options)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report.json())?);
    } else {
        print!("{}", report.table());
    }
    Ok(true)
}
