//! An export as `streamgauge export` runs it: some or all stream tables of
//! one database to files (or standard output) in one format, with the
//! caller told about progress.
//!
//! ```no_run
//! use query::export::job::{self, Job, Progress};
//! use query::export::Source;
//!
//! struct Quiet;
//! impl Progress for Quiet {}
//!
//! let mut src = Source::open("exp1.sq3")?;
//! let job = Job {
//!     all: true,
//!     output: Some("out".into()),
//!     ..Job::default()
//! };
//! job::run(&mut src, &job, &mut Quiet)?;
//! # Ok::<(), query::export::ExportError>(())
//! ```

use std::io::Write;
use std::path::{Path, PathBuf};

use omsp::Schema;

use super::{columns, ArrowWriter, ExportError, ParquetWriter, Source, TextWriter, Timestamps};

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Comma-separated values with a header row.
    Csv,
    /// One JSON object per row.
    Jsonl,
    /// Apache Parquet.
    Parquet,
    /// Apache Arrow IPC stream.
    Arrow,
}

impl Format {
    /// The file name extension of the format.
    pub fn ext(self) -> &'static str {
        match self {
            Format::Csv => "csv",
            Format::Jsonl => "jsonl",
            Format::Parquet => "parquet",
            Format::Arrow => "arrow",
        }
    }

    /// The format an output path's extension names; CSV otherwise.
    pub fn from_path(path: Option<&Path>) -> Format {
        match path.and_then(Path::extension).and_then(|e| e.to_str()) {
            Some("parquet") => Format::Parquet,
            Some("arrow" | "arrows") => Format::Arrow,
            Some("jsonl" | "json") => Format::Jsonl,
            _ => Format::Csv,
        }
    }
}

/// What to export (the flags of `streamgauge export`).
#[derive(Debug, Clone, Default)]
pub struct Job {
    /// Stream tables to export.
    pub tables: Vec<String>,
    /// Export every stream table (`tables` is then ignored).
    pub all: bool,
    /// Output format [default: from `output`'s extension, else CSV].
    pub format: Option<Format>,
    /// Output file (one table) or directory (several); `-` or none is
    /// standard output.
    pub output: Option<PathBuf>,
    /// Keep the timestamps as seconds since the experiment's start.
    pub raw_timestamps: bool,
}

/// What the caller hears of a running export (all optional).
pub trait Progress {
    /// A table of `total` rows starts.
    fn start(&mut self, _table: &str, _total: u64) {}
    /// `rows` rows of it are written (called every 4096 rows).
    fn rows(&mut self, _rows: u64) {}
    /// The table is written: `rows` rows to `to` (`None`: standard output).
    fn done(&mut self, _table: &str, _rows: u64, _to: Option<&Path>) {}
}

/// One stream table: its name, row count and `name:type` fields.
pub fn list(src: &mut Source) -> Result<Vec<(String, u64, String)>, ExportError> {
    let streams = src.streams()?;
    let mut out = Vec::with_capacity(streams.len());
    for s in &streams {
        out.push((s.name.clone(), src.count(&s.name)?, fields(s)));
    }
    Ok(out)
}

/// Runs the export; a wrong request (an unknown table, several tables
/// without a directory, a binary format to standard output) is
/// [`ExportError::Invalid`] with what to give instead.
pub fn run(src: &mut Source, job: &Job, progress: &mut dyn Progress) -> Result<(), ExportError> {
    let invalid = |m: String| Err(ExportError::Invalid(m));
    let streams = src.streams()?;
    let chosen: Vec<&Schema> = if job.all {
        streams.iter().collect()
    } else if job.tables.is_empty() {
        return invalid(format!(
            "name a stream with --table (or --all); this database has: {}",
            names(&streams)
        ));
    } else {
        job.tables
            .iter()
            .map(|t| {
                streams.iter().find(|s| &s.name == t).ok_or_else(|| {
                    ExportError::Invalid(format!(
                        "no stream table {t:?}; this database has: {}",
                        names(&streams)
                    ))
                })
            })
            .collect::<Result<_, _>>()?
    };
    let format = job
        .format
        .unwrap_or_else(|| Format::from_path(job.output.as_deref()));
    let times = Timestamps::new(if job.raw_timestamps {
        None
    } else {
        Some(src.start_time()?.ok_or_else(|| {
            ExportError::Invalid(
                "the database has no start_time: use --raw-timestamps to export the seconds as stored"
                    .into(),
            )
        })?)
    });
    let output = job.output.as_deref().filter(|p| *p != Path::new("-"));
    if chosen.len() > 1 || job.all {
        let Some(dir) = output else {
            return invalid(
                "several tables: give -o DIRECTORY to receive one file per table".into(),
            );
        };
        std::fs::create_dir_all(dir).map_err(file("creating", dir))?;
        for s in chosen {
            let path = dir.join(format!("{}.{}", s.name, format.ext()));
            one(src, s, format, times, Some(&path), progress)?;
        }
    } else if output.is_none() && format == Format::Parquet {
        return invalid("Parquet cannot go to standard output: give -o FILE.parquet".into());
    } else if output.is_none() && format == Format::Arrow {
        return invalid("Arrow cannot go to standard output: give -o FILE.arrow".into());
    } else {
        one(src, chosen[0], format, times, output, progress)?;
    }
    Ok(())
}

/// Names an I/O error with what was done to which file.
fn file(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> ExportError {
    let path = path.to_path_buf();
    move |source| ExportError::File {
        action,
        path,
        source,
    }
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
fn one(
    src: &mut Source,
    schema: &Schema,
    format: Format,
    times: Timestamps,
    path: Option<&Path>,
    progress: &mut dyn Progress,
) -> Result<(), ExportError> {
    progress.start(&schema.name, src.count(&schema.name)?);
    let cols = columns(schema);
    let mut n = 0u64;
    let mut tick = |progress: &mut dyn Progress| {
        n += 1;
        if n.is_multiple_of(4096) {
            progress.rows(n);
        }
    };
    let create = |p: &Path| std::fs::File::create(p).map_err(file("creating", p));
    match (format, path) {
        (Format::Parquet, Some(p)) => {
            let mut w = ParquetWriter::new(create(p)?, &cols, times)?;
            src.rows(schema, |cells| {
                tick(progress);
                w.row(cells)
            })?;
            w.finish()?;
        }
        (Format::Arrow, Some(p)) => {
            let mut w = ArrowWriter::new(std::io::BufWriter::new(create(p)?), &cols, times)?;
            src.rows(schema, |cells| {
                tick(progress);
                w.row(cells)
            })?;
            w.finish()?;
        }
        (Format::Parquet | Format::Arrow, None) => {
            return Err(ExportError::Invalid(format!(
                "{format:?} needs an output file"
            )));
        }
        (Format::Csv | Format::Jsonl, _) => {
            let out: Box<dyn Write> = match path {
                Some(p) => Box::new(std::io::BufWriter::new(create(p)?)),
                None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
            };
            let mut w = TextWriter::new(out, &cols, times, format == Format::Jsonl)?;
            src.rows(schema, |cells| {
                tick(progress);
                w.row(cells)
            })?;
            w.finish()?;
        }
    }
    progress.done(&schema.name, n, path);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_follow_the_extension() {
        let f = |p: &str| Format::from_path(Some(Path::new(p)));
        assert_eq!(f("x.parquet"), Format::Parquet);
        assert_eq!(f("x.arrows"), Format::Arrow);
        assert_eq!(f("x.json"), Format::Jsonl);
        assert_eq!(f("x.txt"), Format::Csv);
        assert_eq!(Format::from_path(None), Format::Csv);
    }
}
