//! `streamgauge bench server`: its flags and help; the benchmark is
//! `benchmarks::server`.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Result;
use benchmarks::server::{Options, PgServer};
use clap::{Args, ValueEnum};
use omsp::Content;

use crate::server::Backend;

/// Long help of `streamgauge bench server`.
pub const LONG_ABOUT: &str = include_str!("../../help/bench-server.txt");

/// Content types to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ContentArg {
    /// Binary packets.
    Binary,
    /// Tab-separated text lines.
    Text,
}

impl ContentArg {
    fn content(self) -> Content {
        match self {
            ContentArg::Binary => Content::Binary,
            ContentArg::Text => Content::Text,
        }
    }
}

impl std::fmt::Display for ContentArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.content().name())
    }
}

/// Schema presets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PresetArg {
    /// The basic tuple: int32, double, 16-character string.
    Basic,
    /// Numbers only: int32, int64, uint64 (half of them above 2^63), double.
    Numeric,
    /// Eight fields of mixed types, two of them 16-character strings.
    Wide,
}

impl PresetArg {
    fn preset(self) -> benchmarks::Preset {
        match self {
            PresetArg::Basic => benchmarks::Preset::Basic,
            PresetArg::Numeric => benchmarks::Preset::Numeric,
            PresetArg::Wide => benchmarks::Preset::Wide,
        }
    }
}

impl std::fmt::Display for PresetArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.preset().name())
    }
}

/// Arguments of `streamgauge bench server`.
#[derive(Debug, Args)]
pub struct ServerBenchArgs {
    /// Tuples per scenario, shared among its clients.
    #[arg(short = 'n', long, value_name = "N", default_value_t = 1_000_000)]
    pub tuples: u64,
    /// Parallel client connections; one scenario per value.
    #[arg(short = 'c', long, value_name = "N,...", value_delimiter = ',', default_values_t = [1usize, 4])]
    pub clients: Vec<usize>,
    /// Content types; one scenario per value.
    #[arg(long, value_name = "TYPE,...", value_delimiter = ',', default_values_t = [ContentArg::Binary, ContentArg::Text])]
    pub content: Vec<ContentArg>,
    /// Tuple schema.
    #[arg(long, value_name = "PRESET", default_value_t = PresetArg::Basic)]
    pub schema: PresetArg,
    /// Storage back end.
    #[arg(short = 'b', long, value_name = "NAME", default_value = "sqlite")]
    pub backend: Backend,
    /// PostgreSQL: start a throwaway cluster for the run (as root, it runs
    /// as user postgres).
    #[arg(long, conflicts_with_all = ["pg_host", "pg_port", "pg_user", "pg_pass"])]
    pub pg_temp: bool,
    /// PostgreSQL host [default: localhost].
    #[arg(long, value_name = "HOST")]
    pub pg_host: Option<String>,
    /// PostgreSQL port [default: 5432].
    #[arg(long, value_name = "PORT")]
    pub pg_port: Option<u16>,
    /// PostgreSQL user, with CREATEDB [default: oml].
    #[arg(long, value_name = "USER")]
    pub pg_user: Option<String>,
    /// PostgreSQL password.
    #[arg(long, value_name = "PASS")]
    pub pg_pass: Option<String>,
    /// PostgreSQL: rows of the one-INSERT-per-row reference; 0 skips it.
    #[arg(long, value_name = "N", default_value_t = 5_000)]
    pub insert_sample: u64,
    /// Use the server at this address instead of starting one in-process.
    #[arg(long, value_name = "HOST:PORT")]
    pub addr: Option<SocketAddr>,
    /// Data directory of the --addr SQLite server, to count and check its
    /// rows (without it only the send time is measured; with PostgreSQL
    /// the rows are checked through the --pg-* server).
    #[arg(long, value_name = "DIR", requires = "addr")]
    pub db: Option<PathBuf>,
    /// Rows per transaction of the raw limit (inserts or COPY).
    #[arg(long, value_name = "N", default_value_t = 50_000)]
    pub raw_batch: usize,
    /// Skip the raw limit.
    #[arg(long)]
    pub no_raw: bool,
    /// Compare the stored values of every N-th tuple with what was sent.
    #[arg(long, value_name = "N", default_value_t = 997)]
    pub check_every: u64,
    /// Installation prefix of the reference OML suite, whose
    /// bin/oml2-server is measured after ours in every scenario (same
    /// rows, same replay; the count is checked) [default:
    /// ~/.cache/oml-reference]. Not with --addr.
    #[arg(long, value_name = "PREFIX")]
    pub reference: Option<PathBuf>,
    /// Do not measure the reference oml2-server.
    #[arg(long)]
    pub no_reference: bool,
    /// Tuples sent to the reference server per scenario [default: --tuples
    /// on SQLite; 20000 on PostgreSQL, where it stores one synchronous
    /// INSERT per row].
    #[arg(long, value_name = "N")]
    pub reference_tuples: Option<u64>,
    /// Print the results as JSON.
    #[arg(long)]
    pub json: bool,
}

impl ServerBenchArgs {
    fn options(&self) -> Options {
        Options {
            tuples: self.tuples,
            clients: self.clients.clone(),
            content: self.content.iter().map(|c| c.content()).collect(),
            schema: self.schema.preset(),
            backend: match self.backend {
                Backend::Sqlite => benchmarks::server::Backend::Sqlite,
                Backend::Postgresql => benchmarks::server::Backend::Postgresql,
            },
            pg: PgServer {
                temp: self.pg_temp,
                host: self.pg_host.clone(),
                port: self.pg_port,
                user: self.pg_user.clone(),
                pass: self.pg_pass.clone(),
            },
            insert_sample: self.insert_sample,
            addr: self.addr,
            db: self.db.clone(),
            raw_batch: self.raw_batch,
            no_raw: self.no_raw,
            check_every: self.check_every,
            reference: self.reference.clone(),
            no_reference: self.no_reference,
            reference_tuples: self.reference_tuples,
        }
    }
}

/// Runs every scenario and prints the results.
pub fn run(args: &ServerBenchArgs) -> Result<bool> {
    let report = benchmarks::server::run(&args.options())?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report.json())?);
    } else {
        print!("{}", report.table());
    }
    Ok(true)
}
