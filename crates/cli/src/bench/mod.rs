//! `streamgauge bench`: system benchmarks that compare a component with the
//! physical limit (or the reference) measured in the same run.

mod observer;
mod pg;
mod pg_raw;
mod pg_verify;
mod raw;
mod replay;
mod report;
mod server;
mod verify;
mod workload;

use anyhow::Result;
use clap::{Args, Subcommand};

/// Arguments of `streamgauge bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    which: Which,
}

#[derive(Debug, Subcommand)]
enum Which {
    /// Collection-server ingest rate into SQLite or PostgreSQL vs the raw
    /// insert (SQLite) or COPY (PostgreSQL) rate.
    #[command(long_about = server::LONG_ABOUT)]
    Server(server::ServerBenchArgs),
    /// What reporting every packet costs a UDP sender (the observer effect),
    /// against the same sender uninstrumented.
    #[command(long_about = observer::LONG_ABOUT)]
    Observer(observer::ObserverArgs),
}

/// Runs the chosen benchmark.
pub fn run(args: &BenchArgs) -> Result<bool> {
    match &args.which {
        Which::Server(a) => server::run(a),
        Which::Observer(a) => observer::run(a),
    }
}
