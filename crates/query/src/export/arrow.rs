//! Apache Arrow IPC stream output: typed columns (uint64 as UInt64, exact),
//! timestamps as `Timestamp(Microsecond, "UTC")` (or raw seconds as
//! Float64), one record batch per [`BATCH`] rows, so a reader can start
//! before the end.

use std::io::Write;
use std::sync::Arc;

use arrow_array::builder::{
    ArrayBuilder, BinaryBuilder, BooleanBuilder, Float64Builder, Int32Builder, Int64Builder,
    StringBuilder, TimestampMicrosecondBuilder, UInt32Builder, UInt64Builder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_ipc::writer::StreamWriter;
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use omsp::OmlType;

use super::cell::{Cell, Column, Kind};
use super::error::ExportError;
use super::time::Timestamps;

/// Rows per record batch.
pub const BATCH: usize = 64 * 1024;

/// Writes rows as an Arrow IPC stream.
pub struct ArrowWriter<W: Write> {
    /// The IPC stream writer (schema already written).
    writer: StreamWriter<W>,
    /// The Arrow schema of every batch.
    schema: SchemaRef,
    /// One builder per column for the current batch.
    builders: Vec<Box<dyn ArrayBuilder>>,
    /// Converts timestamp seconds to instants (or keeps them raw).
    times: Timestamps,
    /// Rows in the current batch.
    rows: usize,
}

fn data_type(kind: Kind, times: Timestamps) -> DataType {
    match kind {
        Kind::Meta => DataType::Int64,
        Kind::Time if times.raw() => DataType::Float64,
        Kind::Time => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        Kind::Field(t) => match t {
            OmlType::Int32 => DataType::Int32,
            OmlType::UInt32 => DataType::UInt32,
            OmlType::Int64 => DataType::Int64,
            OmlType::UInt64 | OmlType::Guid => DataType::UInt64,
            OmlType::Double => DataType::Float64,
            OmlType::Bool => DataType::Boolean,
            OmlType::Blob => DataType::Binary,
            _ => DataType::Utf8,
        },
    }
}

fn builder(ty: &DataType) -> Box<dyn ArrayBuilder> {
    match ty {
        DataType::Int32 => Box::new(Int32Builder::new()),
        DataType::UInt32 => Box::new(UInt32Builder::new()),
        DataType::Int64 => Box::new(Int64Builder::new()),
        DataType::UInt64 => Box::new(UInt64Builder::new()),
        DataType::Float64 => Box::new(Float64Builder::new()),
        DataType::Boolean => Box::new(BooleanBuilder::new()),
        DataType::Binary => Box::new(BinaryBuilder::new()),
        DataType::Timestamp(_, tz) => {
            Box::new(TimestampMicrosecondBuilder::new().with_timezone_opt(tz.clone()))
        }
        _ => Box::new(StringBuilder::new()),
    }
}

impl<W: Write> ArrowWriter<W> {
    /// Writes the schema message for `columns`.
    pub fn new(out: W, columns: &[Column], times: Timestamps) -> Result<Self, ExportError> {
        let fields: Vec<Field> = columns
            .iter()
            .map(|c| Field::new(&c.name, data_type(c.kind, times), true))
            .collect();
        let schema = Arc::new(Schema::new(fields));
        let builders = schema
            .fields()
            .iter()
            .map(|f| builder(f.data_type()))
            .collect();
        let writer = StreamWriter::try_new(out, &schema)?;
        Ok(ArrowWriter {
            writer,
            schema,
            builders,
            times,
            rows: 0,
        })
    }

    /// One row.
    pub fn row(&mut self, cells: &[Cell]) -> Result<(), ExportError> {
        for (b, cell) in self.builders.iter_mut().zip(cells) {
            append(b.as_mut(), cell, self.times);
        }
        self.rows += 1;
        if self.rows == BATCH {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), ExportError> {
        if self.rows == 0 {
            return Ok(());
        }
        let arrays: Vec<ArrayRef> = self.builders.iter_mut().map(|b| b.finish()).collect();
        let batch = RecordBatch::try_new(self.schema.clone(), arrays)?;
        self.writer.write(&batch)?;
        self.writer.flush()?;
        self.rows = 0;
        Ok(())
    }

    /// Writes the last batch and the end-of-stream marker.
    pub fn finish(mut self) -> Result<W, ExportError> {
        self.flush()?;
        self.writer.finish()?;
        Ok(self.writer.into_inner()?)
    }
}

macro_rules! put {
    ($b:expr, $ty:ty, $v:expr) => {
        if let Some(b) = $b.as_any_mut().downcast_mut::<$ty>() {
            match $v {
                Some(v) => b.append_value(v),
                None => b.append_null(),
            }
            return;
        }
    };
}

/// Appends `cell` to builder `b` (NULL when the value does not fit the
/// column's type, which the stores never produce).
fn append(b: &mut dyn ArrayBuilder, cell: &Cell, times: Timestamps) {
    let int = match cell {
        Cell::Int(i) => Some(*i),
        Cell::UInt(u) => i64::try_from(*u).ok(),
        Cell::Bool(x) => Some(i64::from(*x)),
        _ => None,
    };
    let real = match cell {
        Cell::Real(f) => Some(*f),
        Cell::Int(i) => Some(*i as f64),
        _ => None,
    };
    put!(b, Int64Builder, int);
    put!(b, Int32Builder, int.and_then(|i| i32::try_from(i).ok()));
    put!(
        b,
        UInt32Builder,
        match cell {
            Cell::UInt(u) => u32::try_from(*u).ok(),
            Cell::Int(i) => u32::try_from(*i).ok(),
            _ => None,
        }
    );
    put!(
        b,
        UInt64Builder,
        match cell {
            Cell::UInt(u) => Some(*u),
            Cell::Int(i) => u64::try_from(*i).ok(),
            _ => None,
        }
    );
    put!(b, Float64Builder, real);
    put!(
        b,
        TimestampMicrosecondBuilder,
        real.filter(|f| f.is_finite()).map(|f| times.micros(f))
    );
    put!(
        b,
        BooleanBuilder,
        match cell {
            Cell::Bool(x) => Some(*x),
            Cell::Int(i) => Some(*i != 0),
            _ => None,
        }
    );
    put!(
        b,
        BinaryBuilder,
        match cell {
            Cell::Bytes(v) => Some(v.as_slice()),
            Cell::Text(t) => Some(t.as_bytes()),
            _ => None,
        }
    );
    put!(
        b,
        StringBuilder,
        match cell {
            Cell::Text(t) => Some(t.clone()),
            Cell::Null => None,
            other => Some(format!("{other:?}")),
        }
    );
}
