//! Rewriting exact doubles as the reference encodes them.
//!
//! A streamgauge client encodes binary scalar doubles (and timestamps) as
//! DOUBLE64_T once it wants them exact (spec §3.8), but a connection whose
//! receiver has not confirmed the extension must get DOUBLE_T. Rather than
//! encode twice, its sender rewrites the packets as it writes them: each
//! scalar DOUBLE64_T becomes the DOUBLE_T (or DOUBLE_NAN) the reference
//! encoder would have produced from the same double, so a stock server
//! receives byte for byte what it received before. Every typed value says
//! its own size, so no schema is needed. A long packet stays long.

use super::codes::*;
use super::put_double;

/// Why a byte sequence could not be rewritten (it is not a sequence of
/// well-formed binary packets, which a streamgauge encoder never produces).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a well-formed binary packet at byte {offset}: {reason}")]
pub struct TranscodeError {
    /// Offset of the packet in the input.
    pub offset: usize,
    /// What is wrong.
    pub reason: &'static str,
}

/// Appends `packets` (whole binary packets, back to back) to `out`, every
/// scalar DOUBLE64_T rewritten as DOUBLE_T. On error `out` is unchanged.
pub fn to_reference(packets: &[u8], out: &mut Vec<u8>) -> Result<(), TranscodeError> {
    let start = out.len();
    let mut at = 0;
    while at < packets.len() {
        if let Err(reason) = packet(&packets[at..], out, &mut at) {
            out.truncate(start);
            return Err(TranscodeError { offset: at, reason });
        }
    }
    Ok(())
}

/// Rewrites the packet at the start of `p`; advances `at` past it.
fn packet(p: &[u8], out: &mut Vec<u8>, at: &mut usize) -> Result<(), &'static str> {
    let (head, len) = match p {
        [0xAA, 0xAA, PACKET_SHORT, a, b, ..] => {
            (SHORT_HEADER_LEN, u16::from_be_bytes([*a, *b]) as usize)
        }
        [0xAA, 0xAA, PACKET_LONG, a, b, c, d, ..] => (
            LONG_HEADER_LEN,
            u32::from_be_bytes([*a, *b, *c, *d]) as usize,
        ),
        _ => return Err("no packet header"),
    };
    let body = p.get(head..head + len).ok_or("packet cut short")?;
    let packet_start = out.len();
    out.extend_from_slice(&p[..head]);
    let body_start = out.len();
    let [n, index, rest @ ..] = body else {
        return Err("body too short");
    };
    out.extend_from_slice(&[*n, *index]);
    let mut values = rest;
    // seq, timestamp, then the values.
    for _ in 0..2 + *n as usize {
        values = value(values, out)?;
    }
    if !values.is_empty() {
        return Err("bytes after the last value");
    }
    let new_len = out.len() - body_start;
    if head == SHORT_HEADER_LEN {
        let short = u16::try_from(new_len).map_err(|_| "body grew")?;
        out[packet_start + 3..body_start].copy_from_slice(&short.to_be_bytes());
    } else {
        let long = u32::try_from(new_len).map_err(|_| "body grew")?;
        out[packet_start + 3..body_start].copy_from_slice(&long.to_be_bytes());
    }
    *at += head + len;
    Ok(())
}

/// Copies (or rewrites) the typed value at the start of `v`; returns the rest.
fn value<'a>(v: &'a [u8], out: &mut Vec<u8>) -> Result<&'a [u8], &'static str> {
    let (&code, rest) = v.split_first().ok_or("value missing")?;
    let take = |n: usize| rest.get(..n).map(|_| n).ok_or("value cut short");
    let size = match code {
        DOUBLE64_T => {
            let b: [u8; 8] = rest
                .get(..8)
                .and_then(|b| b.try_into().ok())
                .ok_or("value cut short")?;
            put_double(out, f64::from_be_bytes(b));
            return Ok(&rest[8..]);
        }
        LONG_T | INT32_T | UINT32_T => take(4)?,
        DOUBLE_T | DOUBLE_NAN => take(5)?,
        INT64_T | UINT64_T | GUID_T => take(8)?,
        BOOL_FALSE_T | BOOL_TRUE_T => 0,
        STRING_T => 1 + *rest.first().ok_or("value cut short")? as usize,
        BLOB_T => {
            let n: [u8; 4] = rest
                .get(..4)
                .and_then(|b| b.try_into().ok())
                .ok_or("value cut short")?;
            4 + u32::from_be_bytes(n) as usize
        }
        VECTOR_T => {
            let [elt, a, b, ..] = rest else {
                return Err("value cut short");
            };
            let each = match *elt {
                INT32_T | UINT32_T => 4,
                INT64_T | UINT64_T | DOUBLE64_T => 8,
                BOOL_T => 1,
                _ => return Err("unknown vector element type"),
            };
            3 + each * u16::from_be_bytes([*a, *b]) as usize
        }
        _ => return Err("unknown type code"),
    };
    let payload = rest.get(..size).ok_or("value cut short")?;
    out.push(code);
    out.extend_from_slice(payload);
    Ok(&rest[size..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binary::{BinaryEncoder, DoubleEncoding};
    use crate::value::ValueRef;

    fn encode(doubles: DoubleEncoding, long: bool, ts: f64, values: &[ValueRef<'_>]) -> Vec<u8> {
        let mut e = BinaryEncoder::new();
        e.set_doubles(doubles);
        let mut out = Vec::new();
        if long {
            // A first tuple too big for a short packet switches to long.
            let big = vec![7u8; 70_000];
            e.encode_tuple(&mut out, 1, 0, 0.0, [ValueRef::Blob(&big)])
                .unwrap();
            out.clear();
        }
        e.encode_tuple(&mut out, 2, 5, ts, values.iter().copied())
            .unwrap();
        out
    }

    #[test]
    fn exact_packets_become_the_reference_bytes() {
        let v = [
            ValueRef::Double(std::f64::consts::PI),
            ValueRef::String("hé"),
            ValueRef::Double(1e300),
            ValueRef::VecDouble(&[0.1, -0.0]),
            ValueRef::Blob(&[1, 2, 3]),
            ValueRef::Double(-0.0),
            ValueRef::Bool(true),
            ValueRef::Double(f64::NAN),
            ValueRef::VecBool(&[true, false]),
            ValueRef::Guid(9),
            ValueRef::Double(5e-324),
            ValueRef::Int32(-3),
        ];
        for long in [false, true] {
            let exact = encode(DoubleEncoding::Exact, long, 0.1, &v);
            let reference = encode(DoubleEncoding::Reference, long, 0.1, &v);
            assert_ne!(exact, reference);
            let mut out = vec![9];
            to_reference(&exact, &mut out).unwrap();
            assert_eq!(&out[1..], &reference[..], "long = {long}");
            // Two packets back to back, and reference input unchanged.
            let mut two = exact.clone();
            two.extend_from_slice(&reference);
            let mut out = Vec::new();
            to_reference(&two, &mut out).unwrap();
            assert_eq!(out, [reference.clone(), reference].concat());
        }
    }

    #[test]
    fn malformed_input_is_an_error_and_leaves_out_unchanged() {
        let good = encode(DoubleEncoding::Exact, false, 1.0, &[ValueRef::Double(2.0)]);
        let mut out = vec![1, 2];
        let cut = &good[..good.len() - 1];
        assert!(to_reference(cut, &mut out).is_err());
        let mut bad = good.clone();
        bad[2] = 9;
        assert!(to_reference(&bad, &mut out).is_err());
        assert_eq!(out, [1, 2]);
    }
}
