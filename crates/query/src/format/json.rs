//! `format=json`: one document
//! `{"start_time":…,"fields":[{"name","type"}],"rows":[[…],…],"next":…}`,
//! written row by row (with `derive=rate` also `"derive"` and each rate
//! field's `unit` and `derive`; with `gaps=` a `gaps` member). Integers are exact JSON integers (uint64 too), or
//! strings with `int64=string`; blobs base64; NaN and infinities null.

use std::io::Write;

use base64::Engine as _;

use serde_json::Value;

use super::{Annotations, JsonOptions};
use crate::derive::Gap;
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

/// Writes `v` as [`api_value`] would render it, straight into `out`: no
/// `Value`, no string copies (the tail renders every new row this way).
pub fn write_api_value(
    out: &mut Vec<u8>,
    v: &Cell,
    kind: Kind,
    times: Timestamps,
    int64_string: bool,
) {
    // Writing JSON into a Vec cannot fail.
    let _ = match v {
        Cell::Null => {
            out.extend_from_slice(b"null");
            Ok(())
        }
        Cell::Real(f) if !f.is_finite() => {
            out.extend_from_slice(b"null");
            Ok(())
        }
        Cell::Real(f) if kind == Kind::Time && !times.raw() => {
            serde_json::to_writer(&mut *out, &times.format(*f))
        }
        Cell::Real(f) => serde_json::to_writer(&mut *out, f),
        Cell::Int(i) if int64_string => quoted(out, i),
        Cell::Int(i) => serde_json::to_writer(&mut *out, i),
        Cell::UInt(u) if int64_string => quoted(out, u),
        Cell::UInt(u) => serde_json::to_writer(&mut *out, u),
        Cell::Text(t) => serde_json::to_writer(&mut *out, t.as_str()),
        Cell::Bytes(b) => serde_json::to_writer(
            &mut *out,
            &base64::engine::general_purpose::STANDARD.encode(b),
        ),
        Cell::Bool(b) => serde_json::to_writer(&mut *out, b),
    };
}

/// An integer as a JSON string.
fn quoted(out: &mut Vec<u8>, n: &impl serde::Serialize) -> serde_json::Result<()> {
    out.push(b'"');
    let r = serde_json::to_writer(&mut *out, n);
    out.push(b'"');
    r
}

impl<W: Write> JsonWriter<W> {
    /// Writes the opening and the field list.
    pub fn new(
        out: W,
        cols: &[Column],
        times: Timestamps,
        opts: JsonOptions,
    ) -> Result<Self, ExportError> {
        Self::annotated(out, cols, times, opts, &Annotations::default())
    }

    /// Writes the opening with `ann`: the `derive` member, and the unit
    /// and derivation of each derived field.
    pub fn annotated(
        mut out: W,
        cols: &[Column],
        times: Timestamps,
        opts: JsonOptions,
        ann: &Annotations,
    ) -> Result<Self, ExportError> {
        let fields: Vec<Value> = cols
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let mut f = serde_json::json!({"name": c.name, "type": type_name(c.kind)});
                if let Some(Some(note)) = ann.fields.get(i) {
                    f["unit"] = Value::String(note.unit.clone());
                    f["derive"] = Value::String(note.derive.to_owned());
                }
                f
            })
            .collect();
        write!(out, "{{\"start_time\":{},", opts.start_time)?;
        if let Some(d) = ann.derive {
            write!(out, "\"derive\":{},", Value::String(d.to_owned()))?;
        }
        write!(out, "\"fields\":{},\"rows\":[", Value::Array(fields))?;
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
            write_api_value(&mut self.line, c, *k, self.times, self.int64_string);
        }
        self.line.push(b']');
        self.out.write_all(&self.line)?;
        self.rows += 1;
        Ok(())
    }

    /// Closes the document with the `next` cursor (`null` on the last page).
    pub fn finish(self, next: Option<i64>) -> Result<W, ExportError> {
        self.finish_with(next, None)
    }

    /// Closes the document with `gaps` (when asked for) and `next`.
    pub fn finish_with(
        mut self,
        next: Option<i64>,
        gaps: Option<&[Gap]>,
    ) -> Result<W, ExportError> {
        if let Some(gaps) = gaps {
            self.line.clear();
            self.line.extend_from_slice(b"],\"gaps\":[");
            for (i, g) in gaps.iter().enumerate() {
                if i > 0 {
                    self.line.push(b',');
                }
                self.line.extend_from_slice(b"{\"sender\":");
                write_api_value(
                    &mut self.line,
                    &Cell::Int(g.sender),
                    Kind::Meta,
                    self.times,
                    false,
                );
                self.line.extend_from_slice(b",\"from\":");
                write_api_value(
                    &mut self.line,
                    &Cell::Real(g.from),
                    Kind::Time,
                    self.times,
                    false,
                );
                self.line.extend_from_slice(b",\"to\":");
                write_api_value(
                    &mut self.line,
                    &Cell::Real(g.to),
                    Kind::Time,
                    self.times,
                    false,
                );
                self.line.push(b'}');
            }
            self.out.write_all(&self.line)?;
        }
        match next {
            Some(n) => write!(self.out, "],\"next\":\"{n}\"}}")?,
            None => write!(self.out, "],\"next\":null}}")?,
        }
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use omsp::OmlType;

    /// The direct writer and the `Value` path give the same text for every
    /// kind of cell, edge values included.
    #[test]
    fn write_api_value_matches_api_value() {
        let cells = [
            (Cell::Null, Kind::Meta),
            (Cell::Int(i64::MIN), Kind::Meta),
            (Cell::Int(-7), Kind::Field(OmlType::Int32)),
            (Cell::UInt(u64::MAX), Kind::Field(OmlType::UInt64)),
            (Cell::UInt(0), Kind::Field(OmlType::UInt32)),
            (Cell::Real(0.1), Kind::Field(OmlType::Double)),
            (Cell::Real(1.0), Kind::Field(OmlType::Double)),
            (Cell::Real(-1e300), Kind::Field(OmlType::Double)),
            (Cell::Real(f64::NAN), Kind::Field(OmlType::Double)),
            (Cell::Real(f64::INFINITY), Kind::Time),
            (Cell::Real(12.25), Kind::Time),
            (
                Cell::Text("a\"b\\c\n\u{1}é".into()),
                Kind::Field(OmlType::String),
            ),
            (Cell::Bytes(vec![0, 255, 7]), Kind::Field(OmlType::Blob)),
            (Cell::Bool(true), Kind::Field(OmlType::Bool)),
        ];
        for times in [Timestamps::new(None), Timestamps::new(Some(1_700_000_000))] {
            for int64_string in [false, true] {
                for (c, k) in &cells {
                    let mut out = Vec::new();
                    write_api_value(&mut out, c, *k, times, int64_string);
                    let want = api_value(c, *k, times, int64_string).to_string();
                    assert_eq!(String::from_utf8(out).unwrap(), want, "{c:?} {k:?}");
                }
            }
        }
    }
}
