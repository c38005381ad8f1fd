//! PostgreSQL values in the binary protocol, decoded exactly: integers,
//! FLOAT8 bit for bit, and NUMERIC(20,0) (how uint64 and guid are stored)
//! from its base-10000 digits into a `u64`, so no value is formatted as
//! text by the server and parsed again here.

use std::error::Error;

use omsp::OmlType;
use postgres::types::{FromSql, Type};

use super::cell::{Cell, Kind};

type BoxError = Box<dyn Error + Sync + Send>;

/// A value as PostgreSQL sent it, before the column's OML type is applied.
#[derive(Debug, Clone, PartialEq)]
pub enum PgValue {
    /// INT2, INT4, INT8.
    Int(i64),
    /// NUMERIC holding a non-negative integer below 2^64.
    UNum(u64),
    /// FLOAT4, FLOAT8.
    Real(f64),
    /// TEXT, VARCHAR, NAME (also vectors, stored as text).
    Text(String),
    /// BYTEA.
    Bytes(Vec<u8>),
    /// BOOLEAN.
    Bool(bool),
}

impl<'a> FromSql<'a> for PgValue {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<PgValue, BoxError> {
        Ok(match *ty {
            Type::INT2 => PgValue::Int(i16::from_sql(ty, raw)?.into()),
            Type::INT4 => PgValue::Int(i32::from_sql(ty, raw)?.into()),
            Type::INT8 => PgValue::Int(i64::from_sql(ty, raw)?),
            Type::FLOAT4 => PgValue::Real(f32::from_sql(ty, raw)?.into()),
            Type::FLOAT8 => PgValue::Real(f64::from_sql(ty, raw)?),
            Type::NUMERIC => PgValue::UNum(numeric_u64(raw)?),
            Type::BOOL => PgValue::Bool(bool::from_sql(ty, raw)?),
            Type::BYTEA => PgValue::Bytes(raw.to_vec()),
            _ => PgValue::Text(String::from_utf8(raw.to_vec())?),
        })
    }

    fn accepts(ty: &Type) -> bool {
        matches!(
            *ty,
            Type::INT2
                | Type::INT4
                | Type::INT8
                | Type::FLOAT4
                | Type::FLOAT8
                | Type::NUMERIC
                | Type::BOOL
                | Type::BYTEA
                | Type::TEXT
                | Type::VARCHAR
                | Type::BPCHAR
                | Type::NAME
        )
    }
}

/// Decodes NUMERIC's binary form (digit count, weight, sign, scale, then
/// base-10000 digits, most significant first) when it is an integer in
/// `0..2^64`; anything else is an error naming the value's shape.
pub fn numeric_u64(raw: &[u8]) -> Result<u64, BoxError> {
    let word = |i: usize| -> Result<i16, BoxError> {
        raw.get(2 * i..2 * i + 2)
            .map(|b| i16::from_be_bytes([b[0], b[1]]))
            .ok_or_else(|| "NUMERIC value truncated".into())
    };
    let (n, weight, sign) = (word(0)?, word(1)?, word(2)? as u16);
    if sign != 0 {
        return Err("NUMERIC value is negative or NaN where an unsigned integer is stored".into());
    }
    let mut v: u128 = 0;
    for i in 0..n.max(0) as usize {
        let d = word(4 + i)?;
        if !(0..10_000).contains(&d) || i as i32 > i32::from(weight) {
            return Err("NUMERIC value is not an integer".into());
        }
        v = v * 10_000 + d as u128;
    }
    // Trailing zero digits are not sent: scale up to the weight.
    for _ in i32::from(n)..=i32::from(weight) {
        v *= 10_000;
        if v > u128::from(u64::MAX) {
            break;
        }
    }
    u64::try_from(v).map_err(|_| "NUMERIC value above 2^64-1".into())
}

/// The cell of a value of a column of `kind`.
pub fn pg_binary_cell(v: Option<PgValue>, kind: Kind) -> Cell {
    let unsigned = matches!(
        kind,
        Kind::Field(OmlType::UInt32 | OmlType::UInt64 | OmlType::Guid)
    );
    match v {
        None => Cell::Null,
        Some(PgValue::Int(i)) => match kind {
            Kind::Time | Kind::Field(OmlType::Double) => Cell::Real(i as f64),
            Kind::Field(OmlType::Bool) => Cell::Bool(i != 0),
            _ if unsigned => Cell::UInt(i as u64),
            _ => Cell::Int(i),
        },
        Some(PgValue::UNum(u)) if unsigned => Cell::UInt(u),
        Some(PgValue::UNum(u)) => i64::try_from(u).map_or(Cell::UInt(u), Cell::Int),
        Some(PgValue::Real(f)) => Cell::Real(f),
        Some(PgValue::Text(t)) => Cell::Text(t),
        Some(PgValue::Bytes(b)) => Cell::Bytes(b),
        Some(PgValue::Bool(b)) => Cell::Bool(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_round_trips_through_the_stores_encoder() {
        for v in [
            0,
            1,
            9999,
            10_000,
            123_456_789,
            1 << 63,
            u64::MAX - 1,
            u64::MAX,
        ] {
            assert_eq!(
                numeric_u64(&store::postgres::copy::numeric(v)).unwrap(),
                v,
                "{v}"
            );
        }
        assert!(numeric_u64(&[0, 1, 0, 0, 0x40, 0, 0, 0, 0, 1]).is_err());
        assert!(numeric_u64(&[0, 1]).is_err());
    }
}
