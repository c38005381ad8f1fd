//! `streamgauge export`: any stream of an experiment's database to CSV,
//! JSON lines, Parquet or Arrow IPC. Thin glue over `query::export`, the
//! readers and writers the HTTP query API uses too, so both give the same
//! data.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use indicatif::ProgressBar;
use query::export::job::{self, Job, Progress};
use query::export::Source;

pub const LONG_ABOUT: &str = include_str!("../../help/export.txt");

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Comma-separated values with a header row (RFC 4180 quoting).
    Csv,
    /// One JSON object per row.
    Jsonl,
    /// Apache Parquet (Snappy-compressed).
    Parquet,
    /// Apache Arrow IPC stream.
    Arrow,
}

/// Arguments of `streamgauge export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The experiment's database: a .sq3 file or a PostgreSQL connection.
    #[arg(value_name = "SOURCE")]
    source: String,
    /// Stream table to export (repeatable); see --list.
    #[arg(short, long = "table", value_name = "TABLE")]
    tables: Vec<String>,
    /// Export every stream table.
    #[arg(short, long, conflicts_with = "tables")]
    all: bool,
    /// List the stream tables with their row counts and exit.
    #[arg(short, long, conflicts_with_all = ["tables", "all"])]
    list: bool,
    /// Output format [default: from -o's extension, else csv].
    #[arg(short, long, value_name = "FORMAT")]
    format: Option<Format>,
    /// Output file (one table) or directory (several); - is standard output.
    #[arg(short, long, value_name = "PATH")]
    output: Option<PathBuf>,
    /// Keep oml_ts_client and oml_ts_server as seconds since start_time.
    #[arg(long)]
    raw_timestamps: bool,
}

/// Runs the export.
pub fn run(args: &ExportArgs) -> Result<bool> {
    let mut src = Source::open(&args.source).with_context(|| format!("opening {}", args.source))?;
    if args.list {
        for (name, rows, fields) in job::list(&mut src)? {
            println!("{name}\t{rows} rows\t{fields}");
        }
        return Ok(true);
    }
    let job = Job {
        tables: args.tables.clone(),
        all: args.all,
        format: args.format.map(|f| match f {
            Format::Csv => job::Format::Csv,
            Format::Jsonl => job::Format::Jsonl,
            Format::Parquet => job::Format::Parquet,
            Format::Arrow => job::Format::Arrow,
        }),
        output: args.output.clone(),
        raw_timestamps: args.raw_timestamps,
    };
    job::run(&mut src, &job, &mut Bar(ProgressBar::hidden()))?;
    Ok(true)
}

/// A progress bar for tables of 100,000 rows or more.
struct Bar(ProgressBar);

impl Progress for Bar {
    fn start(&mut self, table: &str, total: u64) {
        self.0 = match total {
            0..100_000 => ProgressBar::hidden(),
            _ => crate::progress::bar(total, "{prefix} [{bar:30}] {pos}/{len} rows {eta}", table),
        };
    }

    fn rows(&mut self, rows: u64) {
        self.0.set_position(rows);
    }

    fn done(&mut self, table: &str, rows: u64, to: Option<&Path>) {
        self.0.finish_and_clear();
        if let Some(p) = to {
            eprintln!("{table}: {rows} rows -> {}", p.display());
        }
    }
}
