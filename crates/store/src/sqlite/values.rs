//! How each OML value is represented in SQLite (exactly, unlike the reference).
//!
//! | OML type | stored as |
//! |---|---|
//! | int32, int64, uint32, bool | INTEGER (uint32 as its non-negative value; bool 0/1) |
//! | uint64, guid ≤ 2^63−1 | INTEGER |
//! | uint64, guid ≥ 2^63 | 8-byte big-endian BLOB (see below) |
//! | double | REAL; NaN as NULL (SQLite has no NaN) |
//! | string, blob | TEXT, BLOB |
//! | vectors | TEXT `[ a, b, c ]`; empty `[ ]` |
//!
//! SQLite integers are signed 64-bit. A decimal TEXT such as
//! `'18446744073709551615'` bound to an INTEGER-affinity column (which
//! `UNSIGNED BIGINT` is) is *converted to REAL* and loses its low digits
//! (tested in `tests/unsigned.rs`), so the values the signed range cannot
//! hold are stored as BLOBs of their 8 big-endian bytes. SQLite orders every
//! BLOB after every number, and BLOBs of equal length by their bytes, so
//! `ORDER BY`, `MAX()` and comparisons with integer literals remain correct
//! over the whole unsigned range.

use omsp::Value;
use rusqlite::types::{Null, ToSqlOutput, Value as SqlValue, ValueRef as SqlRef};
use rusqlite::Statement;

/// The SQLite value for an unsigned 64-bit integer (uint64 or guid).
pub fn unsigned64(v: u64) -> ToSqlOutput<'static> {
    match i64::try_from(v) {
        Ok(i) => ToSqlOutput::Owned(SqlValue::Integer(i)),
        Err(_) => ToSqlOutput::Owned(SqlValue::Blob(v.to_be_bytes().to_vec())),
    }
}

/// Reads back an unsigned 64-bit value stored by [`unsigned64`].
pub fn read_unsigned64(v: SqlRef<'_>) -> Option<u64> {
    match v {
        SqlRef::Integer(i) => u64::try_from(i).ok(),
        SqlRef::Blob(b) => Some(u64::from_be_bytes(b.try_into().ok()?)),
        _ => None,
    }
}

/// The SQLite value for one field value.
pub fn to_sql(v: &Value) -> ToSqlOutput<'_> {
    let int = |i: i64| ToSqlOutput::Owned(SqlValue::Integer(i));
    match v {
        Value::Int32(i) => int(i64::from(*i)),
        Value::UInt32(u) => int(i64::from(*u)),
        Value::Int64(i) => int(*i),
        Value::UInt64(u) | Value::Guid(u) => unsigned64(*u),
        Value::Bool(b) => int(i64::from(*b)),
        Value::Double(d) if d.is_nan() => ToSqlOutput::Owned(SqlValue::Null),
        Value::Double(d) => ToSqlOutput::Owned(SqlValue::Real(*d)),
        Value::String(s) => ToSqlOutput::Borrowed(SqlRef::Text(s.as_bytes())),
        Value::Blob(b) => ToSqlOutput::Borrowed(SqlRef::Blob(b)),
        Value::VecDouble(x) => text(vector(x, |d, out| format_double(*d, out))),
        Value::VecInt32(x) => text(vector(x, |i, out| out.push_str(&i.to_string()))),
        Value::VecUInt32(x) => text(vector(x, |i, out| out.push_str(&i.to_string()))),
        Value::VecInt64(x) => text(vector(x, |i, out| out.push_str(&i.to_string()))),
        Value::VecUInt64(x) => text(vector(x, |i, out| out.push_str(&i.to_string()))),
        Value::VecBool(x) => text(vector(x, |b, out| {
            out.push_str(if *b { "true" } else { "false" })
        })),
    }
}

/// Binds one field value to parameter `index` of `stmt`, as [`to_sql`]
/// would represent it, but without building an intermediate value: this is
/// the insert hot path (scalars are bound natively, strings and blobs are
/// borrowed, a big unsigned value's 8 bytes live on the stack).
pub fn bind(stmt: &mut Statement<'_>, index: usize, v: &Value) -> rusqlite::Result<()> {
    match v {
        Value::Int32(i) => stmt.raw_bind_parameter(index, i64::from(*i)),
        Value::UInt32(u) => stmt.raw_bind_parameter(index, i64::from(*u)),
        Value::Int64(i) => stmt.raw_bind_parameter(index, *i),
        Value::UInt64(u) | Value::Guid(u) => match i64::try_from(*u) {
            Ok(i) => stmt.raw_bind_parameter(index, i),
            Err(_) => stmt.raw_bind_parameter(index, u.to_be_bytes()),
        },
        Value::Bool(b) => stmt.raw_bind_parameter(index, i64::from(*b)),
        Value::Double(d) if d.is_nan() => stmt.raw_bind_parameter(index, Null),
        Value::Double(d) => stmt.raw_bind_parameter(index, *d),
        Value::String(s) => stmt.raw_bind_parameter(index, s.as_str()),
        Value::Blob(b) => stmt.raw_bind_parameter(index, b.as_slice()),
        vector => stmt.raw_bind_parameter(index, to_sql(vector)),
    }
}

fn text(s: String) -> ToSqlOutput<'static> {
    ToSqlOutput::Owned(SqlValue::Text(s))
}

/// `[ a, b, c ]` (the reference's layout), `[ ]` when empty (the reference
/// stores an empty string, which no JSON reader accepts).
fn vector<T>(items: &[T], mut fmt: impl FnMut(&T, &mut String)) -> String {
    if items.is_empty() {
        return "[ ]".to_owned();
    }
    let mut out = String::from("[ ");
    for (i, x) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        fmt(x, &mut out);
    }
    out.push_str(" ]");
    out
}

/// Shortest text that reads back as the same double: positional between
/// 1e-5 and 1e16 (`10000000000`, `1.5`, as the reference prints them), else
/// with an exponent (`1e-300`). NaN and ±infinity are written `NaN`,
/// `Infinity`, `-Infinity`, which Python's and JavaScript's JSON readers accept.
pub fn format_double(d: f64, out: &mut String) {
    if d.is_nan() {
        out.push_str("NaN");
    } else if d.is_infinite() {
        out.push_str(if d > 0.0 { "Infinity" } else { "-Infinity" });
    } else if d == 0.0 || (1e-5..1e16).contains(&d.abs()) {
        out.push_str(&d.to_string());
    } else {
        out.push_str(ryu::Buffer::new().format_finite(d));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vtext(v: Value) -> String {
        match to_sql(&v) {
            ToSqlOutput::Owned(SqlValue::Text(s)) => s,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn vectors_as_the_reference_prints_them() {
        assert_eq!(
            vtext(Value::VecDouble(vec![1.5, -2.25, 1e10])),
            "[ 1.5, -2.25, 10000000000 ]"
        );
        assert_eq!(
            vtext(Value::VecUInt64(vec![0, 1, u64::MAX])),
            "[ 0, 1, 18446744073709551615 ]"
        );
        assert_eq!(vtext(Value::VecBool(vec![true, false])), "[ true, false ]");
        assert_eq!(vtext(Value::VecInt32(vec![])), "[ ]");
    }

    #[test]
    fn doubles_round_trip_where_the_reference_does_not() {
        for d in [
            -1.23456789012345e-300,
            1e-300,
            0.1,
            std::f64::consts::PI,
            1e16,
            -0.0,
        ] {
            let mut s = String::new();
            format_double(d, &mut s);
            assert_eq!(s.parse::<f64>().unwrap().to_bits(), d.to_bits(), "{s}");
        }
        let mut s = String::new();
        format_double(f64::NEG_INFINITY, &mut s);
        assert_eq!(s, "-Infinity");
    }

    #[test]
    fn bind_stores_what_to_sql_describes() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let values = [
            Value::Int32(-5),
            Value::UInt32(u32::MAX),
            Value::Int64(i64::MIN),
            Value::UInt64(u64::MAX),
            Value::Guid(7),
            Value::Bool(true),
            Value::Double(f64::NAN),
            Value::Double(-0.5),
            Value::String("a\tb".into()),
            Value::Blob(vec![0, 1]),
            Value::VecInt32(vec![1, 2]),
        ];
        for v in values {
            let mut stmt = conn.prepare("SELECT ?1").unwrap();
            bind(&mut stmt, 1, &v).unwrap();
            let mut rows = stmt.raw_query();
            let got = rows.next().unwrap().unwrap().get::<_, SqlValue>(0).unwrap();
            let want = match to_sql(&v) {
                ToSqlOutput::Owned(o) => o,
                ToSqlOutput::Borrowed(b) => b.into(),
                other => panic!("{other:?}"),
            };
            assert_eq!(got, want, "{v:?}");
        }
    }

    #[test]
    fn unsigned_round_trip() {
        for u in [0, 1, i64::MAX as u64, 1 << 63, u64::MAX] {
            let out = unsigned64(u);
            let ToSqlOutput::Owned(v) = out else { panic!() };
            assert_eq!(read_unsigned64(SqlRef::from(&v)), Some(u));
        }
    }
}
