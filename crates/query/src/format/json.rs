//! `format=json`: one document
//! `{"start_time":…,"fields":[{"name","type"}],"rows":[[…],…],"next":…}`,
//! written row by row. Integers are exact JSON integers (uint64 too), or
//! strings with `int64=string`; blobs base64; NaN and infinities null.

use std::io::Write;

use serde_json::Value;

use super::JsonOptions;
use crate::export::{json_value, Cell, Column, ExportError, Kind, Timestamps};

/// Writes the JSON document.
pub struct JsonWriter<W: Write> {
    /// The output.
    out: W,
    /// Kinds of the columns, for value conversion.
    kinds: Vec<Kind>,
    /// Timestamp conversion.
    times: Timestamps,
    /// Integers as strings.
    int64_string: bool,
    /// Rows written (for the separating commas).
    rows: u64,
    /// Reused line buffer.
    line: Vec<u8>,
}

/// The `type` of a column in `fields`.
pub fn type_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Meta => "int64",
        Kind::Time => "time",
        Kind::Field(t) => t.name(),
    }
}

/// A cell in the API's JSON.
pub fn api_value(v: &Cell, kind: Kind, times: Timestamps, int64_string: bool) -> Value {
    match v {
        Cell::Real(f) if !f.is_finite() => Value::Null,
        Cell::Int(i) if int64_string => Value::String(i.to_string()),
        Cell::UInt(u) if int64_string => Value::String(u.to_string()),
        _ => json_value(v, kind, times),
    }
}

impl<W: Write> JsonWriter<W> {
    /// Writes the opening and the field list.
    pub fn new(
        mut out: W,
        cols: &[Column],
        times: Timestamps,
        opts: JsonOptions,
    ) -> Result<Self, ExportError> {
        let fields: Vec<Value> = cols
            .iter()
            .map(|c| serde_json::json!({"name": c.name, "type": type_name(c.kind)}))
            .collect();
        write!(
            out,
            "{{\"start_time\":{},\"fields\":{},\"rows\":[",
            opts.start_time,
            Value::Array(fields)
        )?;
        Ok(JsonWriter {
            out,
            kinds: cols.iter().map(|c| c.kind).collect(),
            times,
            int64_string: opts.int64_string,
            rows: 0,
            line: Vec::with_capacity(256),
        })
    }

    /// One row, as an array.
    pub fn row(&mut self, cells: &[Cell]) -> Result<(), ExportError> {
        self.line.clear();
        if self.rows > 0 {
            self.line.push(b',');
        }
        self.line.push(b'[');
        for (i, (c, k)) in cells.iter().zip(&self.kinds).enumerate() {
            if i > 0 {
                self.line.push(b',');
            }
            match c {
                Cell::Null => self.line.extend_from_slice(b"null"),
                Cell::Int(v) if !self.int64_string => {
                    self.line.extend_from_slice(itoa(*v).as_bytes())
                }
                Cell::UInt(v) if !self.int64_string => {
                    self.line.extend_from_slice(v.to_string().as_bytes())
                }
                Cell::Real(f) if f.is_finite() && (*k != Kind::Time || self.times.raw()) => {
                    self.line.extend_from_slice(
                        serde_json::Number::from_f64(*f)
                            .map_or_else(|| "null".to_owned(), |n| n.to_string())
                            .as_bytes(),
                    )
                }
                _ => serde_json::to_writer(
                    &mut self.line,
                    &api_value(c, *k, self.times, self.int64_string),
                )
                .map_err(|e| ExportError::Invalid(e.to_string()))?,
            }
        }
        self.line.push(b']');
        self.out.write_all(&self.line)?;
        self.rows += 1;
        Ok(())
    }

    /// Closes the document with the `next` cursor (`null` on the last page).
    pub fn finish(mut self, next: Option<i64>) -> Result<W, ExportError> {
        match next {
            Some(n) => write!(self.out, "],\"next\":\"{n}\"}}")?,
            None => write!(self.out, "],\"next\":null}}")?,
        }
        self.out.flush()?;
        Ok(self.out)
    }
}

fn itoa(v: i64) -> String {
    v.to_string()
}
