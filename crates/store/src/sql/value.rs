//! Values bound to statement parameters, and how SQLite takes each one.
//! How PostgreSQL takes them is up to the caller (see [`super`]).

use rusqlite::types::{ToSqlOutput, Value as SqlValue, ValueRef};

use crate::sqlite::values::unsigned64;

/// A value bound to a parameter (the manager also reads columns back as
/// these).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// SQL NULL.
    Null,
    /// A signed integer (ids, Unix seconds, versions, int fields).
    Int(i64),
    /// An unsigned 64-bit integer (uint64 and guid fields).
    UInt(u64),
    /// A double (timestamps, double fields).
    Real(f64),
    /// Text.
    Text(String),
    /// A boolean.
    Bool(bool),
    /// Bytes.
    Blob(Vec<u8>),
}

impl Value {
    /// What it is, for error messages ("expected text, found an integer").
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "NULL",
            Value::Int(_) => "an integer",
            Value::UInt(_) => "an unsigned integer",
            Value::Real(_) => "a real",
            Value::Text(_) => "text",
            Value::Bool(_) => "a boolean",
            Value::Blob(_) => "bytes",
        }
    }
}

/// As the store writes fields: a boolean as 0/1, an unsigned integer
/// above 2^63−1 as its 8 big-endian bytes ([`unsigned64`]), NaN as NULL
/// (which is what SQLite makes of a NaN anyway: it has none).
impl rusqlite::ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        let owned = ToSqlOutput::Owned;
        Ok(match self {
            Value::Null => owned(SqlValue::Null),
            Value::Int(i) => owned(SqlValue::Integer(*i)),
            Value::UInt(u) => unsigned64(*u),
            Value::Real(f) if f.is_nan() => owned(SqlValue::Null),
            Value::Real(f) => owned(SqlValue::Real(*f)),
            Value::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
            Value::Bool(b) => owned(SqlValue::Integer(i64::from(*b))),
            Value::Blob(b) => ToSqlOutput::Borrowed(ValueRef::Blob(b)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What SQLite stored for `v`: its type and its SQL literal.
    fn stored(c: &rusqlite::Connection, v: &dyn rusqlite::ToSql) -> (String, String) {
        c.query_row("SELECT typeof(?1), quote(?1)", (v,), |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap()
    }

    #[test]
    fn sqlite_takes_each_value_as_the_store_writes_it() {
        let c = rusqlite::Connection::open_in_memory().unwrap();
        let cases = [
            (Value::Null, "null", "NULL"),
            (Value::Int(-5), "integer", "-5"),
            (Value::UInt(7), "integer", "7"),
            (
                Value::UInt(i64::MAX as u64),
                "integer",
                "9223372036854775807",
            ),
            (Value::UInt(u64::MAX), "blob", "X'FFFFFFFFFFFFFFFF'"),
            (Value::UInt(1 << 63), "blob", "X'8000000000000000'"),
            (Value::Real(0.5), "real", "0.5"),
            (Value::Real(f64::NAN), "null", "NULL"),
            (Value::Text("it's é".into()), "text", "'it''s é'"),
            (Value::Bool(true), "integer", "1"),
            (Value::Bool(false), "integer", "0"),
            (Value::Blob(vec![0, 255]), "blob", "X'00FF'"),
        ];
        for (v, ty, literal) in cases {
            assert_eq!(stored(&c, &v), (ty.to_owned(), literal.to_owned()), "{v:?}");
        }
        // A NaN bound as a plain REAL is stored as NULL too.
        assert_eq!(
            stored(&c, &f64::NAN),
            ("null".to_owned(), "NULL".to_owned())
        );
    }
}
