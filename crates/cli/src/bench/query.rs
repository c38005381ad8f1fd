//! `streamgauge bench query`: its flags and help; the benchmark is
//! `benchmarks::query`.

use anyhow::Result;
use benchmarks::query::Options;
use clap::Args;

/// Long help of `streamgauge bench query`.
pub const LONG_ABOUT: &str = include_str!("../../help/bench-query.txt");

/// Arguments of `streamgauge bench query`.
#[derive(Debug, Args)]
pub struct QueryBenchArgs {
    /// Rows of the generated stream.
    #[arg(short = 'n', long, value_name = "N", default_value_t = 10_000_000)]
    pub rows: u64,
    /// Points of the downsampled query.
    #[arg(long, value_name = "N", default_value_t = 2000)]
    pub points: u32,
    /// Repetitions of the downsampled query (the median is reported).
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub repeat: usize,
    /// SQLite only.
    #[arg(long)]
    pub no_pg: bool,
    /// Also time the exact M4 query (slow: about ten scans of the stream).
    #[arg(long)]
    pub exact: bool,
    /// Rows appended once the tiles exist, to time their catch-up (0: skip).
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    pub append: u64,
}

/// Generates the stream, measures, prints the report.
pub fn run(a: &QueryBenchArgs) -> Result<bool> {
    let report = benchmarks::query::run(&Options {
        rows: a.rows,
        points: a.points,
        repeat: a.repeat,
        no_pg: a.no_pg,
        exact: a.exact,
        append: a.append,
    })?;
    println!("{report}");
    Ok(true)
}
