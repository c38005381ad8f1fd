//! Reading streams exactly and writing them as CSV, JSON lines, Parquet
//! or Arrow IPC: the one implementation behind `streamgauge export` and
//! the HTTP API, so both give the same data.
//!
//! ```no_run
//! use query::export::{columns, Source, TextWriter, Timestamps};
//!
//! let mut src = Source::open("exp1.sq3")?;
//! let start = src.start_time()?;
//! let schema = src.streams()?.remove(0);
//! let cols = columns(&schema);
//! let mut w = TextWriter::new(std::io::stdout(), &cols, Timestamps::new(start), false)?;
//! src.rows(&schema, |cells| w.row(cells))?;
//! w.finish()?;
//! # Ok::<(), query::export::ExportError>(())
//! ```

mod arrow;
mod cell;
mod error;
pub mod job;
mod parquet;
mod pgbin;
pub(crate) mod pgcopy;
mod source;
mod text;
mod time;

pub use arrow::ArrowWriter;
pub use cell::{columns, pg_cell, sqlite_cell, Cell, Column, Kind, META};
pub use error::ExportError;
pub use parquet::ParquetWriter;
pub use pgbin::{numeric_u64, pg_binary_cell, PgValue};
pub use source::{select_list, Conn, Pg, Source, FETCH};
pub use text::{csv_field, json_value, text_value, TextWriter};
pub use time::Timestamps;
