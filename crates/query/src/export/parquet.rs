//! Parquet output, with the parquet crate's column writers (no Arrow):
//! one typed column per table column, every column optional (NULLs
//! happen), rows written in groups of [`GROUP`].

use std::io::Write;
use std::sync::Arc;

use omsp::OmlType;
use parquet::basic::Compression;
use parquet::column::writer::ColumnWriter;
use parquet::data_type::ByteArray;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;

use super::cell::{Cell, Column, Kind};
use super::error::ExportError;
use super::time::Timestamps;

/// Rows per row group.
const GROUP: usize = 64 * 1024;

/// Physical storage of one column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phys {
    I32,
    I64,
    /// Seconds after the start, as microseconds since the epoch.
    Micros,
    F64,
    Bool,
    Bytes,
}

/// Values of one column in the current row group.
enum Buf {
    I32(Vec<i32>),
    I64(Vec<i64>),
    F64(Vec<f64>),
    Bool(Vec<bool>),
    Bytes(Vec<ByteArray>),
}

struct Col {
    phys: Phys,
    values: Buf,
    /// 1 = value present, 0 = NULL.
    def: Vec<i16>,
}

/// Writes one table as a Parquet file.
pub struct ParquetWriter<W: Write + Send> {
    writer: SerializedFileWriter<W>,
    cols: Vec<Col>,
    times: Timestamps,
    rows: usize,
}

fn phys(kind: Kind, times: Timestamps) -> (Phys, &'static str) {
    match kind {
        Kind::Meta => (Phys::I64, "INT64"),
        Kind::Time if times.raw() => (Phys::F64, "DOUBLE"),
        Kind::Time => (Phys::Micros, "INT64 (TIMESTAMP(MICROS,true))"),
        Kind::Field(t) => match t {
            OmlType::Int32 => (Phys::I32, "INT32"),
            OmlType::UInt32 | OmlType::Int64 => (Phys::I64, "INT64"),
            OmlType::UInt64 | OmlType::Guid => (Phys::I64, "INT64 (INTEGER(64,false))"),
            OmlType::Double => (Phys::F64, "DOUBLE"),
            OmlType::Bool => (Phys::Bool, "BOOLEAN"),
            OmlType::Blob => (Phys::Bytes, "BINARY"),
            // Strings, and vectors in their stored text form.
            _ => (Phys::Bytes, "BINARY (STRING)"),
        },
    }
}

impl<W: Write + Send> ParquetWriter<W> {
    /// Starts a Parquet file on `file` for a table with `columns`.
    pub fn new(file: W, columns: &[Column], times: Timestamps) -> Result<Self, ExportError> {
        let mut message = String::from("message stream {\n");
        let mut cols = Vec::new();
        for c in columns {
            let (p, decl) = phys(c.kind, times);
            let (ty, ann) = decl.split_once(' ').unwrap_or((decl, ""));
            message.push_str(&format!("  OPTIONAL {ty} {} {ann};\n", c.name));
            let values = match p {
                Phys::I32 => Buf::I32(Vec::new()),
                Phys::I64 | Phys::Micros => Buf::I64(Vec::new()),
                Phys::F64 => Buf::F64(Vec::new()),
                Phys::Bool => Buf::Bool(Vec::new()),
                Phys::Bytes => Buf::Bytes(Vec::new()),
            };
            cols.push(Col {
                phys: p,
                values,
                def: Vec::new(),
            });
        }
        message.push('}');
        let schema = Arc::new(parse_message_type(&message)?);
        let props = Arc::new(
            WriterProperties::builder()
                .set_compression(Compression::SNAPPY)
                .set_created_by("streamgauge export".into())
                .build(),
        );
        let writer = SerializedFileWriter::new(file, schema, props)?;
        Ok(ParquetWriter {
            writer,
            cols,
            times,
            rows: 0,
        })
    }

    /// One row.
    pub fn row(&mut self, cells: &[Cell]) -> Result<(), ExportError> {
        for (col, cell) in self.cols.iter_mut().zip(cells) {
            let present = push(col, cell, self.times);
            col.def.push(i16::from(present));
        }
        self.rows += 1;
        if self.rows == GROUP {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), ExportError> {
        if self.rows == 0 {
            return Ok(());
        }
        let mut group = self.writer.next_row_group()?;
        let mut i = 0;
        while let Some(mut w) = group.next_column()? {
            let col = &mut self.cols[i];
            let def = Some(col.def.as_slice());
            match (w.untyped(), &mut col.values) {
                (ColumnWriter::Int32ColumnWriter(w), Buf::I32(v)) => {
                    w.write_batch(v, def, None)?;
                    v.clear();
                }
                (ColumnWriter::Int64ColumnWriter(w), Buf::I64(v)) => {
                    w.write_batch(v, def, None)?;
                    v.clear();
                }
                (ColumnWriter::DoubleColumnWriter(w), Buf::F64(v)) => {
                    w.write_batch(v, def, None)?;
                    v.clear();
                }
                (ColumnWriter::BoolColumnWriter(w), Buf::Bool(v)) => {
                    w.write_batch(v, def, None)?;
                    v.clear();
                }
                (ColumnWriter::ByteArrayColumnWriter(w), Buf::Bytes(v)) => {
                    w.write_batch(v, def, None)?;
                    v.clear();
                }
                _ => {
                    return Err(ExportError::Invalid(format!(
                        "Parquet column {i}: writer and buffer disagree"
                    )))
                }
            }
            col.def.clear();
            w.close()?;
            i += 1;
        }
        group.close()?;
        self.rows = 0;
        Ok(())
    }

    /// Writes the last row group and the footer.
    pub fn finish(mut self) -> Result<W, ExportError> {
        self.flush()?;
        Ok(self.writer.into_inner()?)
    }
}

/// Appends `cell` to `col`; false for a NULL (nothing appended).
fn push(col: &mut Col, cell: &Cell, times: Timestamps) -> bool {
    match (&mut col.values, cell) {
        (_, Cell::Null) => false,
        (Buf::I32(v), Cell::Int(i)) => {
            v.push(*i as i32);
            true
        }
        (Buf::I32(v), Cell::UInt(u)) => {
            v.push(*u as i32);
            true
        }
        (Buf::I64(v), Cell::Real(f)) if col.phys == Phys::Micros => {
            v.push(times.micros(*f));
            true
        }
        (Buf::I64(v), Cell::Int(i)) => {
            v.push(*i);
            true
        }
        // uint64 keeps its bits; the column is annotated unsigned.
        (Buf::I64(v), Cell::UInt(u)) => {
            v.push(*u as i64);
            true
        }
        (Buf::F64(v), Cell::Real(f)) => {
            v.push(*f);
            true
        }
        (Buf::F64(v), Cell::Int(i)) => {
            v.push(*i as f64);
            true
        }
        (Buf::Bool(v), Cell::Bool(b)) => {
            v.push(*b);
            true
        }
        (Buf::Bool(v), Cell::Int(i)) => {
            v.push(*i != 0);
            true
        }
        (Buf::Bytes(v), Cell::Text(t)) => {
            v.push(ByteArray::from(t.as_bytes().to_vec()));
            true
        }
        (Buf::Bytes(v), Cell::Bytes(b)) => {
            v.push(ByteArray::from(b.clone()));
            true
        }
        (Buf::Bytes(v), other) => {
            v.push(ByteArray::from(format!("{other:?}").into_bytes()));
            true
        }
        // A value of another type than the column's: stored as NULL.
        _ => false,
    }
}
