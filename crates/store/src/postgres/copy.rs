//! Rows in PostgreSQL's binary COPY format, encoded as they arrive.
//!
//! Each table gets a [`CopyBuffer`]; a flush sends it as one
//! `COPY … FROM STDIN (FORMAT binary)`. Encoding once, at insert time, means
//! no row is cloned or kept as a value, and the database parses no text:
//! doubles travel as their 8 IEEE bytes (the reference sends 15-digit text)
//! and unsigned 64-bit values as exact NUMERICs.
//!
//! Format: a header (`PGCOPY\n\xff\r\n\0`, flags, extension length), then per
//! row a 16-bit field count and per field a 32-bit length (−1 for NULL) and
//! the value in the type's binary send format, then a −1 trailer.

use std::borrow::Cow;

use omsp::{OmlType, Schema, Value};

use super::columns::{self, Column, Layout, Uint64Layout};
use crate::error::StoreError;
use crate::row::Row;
use crate::sqlite::values;

/// Start of every binary COPY stream: signature, flags, header extension length.
pub const HEADER: &[u8] = b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0";

/// End of every binary COPY stream (a field count of −1).
pub const TRAILER: &[u8] = &[0xff, 0xff];

/// Encoded rows of one table, waiting for the next flush.
#[derive(Debug, Default)]
pub struct CopyBuffer {
    /// The rows, back to back, without header and trailer.
    data: Vec<u8>,
    /// Where each row ends in `data`, and its `oml_seq` (to retry rows one
    /// by one and to name the ones the database refuses).
    rows: Vec<(usize, i64)>,
}

impl CopyBuffer {
    /// Encoded bytes held.
    pub fn bytes(&self) -> usize {
        self.data.len()
    }

    /// The encoded rows, back to back (no COPY header or trailer).
    pub fn encoded(&self) -> &[u8] {
        &self.data
    }

    /// True if no row is waiting.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Appends a row of `schema`'s table, whose columns have the types of
    /// `layout`. On error nothing is appended.
    pub fn push(&mut self, schema: &Schema, layout: &Layout, row: &Row) -> Result<(), StoreError> {
        let ts = (row.ts_client, row.ts_server);
        self.push_in(schema, layout, (row.sender, row.seq), ts, &row.values)
    }

    /// Appends a row given by its parts, for callers that have no table
    /// catalog (benchmarks, tools): `oml_sender_id`, `oml_seq`,
    /// `(oml_ts_client, oml_ts_server)` and the field values. On error
    /// nothing is appended.
    pub fn push_tuple(
        &mut self,
        schema: &Schema,
        sender: i64,
        seq: i64,
        (ts_client, ts_server): (f64, f64),
        values: &[Value],
    ) -> Result<(), StoreError> {
        let layout = Layout::ours(schema, Uint64Layout::Numeric);
        self.push_in(
            schema,
            &layout,
            (sender, seq),
            (ts_client, ts_server),
            values,
        )
    }

    /// [`CopyBuffer::push_tuple`] into columns of the types of `layout`.
    pub fn push_in(
        &mut self,
        schema: &Schema,
        layout: &Layout,
        (sender, seq): (i64, i64),
        ts: (f64, f64),
        values: &[Value],
    ) -> Result<(), StoreError> {
        let start = self.data.len();
        let res = encode_row(&mut self.data, schema, layout, (sender, seq), ts, values);
        match res {
            Ok(()) => {
                self.rows.push((self.data.len(), seq));
                Ok(())
            }
            Err(e) => {
                self.data.truncate(start);
                Err(e)
            }
        }
    }

    /// Every row, as one complete COPY stream.
    pub fn stream(&self) -> Vec<&[u8]> {
        vec![HEADER, &self.data, TRAILER]
    }

    /// Rows `a..b` (by position) as one complete COPY stream, and the
    /// `oml_seq` of the first.
    pub fn rows(&self, a: usize, b: usize) -> ([&[u8]; 3], i64) {
        let start = if a == 0 { 0 } else { self.rows[a - 1].0 };
        let end = self.rows[b - 1].0;
        ([HEADER, &self.data[start..end], TRAILER], self.rows[a].1)
    }

    /// Rows held.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Every row, moved out (the buffer is left empty): the encoded rows
    /// back to back, and where each ends.
    pub fn take(&mut self) -> super::committed::Encoded {
        let ends = self.rows.drain(..).map(|(end, _)| end).collect();
        (std::mem::take(&mut self.data), ends)
    }

    /// Forgets every row.
    pub fn clear(&mut self) {
        self.data.clear();
        self.rows.clear();
    }
}

fn encode_row(
    out: &mut Vec<u8>,
    schema: &Schema,
    layout: &Layout,
    (sender, seq): (i64, i64),
    (ts_client, ts_server): (f64, f64),
    values: &[Value],
) -> Result<(), StoreError> {
    if schema.fields.len() != values.len() || layout.fields.len() != values.len() {
        return Err(StoreError::RowShape {
            table: schema.name.clone(),
            expected: schema.fields.len(),
            found: values.len(),
        });
    }
    let count =
        i16::try_from(4 + values.len()).map_err(|_| unstorable(schema, "too many fields"))?;
    out.extend_from_slice(&count.to_be_bytes());
    let misfit = |what: &str, why: String| unstorable(schema, &format!("{what}: {why}"));
    columns::integer(out, layout.sender, i128::from(sender))
        .map_err(|e| misfit("oml_sender_id", e))?;
    columns::integer(out, layout.seq, i128::from(seq)).map_err(|e| misfit("oml_seq", e))?;
    timestamp(out, layout.ts, ts_client).map_err(|e| misfit("oml_ts_client", e))?;
    timestamp(out, layout.ts, ts_server).map_err(|e| misfit("oml_ts_server", e))?;
    for ((f, v), &col) in schema.fields.iter().zip(values).zip(&layout.fields) {
        if !compatible(f.ty, v) {
            return Err(unstorable(
                schema,
                &format!(
                    "field {}: {} value for a {} column",
                    f.name,
                    v.oml_type().name(),
                    f.ty.name()
                ),
            ));
        }
        let text = value_text(schema, v)?;
        columns::value(out, col, v, &text).map_err(|e| misfit(&f.name, e))?;
    }
    Ok(())
}

fn unstorable(schema: &Schema, reason: &str) -> StoreError {
    StoreError::Unstorable {
        table: schema.name.clone(),
        reason: reason.to_owned(),
    }
}

/// Same column type (the legacy names are already canonical in a [`Value`]).
fn compatible(ty: OmlType, v: &Value) -> bool {
    v.oml_type() == ty
}

fn null(out: &mut Vec<u8>) {
    out.extend_from_slice(&(-1i32).to_be_bytes());
}

/// `oml_ts_*`: NaN means "no timestamp" and is stored as NULL, as in SQLite.
fn timestamp(out: &mut Vec<u8>, col: Column, t: f64) -> Result<(), columns::Misfit> {
    if t.is_nan() {
        null(out);
        Ok(())
    } else {
        columns::double(out, col, t)
    }
}

/// The text of a string or vector value (empty for the other types, which
/// are written from their binary value).
fn value_text<'a>(schema: &Schema, v: &'a Value) -> Result<Cow<'a, str>, StoreError> {
    match v {
        Value::String(s) => Ok(Cow::Borrowed(text(schema, s)?)),
        Value::Int32(_)
        | Value::UInt32(_)
        | Value::Int64(_)
        | Value::UInt64(_)
        | Value::Guid(_)
        | Value::Double(_)
        | Value::Bool(_)
        | Value::Blob(_) => Ok(Cow::Borrowed("")),
        vector => match values::to_sql(vector) {
            // The vector text of the SQLite store, `[ a, b, c ]`, shared.
            rusqlite::types::ToSqlOutput::Owned(rusqlite::types::Value::Text(s)) => {
                Ok(Cow::Owned(s))
            }
            _ => Err(unstorable(schema, "vector has no text form")),
        },
    }
}

/// PostgreSQL text cannot hold a NUL character: refuse the row up front,
/// rather than have the database abort the whole COPY.
fn text<'a>(schema: &Schema, s: &'a str) -> Result<&'a str, StoreError> {
    if s.as_bytes().contains(&0) {
        return Err(unstorable(schema, "string contains a NUL byte"));
    }
    Ok(s)
}

/// NUMERIC send format of a non-negative integer: digit count, weight (the
/// power of 10000 of the first digit), sign, display scale, then base-10000
/// digits, most significant first, without leading or trailing zero digits.
pub fn numeric(mut v: u64) -> Vec<u8> {
    let mut digits: Vec<i16> = Vec::with_capacity(5);
    while v > 0 {
        // < 10000, so the cast is exact.
        digits.push((v % 10_000) as i16);
        v /= 10_000;
    }
    digits.reverse();
    let weight = digits.len().saturating_sub(1) as i16;
    while digits.last() == Some(&0) {
        digits.pop();
    }
    let mut out = Vec::with_capacity(8 + 2 * digits.len());
    out.extend_from_slice(&(digits.len() as i16).to_be_bytes());
    out.extend_from_slice(&weight.to_be_bytes());
    out.extend_from_slice(&0u16.to_be_bytes()); // positive
    out.extend_from_slice(&0u16.to_be_bytes()); // scale 0
    for d in digits {
        out.extend_from_slice(&d.to_be_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(b: &[u8]) -> Vec<i16> {
        b.chunks(2)
            .map(|c| i16::from_be_bytes([c[0], c[1]]))
            .collect()
    }

    #[test]
    fn numerics_in_base_10000() {
        assert_eq!(words(&numeric(0)), [0, 0, 0, 0]);
        assert_eq!(words(&numeric(10_000)), [1, 1, 0, 0, 1]);
        assert_eq!(words(&numeric(123_456_789)), [3, 2, 0, 0, 1, 2345, 6789]);
        assert_eq!(
            words(&numeric(u64::MAX)),
            [5, 4, 0, 0, 1844, 6744, 737, 955, 1615]
        );
    }

    #[test]
    fn refused_rows_leave_no_bytes() {
        let s = Schema::parse("1 t a:string b:int32").unwrap();
        let row = |a: &str| Row {
            table: crate::row::TableId(0),
            sender: 1,
            seq: 1,
            ts_client: 0.0,
            ts_server: f64::NAN,
            values: vec![Value::String(a.into()), Value::Int32(1)],
        };
        let mut buf = CopyBuffer::default();
        let layout = Layout::ours(&s, Uint64Layout::Numeric);
        buf.push(&s, &layout, &row("ok")).unwrap();
        let n = buf.bytes();
        assert!(buf.push(&s, &layout, &row("a\0b")).is_err());
        assert_eq!(buf.bytes(), n);
        assert_eq!(buf.len(), 1);
        assert_eq!(buf.rows(0, 1).0[1].len(), n);
    }
}
