//! The column types a stream table really has, and how each value is
//! written into them with binary COPY.
//!
//! Binary COPY carries no conversion: an INT8 sent into an INT4 column is
//! refused (`incorrect binary data format`). Tables we create have the types
//! of [`super::ddl`]; tables created by the reference oml2-server (INT4
//! `oml_seq`, BIGINT uint64) or by an older streamgauge differ. So the
//! types are read from `pg_attribute` whenever a table is first used, and
//! every value is encoded for its column: exactly when the type allows,
//! refused (that row only, with the reason) when it cannot hold the value.

use omsp::{OmlType, Value};

/// How uint64 and guid fields are laid out in new tables.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Uint64Layout {
    /// `NUMERIC(20,0)`: exact and correctly ordered over 0 … 2^64−1, but
    /// without integer operators (`&`, integer `/`) and read as decimals.
    #[default]
    Numeric,
    /// `BIGINT` as the reference: values from 2^63 on are stored as their
    /// two's complement (negative), so they order and compare as signed.
    Bigint,
}

impl Uint64Layout {
    /// The column type of a uint64 or guid field.
    pub fn sql_type(self) -> &'static str {
        match self {
            Uint64Layout::Numeric => "NUMERIC(20,0)",
            Uint64Layout::Bigint => "INT8",
        }
    }
}

/// A column type this writer can fill.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    /// `int2`.
    Int2,
    /// `int4`.
    Int4,
    /// `int8`.
    Int8,
    /// `numeric` (integers only are written into it).
    Numeric,
    /// `float4`.
    Float4,
    /// `float8`.
    Float8,
    /// `boolean`.
    Bool,
    /// `bytea`.
    Bytea,
    /// `text`, `varchar`, `bpchar`, `name` (same binary form).
    Text,
    /// Anything else: rows are refused with the type named.
    Other(&'static str),
}

impl Column {
    /// The column of a type as `pg_type.typname` names it.
    pub fn from_typname(name: &str) -> Column {
        match name {
            "int2" => Column::Int2,
            "int4" => Column::Int4,
            "int8" => Column::Int8,
            "numeric" => Column::Numeric,
            "float4" => Column::Float4,
            "float8" => Column::Float8,
            "bool" => Column::Bool,
            "bytea" => Column::Bytea,
            "text" | "varchar" | "bpchar" | "name" => Column::Text,
            _ => Column::Other("an unsupported type"),
        }
    }

    /// The column our DDL gives an OML type.
    pub fn of(ty: OmlType, uint64: Uint64Layout) -> Column {
        match ty {
            OmlType::Int32 => Column::Int4,
            OmlType::UInt32 | OmlType::Int64 => Column::Int8,
            OmlType::UInt64 | OmlType::Guid => match uint64 {
                Uint64Layout::Numeric => Column::Numeric,
                Uint64Layout::Bigint => Column::Int8,
            },
            OmlType::Double => Column::Float8,
            OmlType::Bool => Column::Bool,
            OmlType::Blob => Column::Bytea,
            _ => Column::Text,
        }
    }
}

/// The types of a table's `oml_sender_id`, `oml_seq` and field columns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// `oml_sender_id`.
    pub sender: Column,
    /// `oml_seq`.
    pub seq: Column,
    /// `oml_ts_client` and `oml_ts_server`.
    pub ts: Column,
    /// Each field, in schema order.
    pub fields: Vec<Column>,
}

impl Layout {
    /// The layout of a table our DDL creates.
    pub fn ours(schema: &omsp::Schema, uint64: Uint64Layout) -> Layout {
        Layout {
            sender: Column::Int4,
            seq: Column::Int8,
            ts: Column::Float8,
            fields: schema
                .fields
                .iter()
                .map(|f| Column::of(f.ty, uint64))
                .collect(),
        }
    }
}

/// Why a value does not fit its column.
pub type Misfit = String;

/// An integer in an integer, numeric, float or text column.
pub fn integer(out: &mut Vec<u8>, col: Column, v: i128) -> Result<(), Misfit> {
    let range = || format!("{v} is out of range for {col:?}");
    match col {
        Column::Int2 => field(out, &i16::try_from(v).map_err(|_| range())?.to_be_bytes()),
        Column::Int4 => field(out, &i32::try_from(v).map_err(|_| range())?.to_be_bytes()),
        // uint64 from 2^63 on: two's complement, as the reference's layout.
        Column::Int8 => match i64::try_from(v) {
            Ok(i) => field(out, &i.to_be_bytes()),
            Err(_) => match u64::try_from(v) {
                Ok(u) => field(out, &(u as i64).to_be_bytes()),
                Err(_) => return Err(range()),
            },
        },
        Column::Numeric => match u64::try_from(v) {
            Ok(u) => field(out, &super::copy::numeric(u)),
            Err(_) => field(out, &negative_numeric(v).ok_or_else(range)?),
        },
        Column::Float8 => field(out, &(v as f64).to_be_bytes()),
        Column::Float4 => field(out, &(v as f32).to_be_bytes()),
        Column::Text => field(out, v.to_string().as_bytes()),
        Column::Bool => field(out, &[u8::from(v != 0)]),
        other => return Err(format!("an integer cannot go into a {other:?} column")),
    }
    Ok(())
}

/// NUMERIC send format of a negative integer (magnitude below 2^64).
fn negative_numeric(v: i128) -> Option<Vec<u8>> {
    let mut b = super::copy::numeric(u64::try_from(v.checked_neg()?).ok()?);
    // Sign word (bytes 4..6): 0x4000 is negative.
    b[4..6].copy_from_slice(&0x4000u16.to_be_bytes());
    Some(b)
}

/// A double in a float, numeric-free column.
pub fn double(out: &mut Vec<u8>, col: Column, d: f64) -> Result<(), Misfit> {
    match col {
        Column::Float8 => field(out, &d.to_be_bytes()),
        Column::Float4 => field(out, &(d as f32).to_be_bytes()),
        Column::Text => field(out, format!("{d:?}").as_bytes()),
        other => return Err(format!("a double cannot go into a {other:?} column")),
    }
    Ok(())
}

/// A field value in its column.
pub fn value(out: &mut Vec<u8>, col: Column, v: &Value, text: &str) -> Result<(), Misfit> {
    let bytes: &[u8] = match v {
        Value::Int32(i) => return integer(out, col, i128::from(*i)),
        Value::UInt32(u) => return integer(out, col, i128::from(*u)),
        Value::Int64(i) => return integer(out, col, i128::from(*i)),
        Value::UInt64(u) | Value::Guid(u) => return integer(out, col, i128::from(*u)),
        Value::Double(d) => return double(out, col, *d),
        Value::Bool(b) => match col {
            Column::Bool => &[u8::from(*b)],
            Column::Text if *b => b"true",
            Column::Text => b"false",
            c => return integer(out, c, i128::from(*b)),
        },
        Value::Blob(b) => match col {
            Column::Bytea => b,
            other => return Err(format!("a blob cannot go into a {other:?} column")),
        },
        // Strings and vectors: their text (computed by the caller).
        _ => match col {
            Column::Text | Column::Bytea => text.as_bytes(),
            other => return Err(format!("text cannot go into a {other:?} column")),
        },
    };
    field(out, bytes);
    Ok(())
}

/// A length-prefixed field.
pub fn field(out: &mut Vec<u8>, bytes: &[u8]) {
    // Callers keep values far below 2 GiB (the decoder's packet bound).
    let len = i32::try_from(bytes.len()).unwrap_or(i32::MAX);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(col: Column, v: i128) -> Result<Vec<u8>, Misfit> {
        let mut out = Vec::new();
        integer(&mut out, col, v).map(|()| out)
    }

    #[test]
    fn integers_fit_or_are_refused() {
        assert_eq!(enc(Column::Int4, 7).unwrap(), [0, 0, 0, 4, 0, 0, 0, 7]);
        assert!(enc(Column::Int4, 1 << 31).is_err());
        // Two's complement in BIGINT, as the reference's layout.
        let top = enc(Column::Int8, i128::from(u64::MAX)).unwrap();
        assert_eq!(&top[4..], &(-1i64).to_be_bytes());
        assert!(enc(Column::Int8, -(1 << 70)).is_err());
        let neg = enc(Column::Numeric, -10_000).unwrap();
        assert_eq!(&neg[4..], &[0, 1, 0, 1, 0x40, 0, 0, 0, 0, 1]);
    }

    #[test]
    fn typnames_map() {
        assert_eq!(Column::from_typname("int4"), Column::Int4);
        assert_eq!(Column::from_typname("varchar"), Column::Text);
        assert!(matches!(
            Column::from_typname("timestamptz"),
            Column::Other(_)
        ));
        let s = omsp::Schema::parse("1 t a:uint64 b:guid").unwrap();
        assert_eq!(
            Layout::ours(&s, Uint64Layout::Bigint).fields,
            [Column::Int8, Column::Int8]
        );
    }
}
