//! Binary tuple encoder.

use super::codes::*;
use super::double;
use crate::error::EncodeError;
use crate::value::ValueRef;

/// How scalar doubles (values and timestamps) are written.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum DoubleEncoding {
    /// DOUBLE_T, as the reference writes it (30 mantissa bits, spec §8.4):
    /// what every OMSP server reads.
    #[default]
    Reference,
    /// DOUBLE64_T, the full binary64 value: only for a receiver that has
    /// confirmed it (spec §3.8); a stock server refuses it.
    Exact,
}

/// Encodes tuples as binary packets. It remembers whether it has switched to
/// long packets: like liboml2, once one tuple needed a 32-bit length, every
/// later packet of the session is long.
#[derive(Debug, Default, Clone)]
pub struct BinaryEncoder {
    long: bool,
    /// How scalar doubles are written.
    doubles: DoubleEncoding,
}

/// Writes a double as DOUBLE_T (or DOUBLE_NAN when it cannot be represented).
pub fn put_double(out: &mut Vec<u8>, v: f64) {
    match double::encode(v) {
        Some((m, x)) => {
            out.push(DOUBLE_T);
            out.extend_from_slice(&m.to_be_bytes());
            out.push(x as u8);
        }
        None => out.extend_from_slice(&[DOUBLE_NAN, 0, 0, 0, 0, 0]),
    }
}

/// Writes a double as DOUBLE64_T: exact, ±0, subnormals, ±Inf and NaN kept.
pub fn put_double64(out: &mut Vec<u8>, v: f64) {
    out.push(DOUBLE64_T);
    out.extend_from_slice(&v.to_be_bytes());
}

fn put_scalar_double(out: &mut Vec<u8>, v: f64, doubles: DoubleEncoding) {
    match doubles {
        DoubleEncoding::Reference => put_double(out, v),
        DoubleEncoding::Exact => put_double64(out, v),
    }
}

fn put_vec<T: Copy, const N: usize>(
    out: &mut Vec<u8>,
    code: u8,
    items: &[T],
    to_be: impl Fn(T) -> [u8; N],
) -> Result<(), EncodeError> {
    let n = u16::try_from(items.len()).map_err(|_| EncodeError::VectorTooLong(items.len()))?;
    out.reserve(4 + N * items.len());
    out.push(VECTOR_T);
    out.push(code);
    out.extend_from_slice(&n.to_be_bytes());
    for &x in items {
        out.extend_from_slice(&to_be(x));
    }
    Ok(())
}

/// Appends one typed value (type code and payload), doubles as the
/// reference writes them.
pub fn encode_value(out: &mut Vec<u8>, v: ValueRef<'_>) -> Result<(), EncodeError> {
    encode_value_as(out, v, DoubleEncoding::Reference)
}

/// Appends one typed value, scalar doubles written as `doubles` says.
pub fn encode_value_as(
    out: &mut Vec<u8>,
    v: ValueRef<'_>,
    doubles: DoubleEncoding,
) -> Result<(), EncodeError> {
    match v {
        ValueRef::Int32(x) => {
            out.push(INT32_T);
            out.extend_from_slice(&x.to_be_bytes());
        }
        ValueRef::UInt32(x) => {
            out.push(UINT32_T);
            out.extend_from_slice(&x.to_be_bytes());
        }
        ValueRef::Int64(x) => {
            out.push(INT64_T);
            out.extend_from_slice(&x.to_be_bytes());
        }
        ValueRef::UInt64(x) => {
            out.push(UINT64_T);
            out.extend_from_slice(&x.to_be_bytes());
        }
        ValueRef::Double(x) => put_scalar_double(out, x, doubles),
        ValueRef::String(s) => {
            if s.len() > MAX_STRING_LEN {
                return Err(EncodeError::StringTooLong(s.len()));
            }
            out.push(STRING_T);
            out.push(s.len() as u8);
            out.extend_from_slice(s.as_bytes());
        }
        ValueRef::Blob(b) => {
            let n = u32::try_from(b.len()).map_err(|_| EncodeError::BlobTooLong(b.len()))?;
            out.push(BLOB_T);
            out.extend_from_slice(&n.to_be_bytes());
            out.extend_from_slice(b);
        }
        ValueRef::Guid(x) => {
            out.push(GUID_T);
            out.extend_from_slice(&x.to_be_bytes());
        }
        ValueRef::Bool(b) => out.push(if b { BOOL_TRUE_T } else { BOOL_FALSE_T }),
        ValueRef::VecDouble(v) => put_vec(out, DOUBLE64_T, v, |x: f64| x.to_be_bytes())?,
        ValueRef::VecInt32(v) => put_vec(out, INT32_T, v, i32::to_be_bytes)?,
        ValueRef::VecUInt32(v) => put_vec(out, UINT32_T, v, u32::to_be_bytes)?,
        ValueRef::VecInt64(v) => put_vec(out, INT64_T, v, i64::to_be_bytes)?,
        ValueRef::VecUInt64(v) => put_vec(out, UINT64_T, v, u64::to_be_bytes)?,
        ValueRef::VecBool(v) => put_vec(out, BOOL_T, v, |b: bool| {
            [if b { BOOL_TRUE_T } else { BOOL_FALSE_T }]
        })?,
    }
    Ok(())
}

impl BinaryEncoder {
    /// A new encoder for one session (short packets until one is too big).
    pub fn new() -> BinaryEncoder {
        BinaryEncoder::default()
    }

    /// True once the encoder has switched to long packets.
    pub fn is_long(&self) -> bool {
        self.long
    }

    /// Sets how scalar doubles and timestamps are written from now on.
    pub fn set_doubles(&mut self, doubles: DoubleEncoding) {
        self.doubles = doubles;
    }

    /// How scalar doubles and timestamps are written.
    pub fn doubles(&self) -> DoubleEncoding {
        self.doubles
    }

    /// Appends one tuple as a packet. `seq` is sent as int32 and wraps past
    /// 2^31−1 as in liboml2. On error nothing is appended.
    pub fn encode_tuple<'a, I>(
        &mut self,
        out: &mut Vec<u8>,
        index: u32,
        seq: i64,
        ts: f64,
        values: I,
    ) -> Result<(), EncodeError>
    where
        I: IntoIterator<Item = ValueRef<'a>>,
        I::IntoIter: ExactSizeIterator,
    {
        let values = values.into_iter();
        let idx = u8::try_from(index).map_err(|_| EncodeError::IndexTooLarge(index))?;
        let n = u8::try_from(values.len()).map_err(|_| EncodeError::TooManyValues(values.len()))?;
        let start = out.len();
        out.extend_from_slice(&SYNC);
        if self.long {
            out.extend_from_slice(&[PACKET_LONG, 0, 0, 0, 0]);
        } else {
            out.extend_from_slice(&[PACKET_SHORT, 0, 0]);
        }
        let body = out.len();
        out.extend_from_slice(&[n, idx, INT32_T]);
        out.extend_from_slice(&(seq as i32).to_be_bytes());
        put_scalar_double(out, ts, self.doubles);
        for v in values {
            if let Err(e) = encode_value_as(out, v, self.doubles) {
                out.truncate(start);
                return Err(e);
            }
        }
        let len = out.len() - body;
        if self.long {
            out[start + 3..body].copy_from_slice(&(len as u32).to_be_bytes());
        } else if let Ok(short) = u16::try_from(len) {
            out[start + 3..body].copy_from_slice(&short.to_be_bytes());
        } else {
            // Too big for a short packet: rewrite as long, and stay long.
            out[start + 2] = PACKET_LONG;
            out.splice(start + 3..body, (len as u32).to_be_bytes());
            self.long = true;
        }
        Ok(())
    }
}
