//! `streamgauge bench query`: the query API's downsampling and export
//! speed on a large stream, in SQLite and PostgreSQL, against the
//! databases' own CSV dumps (see `query::bench`).

use anyhow::{Context, Result};
use clap::Args;

pub const LONG_ABOUT: &str = "\
Measure the query API on a generated stream (v:double n:int64 u:uint64,
one sender) of --rows rows, in SQLite and in a throwaway PostgreSQL
cluster (as root it runs as user postgres; --no-pg skips it), in one run:

  - the points=2000 downsampled query (M4 from pre-aggregated tiles):
    the first one, which builds the tiles (one scan), then the median of
    --repeat; with --exact also the exact M4 computed by the database
    (tiles=false, checked to give the same answer; about ten scans);
  - --append rows added afterwards and the next downsampled query, which
    folds them into the tiles;
  - one plain scan of the rows (the floor of any exact answer);
  - full exports through the API's writers: Arrow IPC, JSON, CSV;
  - the database's own CSV dump of the same rows (sqlite3 -csv,
    COPY ... TO STDOUT) as the reference, with the Arrow ratio to it.";

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
pub fn run(args: &QueryBenchArgs) -> Result<bool> {
    let dir = tempfile::tempdir().context("creating a temporary directory")?;
    let mut opts = query::bench::BenchOptions::new(dir.path().to_owned());
    opts.rows = args.rows;
    opts.points = args.points;
    opts.repeat = args.repeat.max(1);
    opts.exact = args.exact;
    opts.append = args.append;
    let cluster = if args.no_pg {
        None
    } else {
        let c = pgtemp::Cluster::start().context("starting a throwaway PostgreSQL cluster")?;
        c.watch_process(std::process::id())
            .context("watching the PostgreSQL cluster")?;
        Some(c)
    };
    opts.pg = cluster.as_ref().map(|c| store::PgOptions {
        host: "127.0.0.1".into(),
        port: c.port,
        user: "oml".into(),
        ..store::PgOptions::default()
    });
    let report = query::bench::run(&opts).context("query benchmark")?;
    println!("{report}");
    Ok(true)
}
