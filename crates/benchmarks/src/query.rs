//! The query API's downsampling and export speed on a large stream, in
//! SQLite and in a throwaway PostgreSQL cluster, against the databases'
//! own CSV dumps (`streamgauge bench query`; the measurement itself is
//! `query::bench`).

use anyhow::{Context, Result};

/// What to measure (`streamgauge bench query --help` describes each).
#[derive(Debug, Clone)]
pub struct Options {
    /// Rows of the generated stream.
    pub rows: u64,
    /// Points of the downsampled query.
    pub points: u32,
    /// Repetitions of the downsampled query (the median is reported).
    pub repeat: usize,
    /// SQLite only: no PostgreSQL cluster.
    pub no_pg: bool,
    /// Also time the exact M4 query.
    pub exact: bool,
    /// Rows appended once the tiles exist, to time their catch-up (0: skip).
    pub append: u64,
}

/// Generates the stream (in a temporary directory, and in a throwaway
/// PostgreSQL cluster unless `no_pg`) and measures; returns the report.
pub fn run(args: &Options) -> Result<::query::bench::BenchReport> {
    let dir = tempfile::tempdir().context("creating a temporary directory")?;
    let mut opts = ::query::bench::BenchOptions::new(dir.path().to_owned());
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
    ::query::bench::run(&opts).context("query benchmark")
}
