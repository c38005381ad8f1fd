//! Writers of query answers in every format, behind one [`RowSink`].

pub mod json;

use std::io::Write;

pub use json::JsonWriter;

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

impl<'a, W: Write + Send> RowSink<'a, W> {
    /// Starts an answer of `format` with `cols`.
    pub fn new(
        out: W,
        format: Format,
        cols: &'a [Column],
        times: Timestamps,
        json: JsonOptions,
    ) -> Result<Self, ExportError> {
        Ok(match format {
            Format::Json => RowSink::Json(JsonWriter::new(out, cols, times, json)?),
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
        match self {
            RowSink::Json(w) => w.finish(next),
            RowSink::Text(w) => w.finish(),
            RowSink::Arrow(w) => w.finish(),
            RowSink::Parquet(w) => w.finish(),
        }
    }
}
