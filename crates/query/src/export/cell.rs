//! Values as stored, the columns of a stream table, and how each backend's
//! values become [`Cell`]s exactly (uint64 above 2^63-1 from SQLite's
//! 8-byte blobs or PostgreSQL's NUMERIC text).

use omsp::{OmlType, Schema};

/// A value as stored.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// SQL NULL (also NaN in SQLite, which has no NaN).
    Null,
    /// Signed integer columns.
    Int(i64),
    /// uint32, uint64, guid: exact over the whole range.
    UInt(u64),
    /// Doubles and timestamps (seconds since the start).
    Real(f64),
    /// Strings, and vectors in their stored `[ a, b ]` text.
    Text(String),
    /// Blobs.
    Bytes(Vec<u8>),
    /// Booleans.
    Bool(bool),
}

/// What a column holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `oml_tuple_id`, `oml_sender_id`, `oml_seq`.
    Meta,
    /// `oml_ts_client`, `oml_ts_server`: seconds since `start_time`.
    Time,
    /// A field of the stream.
    Field(OmlType),
}

/// One column.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// Column name in the table.
    pub name: String,
    /// How its values are typed and written.
    pub kind: Kind,
}

/// The bookkeeping columns every stream table starts with.
pub const META: [(&str, Kind); 5] = [
    ("oml_tuple_id", Kind::Meta),
    ("oml_sender_id", Kind::Meta),
    ("oml_seq", Kind::Meta),
    ("oml_ts_client", Kind::Time),
    ("oml_ts_server", Kind::Time),
];

/// The columns of a stream table, bookkeeping first.
pub fn columns(schema: &Schema) -> Vec<Column> {
    META.iter()
        .map(|&(n, k)| Column {
            name: n.to_owned(),
            kind: k,
        })
        .chain(schema.fields.iter().map(|f| Column {
            name: f.name.clone(),
            kind: Kind::Field(f.ty),
        }))
        .collect()
}

fn is_unsigned64(kind: Kind) -> bool {
    matches!(kind, Kind::Field(OmlType::UInt64 | OmlType::Guid))
}

/// Stored text as a string: checked as UTF-8 in one pass (invalid bytes,
/// which only a foreign writer could store, become U+FFFD).
pub fn text(t: &[u8]) -> String {
    match std::str::from_utf8(t) {
        Ok(s) => s.to_owned(),
        Err(_) => String::from_utf8_lossy(t).into_owned(),
    }
}

/// A SQLite value of a column of `kind`.
pub fn sqlite_cell(v: rusqlite::types::ValueRef<'_>, kind: Kind) -> Cell {
    use rusqlite::types::ValueRef as V;
    match v {
        V::Null => Cell::Null,
        V::Integer(i) => match kind {
            Kind::Field(OmlType::Bool) => Cell::Bool(i != 0),
            k if is_unsigned64(k) || kind == Kind::Field(OmlType::UInt32) => Cell::UInt(i as u64),
            Kind::Time | Kind::Field(OmlType::Double) => Cell::Real(i as f64),
            _ => Cell::Int(i),
        },
        V::Real(f) => Cell::Real(f),
        V::Text(t) => Cell::Text(text(t)),
        // uint64 above 2^63-1: 8 bytes, big-endian (docs/storage.md).
        V::Blob(b) if is_unsigned64(kind) && b.len() == 8 => {
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            Cell::UInt(u64::from_be_bytes(a))
        }
        V::Blob(b) => Cell::Bytes(b.to_vec()),
    }
}

/// A PostgreSQL value of a column of `kind`, read as text (`::text`), which
/// is exact for NUMERIC(20,0) and FLOAT8.
pub fn pg_cell(v: Option<&str>, kind: Kind) -> Cell {
    let Some(v) = v else { return Cell::Null };
    let parsed = match kind {
        Kind::Meta => v.parse().ok().map(Cell::Int),
        Kind::Time => v.parse().ok().map(Cell::Real),
        Kind::Field(t) => match t {
            OmlType::Int32 | OmlType::Int64 => v.parse().ok().map(Cell::Int),
            OmlType::UInt32 | OmlType::UInt64 | OmlType::Guid => v.parse().ok().map(Cell::UInt),
            OmlType::Double => match v {
                "NaN" => Some(Cell::Real(f64::NAN)),
                "Infinity" => Some(Cell::Real(f64::INFINITY)),
                "-Infinity" => Some(Cell::Real(f64::NEG_INFINITY)),
                _ => v.parse().ok().map(Cell::Real),
            },
            OmlType::Bool => Some(Cell::Bool(v == "t" || v == "true")),
            OmlType::Blob => v.strip_prefix("\\x").and_then(hex).map(Cell::Bytes),
            _ => None,
        },
    };
    parsed.unwrap_or_else(|| Cell::Text(v.to_owned()))
}

fn hex(h: &str) -> Option<Vec<u8>> {
    if !h.len().is_multiple_of(2) {
        return None;
    }
    (0..h.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(h.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::types::ValueRef;

    #[test]
    fn unsigned_blobs_and_numeric_text_are_exact() {
        let u = Kind::Field(OmlType::UInt64);
        let big = u64::MAX.to_be_bytes();
        assert_eq!(sqlite_cell(ValueRef::Blob(&big), u), Cell::UInt(u64::MAX));
        assert_eq!(
            pg_cell(Some("18446744073709551615"), u),
            Cell::UInt(u64::MAX)
        );
        assert_eq!(
            pg_cell(Some("\\x00ff"), Kind::Field(OmlType::Blob)),
            Cell::Bytes(vec![0, 255])
        );
    }
}
