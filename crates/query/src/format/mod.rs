//! Writers of query answers in every format, behind one [`RowSink`].

pub mod json;

use std::io::Write;

pub use json::JsonWriter;

use crate::derive::Gap;
use crate::export::{
    ArrowWriter, Cell, Column, ExportError, ParquetWriter, TextWriter, Timestamps,
};
use crate::request::Format;

/// One of the writers, chosen by `format=`.
pub enum RowSink<'a, W: Write + Send> {
    /// `format=json`.
    Json(JsonWriter<W>),
    /// `format=csv` / `jsonl` (the export's writer).
    Text(TextWriter<'a, W>),
    /// `format=arrow`.
    Arrow(Box<ArrowWriter<W>>),
    /// `format=parquet` (the export's writer).
    Parquet(Box<ParquetWriter<W>>),
}

/// Options of the JSON document.
#[derive(Debug, Clone, Copy)]
pub struct JsonOptions {
    /// Integers as strings.
    pub int64_string: bool,
    /// The experiment's start (Unix seconds), repeated in the answer.
    pub start_time: i64,
}

/// How a derived field is described in the JSON `fields` list.
#[derive(Debug, Clone)]
pub struct FieldNote {
    /// The unit of the values in the answer (a rate: `<unit>/s`, or `1/s`
    /// when the stream declares no unit).
    pub unit: String,
    /// How the values were derived (`rate`).
    pub derive: &'static str,
}

/// What a JSON answer says beyond its rows (nothing by default).
#[derive(Debug, Clone, Default)]
pub struct Annotations {
    /// The `derive` member (absent when the values are as stored).
    pub derive: Option<&'static str>,
    /// Per column (in order): its note when it is derived.
    pub fields: Vec<Option<FieldNote>>,
}

impl<'a, W: Write + Send> RowSink<'a, W> {
    /// Starts an answer of `format` with `cols`.
    pub fn new(
        out: W,
        format: Format,
        cols: &'a [Column],
        times: Timestamps,
        json: JsonOptions,
    ) -> Result<Self, ExportError> {
        Self::annotated(out, format, cols, times, json, &Annotations::default())
    }

    /// Starts an answer whose JSON form carries `ann` (other formats
    /// have no place for it).
    pub fn annotated(
        out: W,
        format: Format,
        cols: &'a [Column],
        times: Timestamps,
        json: JsonOptions,
        ann: &Annotations,
    ) -> Result<Self, ExportError> {
        Ok(match format {
            Format::Json => RowSink::Json(JsonWriter::annotated(out, cols, times, json, ann)?),
            Format::Csv => RowSink::Text(TextWriter::new(out, cols, times, false)?),
            Format::Jsonl => RowSink::Text(TextWriter::new(out, cols, times, true)?),
            Format::Arrow => RowSink::Arrow(Box::new(ArrowWriter::new(out, cols, times)?)),
            Format::Parquet => RowSink::Parquet(Box::new(ParquetWriter::new(out, cols, times)?)),
        })
    }

    /// One row.
    pub fn row(&mut self, cells: &[Cell]) -> Result<(), ExportError> {
        match self {
            RowSink::Json(w) => w.row(cells),
            RowSink::Text(w) => w.row(cells),
            RowSink::Arrow(w) => w.row(cells),
            RowSink::Parquet(w) => w.row(cells),
        }
    }

    /// Ends the answer; `next` is the cursor of the following page (JSON).
    pub fn finish(self, next: Option<i64>) -> Result<W, ExportError> {
        self.finish_with(next, None)
    }

    /// Ends the answer with `gaps` (JSON only: `gaps=` is refused for
    /// other formats) and `next`.
    pub fn finish_with(self, next: Option<i64>, gaps: Option<&[Gap]>) -> Result<W, ExportError> {
        match self {
            RowSink::Json(w) => w.finish_with(next, gaps),
            RowSink::Text(w) => w.finish(),
            RowSink::Arrow(w) => w.finish(),
            RowSink::Parquet(w) => w.finish(),
        }
    }
}
