//! `streamgauge export`: any stream of an experiment's database to CSV,
//! JSON lines, Parquet or Arrow IPC. Thin glue over `query::export`, the
//! readers and writers the HTTP query API uses too, so both give the same
//! data.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use indicatif::ProgressBar;
use omsp::Schema;

use query::export::{columns, ArrowWriter, ParquetWriter, Source, TextWriter, Timestamps};

pub const LONG_ABOUT: &str = "\
Export measurement streams from an experiment's database to CSV, JSON lines,
Parquet or Arrow IPC (the same data as the HTTP query API's formats).

SOURCE is an experiment's SQLite file (<domain>.sq3, as written by
`streamgauge server`) or its PostgreSQL database, as a URI
(postgresql://user:pass@host:port/domain) or a key-value string
(\"host=... dbname=<domain> user=...\").

Columns are the table's: oml_tuple_id, oml_sender_id, oml_seq,
oml_ts_client, oml_ts_server, then the stream's fields. The timestamps are
written as UTC instants (the experiment's start_time plus the stored
seconds; RFC 3339 with microseconds in CSV and JSON, TIMESTAMP(MICROS) in
Parquet) unless --raw-timestamps keeps the seconds. uint64 values above
2^63-1, which SQLite keeps as 8-byte blobs, come out as exact unsigned
numbers; blobs are base64 in CSV and JSON. Parquet columns are typed from
the stream's OML schema (uint64 as unsigned INT64, strings as UTF-8).

With one --table, -o names the output file (- or no -o: standard output,
CSV and JSON only). With several --table or --all, -o names a directory
(created if needed) that receives one <table>.<csv|jsonl|parquet> per
stream.";

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

impl Format {
    fn ext(self) -> &'static str {
        match self {
            Format::Csv => "csv",
            Format::Jsonl => "jsonl",
            Format::Parquet => "parquet",
            Format::Arrow => "arrow",
        }
    }
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
    let streams = src.streams()?;
    if args.list {
        for s in &streams {
            println!("{}\t{} rows\t{}", s.name, src.count(&s.name)?, fields(s));
        }
        return Ok(true);
    }
    let chosen: Vec<&Schema> = if args.all {
        streams.iter().collect()
    } else if args.tables.is_empty() {
        bail!(
            "name a stream with --table (or --all); this database has: {}",
            names(&streams)
        );
    } else {
        args.tables
            .iter()
            .map(|t| {
                streams.iter().find(|s| &s.name == t).ok_or_else(|| {
                    anyhow::anyhow!(
                        "no stream table {t:?}; this database has: {}",
                        names(&streams)
                    )
                })
            })
            .collect::<Result<_>>()?
    };
    let format = args.format.unwrap_or_else(|| {
        match args
            .output
            .as_deref()
            .and_then(Path::extension)
            .and_then(|e| e.to_str())
        {
            Some("parquet") => Format::Parquet,
            Some("arrow" | "arrows") => Format::Arrow,
            Some("jsonl" | "json") => Format::Jsonl,
            _ => Format::Csv,
        }
    });
    let times = Timestamps::new(if args.raw_timestamps {
        None
    } else {
        Some(src.start_time()?.context(
            "the database has no start_time: use --raw-timestamps to export the seconds as stored",
        )?)
    });
    let to_stdout =
        args.output.as_deref().is_none() || args.output.as_deref() == Some(Path::new("-"));
    if chosen.len() > 1 || args.all {
        let Some(dir) = args.output.as_deref().filter(|_| !to_stdout) else {
            bail!("several tables: give -o DIRECTORY to receive one file per table");
        };
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        for s in chosen {
            let path = dir.join(format!("{}.{}", s.name, format.ext()));
            export_one(&mut src, s, format, times, Some(&path))?;
        }
    } else if to_stdout {
        if format == Format::Parquet {
            bail!("Parquet cannot go to standard output: give -o FILE.parquet");
        }
        if format == Format::Arrow {
            bail!("Arrow cannot go to standard output: give -o FILE.arrow");
        }
        export_one(&mut src, chosen[0], format, times, None)?;
    } else {
        export_one(&mut src, chosen[0], format, times, args.output.as_deref())?;
    }
    Ok(true)
}

fn names(streams: &[Schema]) -> String {
    if streams.is_empty() {
        return "no stream tables".into();
    }
    streams
        .iter()
        .map(|s| s.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn fields(s: &Schema) -> String {
    s.fields
        .iter()
        .map(|f| format!("{}:{}", f.name, f.ty.name()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Exports one table to `path` (or standard output).
fn export_one(
    src: &mut Source,
    schema: &Schema,
    format: Format,
    times: Timestamps,
    path: Option<&Path>,
) -> Result<()> {
    let total = src.count(&schema.name)?;
    let bar = progress(total, &schema.name);
    let cols = columns(schema);
    let what = path.map_or_else(|| "standard output".to_owned(), |p| p.display().to_string());
    let mut n = 0u64;
    match format {
        Format::Parquet => {
            let path = path.context("Parquet needs an output file")?;
            let file = std::fs::File::create(path).with_context(|| format!("creating {what}"))?;
            let mut w = ParquetWriter::new(file, &cols, times)?;
            src.rows(schema, |cells| {
                n += 1;
                if n.is_multiple_of(4096) {
                    bar.set_position(n);
                }
                w.row(cells)
            })?;
            w.finish().with_context(|| format!("writing {what}"))?;
        }
        Format::Arrow => {
            let path = path.context("Arrow needs an output file")?;
            let file = std::io::BufWriter::new(
                std::fs::File::create(path).with_context(|| format!("creating {what}"))?,
            );
            let mut w = ArrowWriter::new(file, &cols, times)?;
            src.rows(schema, |cells| {
                n += 1;
                if n.is_multiple_of(4096) {
                    bar.set_position(n);
                }
                w.row(cells)
            })?;
            w.finish().with_context(|| format!("writing {what}"))?;
        }
        Format::Csv | Format::Jsonl => {
            let out: Box<dyn Write> = match path {
                Some(p) => Box::new(std::io::BufWriter::new(
                    std::fs::File::create(p).with_context(|| format!("creating {what}"))?,
                )),
                None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
            };
            let mut w = TextWriter::new(out, &cols, times, format == Format::Jsonl)?;
            src.rows(schema, |cells| {
                n += 1;
                if n.is_multiple_of(4096) {
                    bar.set_position(n);
                }
                w.row(cells)
            })
            .with_context(|| format!("writing {what}"))?;
            w.finish()?;
        }
    }
    bar.finish_and_clear();
    if path.is_some() {
        eprintln!("{}: {n} rows -> {what}", schema.name);
    }
    Ok(())
}

fn progress(total: u64, name: &str) -> ProgressBar {
    if total < 100_000 {
        return ProgressBar::hidden();
    }
    crate::progress::bar(total, "{prefix} [{bar:30}] {pos}/{len} rows {eta}", name)
}
