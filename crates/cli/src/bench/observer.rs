//! `streamgauge bench observer`: its flags and help; the benchmark is
//! `benchmarks::observer`.

use anyhow::Result;
use benchmarks::observer::{Options, Target};
use clap::{Args, ValueEnum};

/// Long help of `streamgauge bench observer`.
pub const LONG_ABOUT: &str = "\
Measure what reporting every packet costs a UDP sender.

A sender thread sends --size-byte datagrams over loopback as fast as it
can, to a receiver thread that counts them, for --seconds per round. Rounds
alternate: uninstrumented, then instrumented (the same loop plus one
Mp::inject per packet: sequence number and size), --rounds times each, so
that drift and noise hit both alike. The instrumented sender reports to
--target: a streamgauge server started in this process on loopback
(SQLite in a temporary directory, the client's default options: binary,
block with a 1 s stall limit, 64 MiB), or a file.

Reported: packets/s of every round, the median of each kind, and the ratio
instrumented / uninstrumented (target: 0.95 or more). Then the zero-loss
check: the client closes, and the rows stored (or written) must equal the
packets reported, with no drop counted.

On a 2-core machine the client's writer thread, the server and the
receiver share the cores with the sender, so the ratio includes their
competition for CPU, not only the cost of inject itself.";

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
