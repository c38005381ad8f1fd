//! CSV (RFC 4180) and JSON-lines output.

use std::io::Write;

use base64::Engine as _;

use super::cell::{Cell, Column, Kind};
use super::error::ExportError;
use super::time::Timestamps;

/// Writes one table as CSV or JSON lines, a row at a time.
pub struct TextWriter<'a, W: Write> {
    out: W,
    columns: &'a [Column],
    times: Timestamps,
    json: bool,
    line: String,
}

impl<'a, W: Write> TextWriter<'a, W> {
    /// Starts the output (the CSV header row).
    pub fn new(
        mut out: W,
        columns: &'a [Column],
        times: Timestamps,
        json: bool,
    ) -> Result<Self, ExportError> {
        if !json {
            let names: Vec<String> = columns.iter().map(|c| csv_field(&c.name)).collect();
            writeln!(out, "{}", names.join(","))?;
        }
        Ok(TextWriter {
            out,
            columns,
            times,
            json,
            line: String::new(),
        })
    }

    /// One row.
    pub fn row(&mut self, cells: &[Cell]) -> Result<(), ExportError> {
        self.line.clear();
        if self.json {
            let mut m = serde_json::Map::new();
            for (c, v) in self.columns.iter().zip(cells) {
                m.insert(c.name.clone(), json_value(v, c.kind, self.times));
            }
            self.line
                .push_str(&serde_json::Value::Object(m).to_string());
        } else {
            for (i, (c, v)) in self.columns.iter().zip(cells).enumerate() {
                if i > 0 {
                    self.line.push(',');
                }
                self.line
                    .push_str(&csv_field(&text_value(v, c.kind, self.times)));
            }
        }
        self.line.push('\n');
        self.out.write_all(self.line.as_bytes())?;
        Ok(())
    }

    /// Flushes, and gives the output back.
    pub fn finish(mut self) -> Result<W, ExportError> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// A CSV field (RFC 4180), quoted when it holds a comma, a quote or a line break.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

/// A cell as CSV text (timestamps RFC 3339 unless raw, blobs base64).
pub fn text_value(v: &Cell, kind: Kind, times: Timestamps) -> String {
    match v {
        Cell::Null => String::new(),
        Cell::Real(f) if kind == Kind::Time => times.format(*f),
        Cell::Int(i) => i.to_string(),
        Cell::UInt(u) => u.to_string(),
        Cell::Real(f) => f.to_string(),
        Cell::Text(t) => t.clone(),
        Cell::Bytes(b) => base64::engine::general_purpose::STANDARD.encode(b),
        Cell::Bool(b) => b.to_string(),
    }
}

/// A cell as JSON: integers as numbers (exact, also above 2^53), blobs in
/// base64, timestamps as RFC 3339 unless raw; NaN and infinities as their
/// names (as `streamgauge export` writes JSON lines).
pub fn json_value(v: &Cell, kind: Kind, times: Timestamps) -> serde_json::Value {
    use serde_json::Value as J;
    match v {
        Cell::Null => J::Null,
        Cell::Real(f) if kind == Kind::Time && !times.raw() => J::String(times.format(*f)),
        Cell::Int(i) => J::from(*i),
        Cell::UInt(u) => J::from(*u),
        Cell::Real(f) => {
            serde_json::Number::from_f64(*f).map_or_else(|| J::String(f.to_string()), J::Number)
        }
        Cell::Text(t) => J::String(t.clone()),
        Cell::Bytes(b) => J::String(base64::engine::general_purpose::STANDARD.encode(b)),
        Cell::Bool(b) => J::Bool(*b),
    }
}
