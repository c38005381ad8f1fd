//! Text tuple encoder.

use base64::Engine as _;

use super::escape::escape_into;
use crate::error::EncodeError;
use crate::value::ValueRef;

/// Appends a double in the shortest form that reads back exactly;
/// `nan`, `inf` and `-inf` for the special values.
pub fn put_double(out: &mut Vec<u8>, v: f64) {
    if v.is_nan() {
        out.extend_from_slice(b"nan");
    } else if v.is_infinite() {
        out.extend_from_slice(if v > 0.0 { b"inf" } else { b"-inf" });
    } else {
        out.extend_from_slice(ryu::Buffer::new().format_finite(v).as_bytes());
    }
}

fn put_int(out: &mut Vec<u8>, v: impl itoa::Integer) {
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

fn put_vec<T: Copy>(out: &mut Vec<u8>, items: &[T], put: impl Fn(&mut Vec<u8>, T)) {
    put_int(out, items.len());
    for &x in items {
        out.push(b' ');
        put(out, x);
    }
}

/// Appends one value in text form (no separators around it).
pub fn encode_value(out: &mut Vec<u8>, v: ValueRef<'_>) {
    match v {
        ValueRef::Int32(x) => put_int(out, x),
        ValueRef::UInt32(x) => put_int(out, x),
        ValueRef::Int64(x) => put_int(out, x),
        ValueRef::UInt64(x) | ValueRef::Guid(x) => put_int(out, x),
        ValueRef::Double(x) => put_double(out, x),
        ValueRef::String(s) => escape_into(out, s.as_bytes()),
        ValueRef::Blob(b) => {
            let start = out.len();
            let n = base64::encoded_len(b.len(), true).unwrap_or(0);
            out.resize(start + n, 0);
            let written = base64::engine::general_purpose::STANDARD
                .encode_slice(b, &mut out[start..])
                .unwrap_or(0);
            out.truncate(start + written);
        }
        ValueRef::Bool(b) => out.push(if b { b'T' } else { b'F' }),
        ValueRef::VecDouble(v) => put_vec(out, v, put_double),
        ValueRef::VecInt32(v) => put_vec(out, v, put_int),
        ValueRef::VecUInt32(v) => put_vec(out, v, put_int),
        ValueRef::VecInt64(v) => put_vec(out, v, put_int),
        ValueRef::VecUInt64(v) => put_vec(out, v, put_int),
        // liboml2 writes vector booleans as True/False (scalars as T/F).
        ValueRef::VecBool(v) => put_vec(out, v, |o, b| {
            o.extend_from_slice(if b { b"True" } else { b"False" })
        }),
    }
}

/// Appends one tuple as a text line: `ts TAB index TAB seq (TAB value)* LF`.
/// A vector of more than 65535 elements is refused (decoders read at most
/// that many); on error nothing is appended.
pub fn encode_tuple<'a, I>(
    out: &mut Vec<u8>,
    index: u32,
    seq: i64,
    ts: f64,
    values: I,
) -> Result<(), EncodeError>
where
    I: IntoIterator<Item = ValueRef<'a>>,
{
    let start = out.len();
    put_double(out, ts);
    out.push(b'\t');
    put_int(out, index);
    out.push(b'\t');
    put_int(out, seq);
    for v in values {
        if let Some(n) = vector_len(&v).filter(|&n| n > usize::from(u16::MAX)) {
            out.truncate(start);
            return Err(EncodeError::VectorTooLong(n));
        }
        out.push(b'\t');
        encode_value(out, v);
    }
    out.push(b'\n');
    Ok(())
}

fn vector_len(v: &ValueRef<'_>) -> Option<usize> {
    Some(match v {
        ValueRef::VecDouble(x) => x.len(),
        ValueRef::VecInt32(x) => x.len(),
        ValueRef::VecUInt32(x) => x.len(),
        ValueRef::VecInt64(x) => x.len(),
        ValueRef::VecUInt64(x) => x.len(),
        ValueRef::VecBool(x) => x.len(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oversized_vectors_are_refused_and_nothing_is_written() {
        let mut out = b"keep".to_vec();
        let big = vec![0i32; 65536];
        let err = encode_tuple(
            &mut out,
            1,
            1,
            0.5,
            [ValueRef::Int32(1), ValueRef::VecInt32(&big)],
        );
        assert_eq!(err, Err(EncodeError::VectorTooLong(65536)));
        assert_eq!(out, b"keep");
        let ok = vec![0i32; 65535];
        assert!(encode_tuple(&mut out, 1, 1, 0.5, [ValueRef::VecInt32(&ok)]).is_ok());
    }
}
