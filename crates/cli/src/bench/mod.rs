//! `streamgauge bench`: system benchmarks that compare a component with the
//! physical limit (or the reference) measured in the same run. The flags
//! and help live here; the benchmarks are the `benchmarks` library, linked
//! only with the `bench` feature (on by default).

mod c_inject;
mod c_observer;
mod capture;
mod observer;
mod query;
mod readers;
mod server;

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
    /// Ingestion rate while live tails and downsampled queries read the
    /// same stream, against ingestion alone; live-tail latency.
    #[command(long_about = readers::LONG_ABOUT)]
    Readers(readers::ReadersArgs),
    /// Live capture at the packet generator's maximum (trafgen over a
    /// veth pair) against tcpdump on the same traffic (root).
    #[command(long_about = capture::LONG_ABOUT)]
    Capture(capture::CaptureBenchArgs),
    /// Query API: downsampled query latency and export throughput on a
    /// large stream, SQLite and PostgreSQL, against the databases' dumps.
    #[command(long_about = query::LONG_ABOUT)]
    Query(query::QueryBenchArgs),
    /// Cost of one omlc_inject in a C program, our liboml2 against the
    /// reference liboml2.
    #[command(long_about = c_inject::LONG_ABOUT)]
    CInject(c_inject::CInjectArgs),
    /// Observer effect on a C UDP sender reporting through liboml2 to a
    /// server in another process.
    #[command(long_about = c_observer::LONG_ABOUT)]
    CObserver(c_observer::CObserverArgs),
}

/// Runs the chosen benchmark.
pub fn run(args: &BenchArgs) -> Result<bool> {
    match &args.which {
        Which::Server(a) => server::run(a),
        Which::Observer(a) => observer::run(a),
        Which::Readers(a) => readers::run(a),
        Which::Capture(a) => capture::run(a),
        Which::Query(a) => query::run(a),
        Which::CInject(a) => c_inject::run(a),
        Which::CObserver(a) => c_observer::run(a),
    }
}
