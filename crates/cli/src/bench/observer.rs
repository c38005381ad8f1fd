//! `streamgauge bench observer`: its flags and help; the benchmark is
//! `benchmarks::observer`.

use anyhow::Result;
use benchmarks::observer::{Options, Target};
use clap::{Args, ValueEnum};

/// Long help of `streamgauge bench observer`.
pub const LONG_ABOUT: &str = include_str!("../../help/bench-observer.txt");

/// Where the instrumented sender reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TargetArg {
    /// A streamgauge server in this process (SQLite).
    Server,
    /// A binary file in a temporary directory.
    File,
}

/// Arguments of `streamgauge bench observer`.
#[derive(Debug, Args)]
pub struct ObserverArgs {
    /// Seconds per round.
    #[arg(long, value_name = "S", default_value_t = 2.0)]
    pub seconds: f64,
    /// Rounds of each kind (uninstrumented, instrumented), alternating.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub rounds: usize,
    /// UDP payload bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 64)]
    pub size: usize,
    /// Where the instrumented sender reports.
    #[arg(long, value_name = "TARGET", default_value = "server")]
    pub target: TargetArg,
    /// Print the results as JSON.
    #[arg(long)]
    pub json: bool,
}

impl ObserverArgs {
    fn options(&self) -> Options {
        Options {
            seconds: self.seconds,
            rounds: self.rounds,
            size: self.size,
            target: match self.target {
                TargetArg::Server => Target::Server,
                TargetArg::File => Target::File,
            },
        }
    }
}

/// Runs the benchmark and prints the results; false if a packet was lost.
pub fn run(args: &ObserverArgs) -> Result<bool> {
    let report = benchmarks::observer::run(&args.options())?;
    if args.json {
        println!("{}", report.json());
    } else {
        print!("{}", report.table());
    }
    Ok(report.lossless())
}
