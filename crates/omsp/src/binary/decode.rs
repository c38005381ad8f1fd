//! Binary packet body decoder (framing lives in [`crate::decoder`]).

use super::codes::*;
use super::double;
use crate::error::{ErrorKind, ValueError};
use crate::sample::Sample;
use crate::table::SchemaTable;
use crate::types::OmlType;
use crate::value::Value;

/// A bounds-checked reader over one packet body.
struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

/// The body ended before a value did.
struct Short;

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Short> {
        let s = self
            .b
            .get(self.pos..self.pos.checked_add(n).ok_or(Short)?)
            .ok_or(Short)?;
        self.pos += n;
        Ok(s)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], Short> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }
    fn u8(&mut self) -> Result<u8, Short> {
        Ok(self.take(1)?[0])
    }
}

/// Why one value failed: ran out of body, or a content problem.
enum Fail {
    Short,
    Bad(String),
}

impl From<Short> for Fail {
    fn from(_: Short) -> Fail {
        Fail::Short
    }
}

fn vector<T, const N: usize>(
    r: &mut Reader<'_>,
    conv: impl Fn([u8; N]) -> T,
) -> Result<Vec<T>, Fail> {
    let n = u16::from_be_bytes(r.array()?) as usize;
    let bytes = r.take(n * N)?;
    Ok(bytes
        .chunks_exact(N)
        .map(|c| {
            let mut a = [0u8; N];
            a.copy_from_slice(c);
            conv(a)
        })
        .collect())
}

fn code_name(code: u8) -> String {
    let name = match code {
        LONG_T => "LONG_T",
        DOUBLE_T => "DOUBLE_T",
        DOUBLE_NAN => "DOUBLE_NAN",
        STRING_T => "STRING_T",
        INT32_T => "INT32_T",
        UINT32_T => "UINT32_T",
        INT64_T => "INT64_T",
        UINT64_T => "UINT64_T",
        BLOB_T => "BLOB_T",
        GUID_T => "GUID_T",
        BOOL_FALSE_T => "BOOL_FALSE_T",
        BOOL_TRUE_T => "BOOL_TRUE_T",
        VECTOR_T => "VECTOR_T",
        BOOL_T => "BOOL_T",
        DOUBLE64_T => "DOUBLE64_T",
        _ => return format!("unknown type code 0x{code:02x}"),
    };
    format!("type code 0x{code:02x} ({name})")
}

/// Reads a double in any of the scalar encodings a decoder accepts.
fn read_double(r: &mut Reader<'_>, code: u8) -> Result<Option<f64>, Short> {
    Ok(match code {
        DOUBLE_T => {
            let m = i32::from_be_bytes(r.array()?);
            Some(double::decode(m, r.u8()? as i8))
        }
        DOUBLE_NAN => {
            r.take(5)?;
            Some(f64::NAN)
        }
        DOUBLE64_T => Some(f64::from_be_bytes(r.array()?)),
        _ => None,
    })
}

fn read_value(r: &mut Reader<'_>, ty: OmlType) -> Result<Value, Fail> {
    let code = r.u8()?;
    let v = match (ty, code) {
        (OmlType::Int32, INT32_T | LONG_T) => Value::Int32(i32::from_be_bytes(r.array()?)),
        (OmlType::UInt32, UINT32_T) => Value::UInt32(u32::from_be_bytes(r.array()?)),
        (OmlType::Int64, INT64_T) => Value::Int64(i64::from_be_bytes(r.array()?)),
        (OmlType::UInt64, UINT64_T) => Value::UInt64(u64::from_be_bytes(r.array()?)),
        (OmlType::Double, DOUBLE_T | DOUBLE_NAN | DOUBLE64_T) => {
            Value::Double(read_double(r, code)?.unwrap_or(f64::NAN))
        }
        (OmlType::String, STRING_T) => {
            let n = r.u8()? as usize;
            let b = r.take(n)?;
            // Same as from_utf8_lossy, without its slower scan in the
            // common case of valid UTF-8.
            Value::String(match std::str::from_utf8(b) {
                Ok(s) => s.to_owned(),
                Err(_) => String::from_utf8_lossy(b).into_owned(),
            })
        }
        (OmlType::Blob, BLOB_T) => {
            let n = u32::from_be_bytes(r.array()?) as usize;
            Value::Blob(r.take(n)?.to_vec())
        }
        (OmlType::Guid, GUID_T) => Value::Guid(u64::from_be_bytes(r.array()?)),
        (OmlType::Bool, BOOL_FALSE_T) => Value::Bool(false),
        (OmlType::Bool, BOOL_TRUE_T) => Value::Bool(true),
        (_, VECTOR_T) if ty.is_vector() => {
            let elt = r.u8()?;
            match (ty, elt) {
                (OmlType::VecDouble, DOUBLE64_T) => {
                    Value::VecDouble(vector(r, f64::from_be_bytes)?)
                }
                (OmlType::VecInt32, INT32_T) => Value::VecInt32(vector(r, i32::from_be_bytes)?),
                (OmlType::VecUInt32, UINT32_T) => Value::VecUInt32(vector(r, u32::from_be_bytes)?),
                (OmlType::VecInt64, INT64_T) => Value::VecInt64(vector(r, i64::from_be_bytes)?),
                (OmlType::VecUInt64, UINT64_T) => Value::VecUInt64(vector(r, u64::from_be_bytes)?),
                (OmlType::VecBool, BOOL_T) => {
                    let bytes = vector(r, |[b]: [u8; 1]| b)?;
                    if let Some(b) = bytes
                        .iter()
                        .find(|&&b| b != BOOL_TRUE_T && b != BOOL_FALSE_T)
                    {
                        return Err(Fail::Bad(format!(
                            "[bool] element byte 0x{b:02x} is neither 0x0b nor 0x0c"
                        )));
                    }
                    Value::VecBool(bytes.into_iter().map(|b| b == BOOL_TRUE_T).collect())
                }
                _ => {
                    return Err(Fail::Bad(format!(
                        "vector element {} does not match the schema",
                        code_name(elt)
                    )))
                }
            }
        }
        _ => {
            return Err(Fail::Bad(format!(
                "{} does not match the schema",
                code_name(code)
            )))
        }
    };
    Ok(v)
}

/// Decodes one packet body (everything after the length field).
pub(crate) fn decode_body(body: &[u8], table: &mut SchemaTable) -> Result<Sample, ErrorKind> {
    let mut r = Reader { b: body, pos: 0 };
    let short = |detail: &str| ErrorKind::LengthMismatch {
        declared: body.len(),
        detail: detail.to_owned(),
    };
    let (n, index) = match (r.u8(), r.u8()) {
        (Ok(n), Ok(i)) => (n as usize, u32::from(i)),
        _ => return Err(short("need at least the value count and stream index")),
    };
    let seq = match r.u8().and_then(|c| Ok((c, r.array::<4>()?))) {
        Ok((INT32_T | LONG_T, b)) => i64::from(i32::from_be_bytes(b)),
        Ok((c, _)) => {
            return Err(ErrorKind::BadBinaryPrefix(format!(
                "sequence number has {}",
                code_name(c)
            )))
        }
        Err(Short) => return Err(short("end inside the sequence number")),
    };
    let ts = match r.u8().and_then(|c| read_double(&mut r, c)) {
        Ok(Some(ts)) => ts,
        Ok(None) => {
            let c = body[r.pos - 1];
            return Err(ErrorKind::BadBinaryPrefix(format!(
                "timestamp has {}",
                code_name(c)
            )));
        }
        Err(Short) => return Err(short("end inside the timestamp")),
    };
    let schema = table
        .get(index)
        .ok_or(ErrorKind::UndeclaredStream { index })?;
    if n != schema.fields.len() {
        return Err(ErrorKind::ValueCount {
            index,
            name: schema.name.clone(),
            expected: schema.fields.len(),
            found: n,
        });
    }
    let mut values = Vec::with_capacity(n);
    for (field, f) in schema.fields.iter().enumerate() {
        match read_value(&mut r, f.ty) {
            Ok(v) => values.push(v),
            Err(Fail::Short) => return Err(short(&format!("end inside value {field}"))),
            Err(Fail::Bad(reason)) => {
                return Err(ErrorKind::BadValue {
                    index,
                    error: ValueError {
                        field,
                        ty: f.ty,
                        reason,
                    },
                })
            }
        }
    }
    if r.pos != body.len() {
        return Err(short(&format!("end after {} bytes", r.pos)));
    }
    Ok(Sample {
        stream: index,
        seq,
        ts,
        values,
    })
}
