//! The byte form of one injected sample inside a per-thread queue.
//!
//! ```text
//! +-----------+----------+--------------+---------+---------------------+
//! | len: u32  | mp: u32  | skipped: u32 | ts: u64 | values, field order |
//! +-----------+----------+--------------+---------+---------------------+
//! ```
//!
//! Native byte order (the queue never leaves the process) and no type tags:
//! both sides know the measurement point's field types. Numbers take their
//! width, `bool` one byte, strings and blobs a `u32` length then the bytes,
//! vectors a `u32` element count then the elements. `len` counts the whole
//! record. `skipped` counts the samples of the same MP this thread dropped
//! (full ring) since its previous record of that MP, so that the writer can
//! leave the same gap in the sequence numbers. Writing a record copies the values and allocates nothing once the
//! thread's scratch buffer has grown to the largest sample.

use omsp::{OmlType, ValueRef};

/// Bytes before the first value.
pub(crate) const HEADER_LEN: usize = 20;

/// The length of the record of `values`, if each value has its field's
/// type (one pass for both, on the injection fast path).
#[inline]
pub(crate) fn checked_size(values: &[ValueRef<'_>], types: &[OmlType]) -> Option<usize> {
    let mut n = HEADER_LEN;
    for (v, &ty) in values.iter().zip(types) {
        if v.oml_type() != ty {
            return None;
        }
        n += value_size(v);
    }
    Some(n)
}

/// Writes one record of length `n` ([`checked_size`]) at the start of
/// `out`, which only ever grows (so the steady state neither allocates nor
/// clears). The values must already have been checked against the MP's types.
pub(crate) fn write(
    out: &mut Vec<u8>,
    n: usize,
    mp: u32,
    skipped: u32,
    ts: u64,
    values: &[ValueRef<'_>],
) {
    if out.len() < n {
        out.resize(n, 0);
    }
    let b = &mut out[..n];
    let mut at = 0;
    put(b, &mut at, (n as u32).to_ne_bytes());
    put(b, &mut at, mp.to_ne_bytes());
    put(b, &mut at, skipped.to_ne_bytes());
    put(b, &mut at, ts.to_ne_bytes());
    for v in values {
        match *v {
            ValueRef::Int32(x) => put(b, &mut at, x.to_ne_bytes()),
            ValueRef::UInt32(x) => put(b, &mut at, x.to_ne_bytes()),
            ValueRef::Int64(x) => put(b, &mut at, x.to_ne_bytes()),
            ValueRef::UInt64(x) | ValueRef::Guid(x) => put(b, &mut at, x.to_ne_bytes()),
            ValueRef::Double(x) => put(b, &mut at, x.to_ne_bytes()),
            ValueRef::Bool(x) => put(b, &mut at, [u8::from(x)]),
            ValueRef::String(s) => put_bytes(b, &mut at, s.as_bytes()),
            ValueRef::Blob(x) => put_bytes(b, &mut at, x),
            ValueRef::VecDouble(v) => put_vec(b, &mut at, v, f64::to_ne_bytes),
            ValueRef::VecInt32(v) => put_vec(b, &mut at, v, i32::to_ne_bytes),
            ValueRef::VecUInt32(v) => put_vec(b, &mut at, v, u32::to_ne_bytes),
            ValueRef::VecInt64(v) => put_vec(b, &mut at, v, i64::to_ne_bytes),
            ValueRef::VecUInt64(v) => put_vec(b, &mut at, v, u64::to_ne_bytes),
            ValueRef::VecBool(v) => put_vec(b, &mut at, v, |x| [u8::from(x)]),
        }
    }
}

/// Bytes of one value in a record.
#[inline]
fn value_size(v: &ValueRef<'_>) -> usize {
    match v {
        ValueRef::Int32(_) | ValueRef::UInt32(_) => 4,
        ValueRef::Int64(_) | ValueRef::UInt64(_) | ValueRef::Guid(_) | ValueRef::Double(_) => 8,
        ValueRef::Bool(_) => 1,
        ValueRef::String(s) => 4 + s.len(),
        ValueRef::Blob(b) => 4 + b.len(),
        ValueRef::VecDouble(v) => 4 + 8 * v.len(),
        ValueRef::VecInt32(v) => 4 + 4 * v.len(),
        ValueRef::VecUInt32(v) => 4 + 4 * v.len(),
        ValueRef::VecInt64(v) => 4 + 8 * v.len(),
        ValueRef::VecUInt64(v) => 4 + 8 * v.len(),
        ValueRef::VecBool(v) => 4 + v.len(),
    }
}

#[inline(always)]
fn put<const N: usize>(b: &mut [u8], at: &mut usize, x: [u8; N]) {
    b[*at..*at + N].copy_from_slice(&x);
    *at += N;
}

fn put_bytes(b: &mut [u8], at: &mut usize, x: &[u8]) {
    put(b, at, (x.len() as u32).to_ne_bytes());
    b[*at..*at + x.len()].copy_from_slice(x);
    *at += x.len();
}

fn put_vec<T: Copy, const N: usize>(b: &mut [u8], at: &mut usize, v: &[T], conv: fn(T) -> [u8; N]) {
    put(b, at, (v.len() as u32).to_ne_bytes());
    for &x in v {
        put(b, at, conv(x));
    }
}

/// The length of the record that starts `rec`.
pub(crate) fn len(rec: &[u8]) -> usize {
    u32_at(rec, 0) as usize
}

/// The measurement point id of a record.
pub(crate) fn mp(rec: &[u8]) -> u32 {
    u32_at(rec, 4)
}

/// Samples of the record's MP dropped just before it (same thread).
pub(crate) fn skipped(rec: &[u8]) -> u32 {
    u32_at(rec, 8)
}

/// The raw inject time of a record.
pub(crate) fn ts(rec: &[u8]) -> u64 {
    u64_at(rec, 12)
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut a = [0; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_ne_bytes(a)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_ne_bytes(a)
}

/// Where a field's value lives once its record is parsed.
#[derive(Debug, Clone, Copy)]
enum Slot {
    Int32(i32),
    UInt32(u32),
    Int64(i64),
    UInt64(u64),
    Guid(u64),
    Double(f64),
    Bool(bool),
    /// A string: byte range in the record.
    Str(usize, usize),
    /// A blob: byte range in the record.
    Blob(usize, usize),
    /// A vector, copied into the field's scratch vectors.
    Vector(OmlType),
}

/// Scratch space for vector fields (vectors need aligned element slices,
/// which the byte record cannot lend out).
#[derive(Debug, Default)]
struct VecScratch {
    f64s: Vec<f64>,
    i32s: Vec<i32>,
    u32s: Vec<u32>,
    i64s: Vec<i64>,
    u64s: Vec<u64>,
    bools: Vec<bool>,
}

/// Where the values of the current record are; reused from record to
/// record so that the writer allocates nothing in the steady state.
#[derive(Debug, Default)]
pub(crate) struct Parsed {
    slots: Vec<Slot>,
    vecs: Vec<VecScratch>,
}

impl Parsed {
    /// Parses the values of record `b` for an MP with these field types.
    pub(crate) fn parse(&mut self, b: &[u8], types: &[OmlType]) {
        self.slots.clear();
        if self.vecs.len() < types.len() {
            self.vecs.resize_with(types.len(), VecScratch::default);
        }
        let mut at = HEADER_LEN;
        for (i, &ty) in types.iter().enumerate() {
            let slot = match ty {
                OmlType::Int32 => {
                    at += 4;
                    Slot::Int32(u32_at(b, at - 4) as i32)
                }
                OmlType::UInt32 => {
                    at += 4;
                    Slot::UInt32(u32_at(b, at - 4))
                }
                OmlType::Int64 => {
                    at += 8;
                    Slot::Int64(u64_at(b, at - 8) as i64)
                }
                OmlType::UInt64 => {
                    at += 8;
                    Slot::UInt64(u64_at(b, at - 8))
                }
                OmlType::Guid => {
                    at += 8;
                    Slot::Guid(u64_at(b, at - 8))
                }
                OmlType::Double => {
                    at += 8;
                    Slot::Double(f64::from_bits(u64_at(b, at - 8)))
                }
                OmlType::Bool => {
                    at += 1;
                    Slot::Bool(b[at - 1] != 0)
                }
                OmlType::String | OmlType::Blob => {
                    let n = u32_at(b, at) as usize;
                    let start = at + 4;
                    at = start + n;
                    if ty == OmlType::String {
                        Slot::Str(start, at)
                    } else {
                        Slot::Blob(start, at)
                    }
                }
                vector => {
                    let n = u32_at(b, at) as usize;
                    at += 4;
                    let s = &mut self.vecs[i];
                    at = fill_vector(s, vector, &b[at..], n) + at;
                    Slot::Vector(vector)
                }
            };
            self.slots.push(slot);
        }
    }

    /// The value of field `i` of record `b` (after [`Parsed::parse`] of `b`).
    pub(crate) fn value<'a>(&'a self, b: &'a [u8], i: usize) -> ValueRef<'a> {
        match self.slots[i] {
            Slot::Int32(x) => ValueRef::Int32(x),
            Slot::UInt32(x) => ValueRef::UInt32(x),
            Slot::Int64(x) => ValueRef::Int64(x),
            Slot::UInt64(x) => ValueRef::UInt64(x),
            Slot::Guid(x) => ValueRef::Guid(x),
            Slot::Double(x) => ValueRef::Double(x),
            Slot::Bool(x) => ValueRef::Bool(x),
            // The bytes were copied from a `&str`, so this never falls back.
            Slot::Str(s, e) => ValueRef::String(std::str::from_utf8(&b[s..e]).unwrap_or("")),
            Slot::Blob(s, e) => ValueRef::Blob(&b[s..e]),
            Slot::Vector(ty) => {
                let v = &self.vecs[i];
                match ty {
                    OmlType::VecDouble => ValueRef::VecDouble(&v.f64s),
                    OmlType::VecInt32 => ValueRef::VecInt32(&v.i32s),
                    OmlType::VecUInt32 => ValueRef::VecUInt32(&v.u32s),
                    OmlType::VecInt64 => ValueRef::VecInt64(&v.i64s),
                    OmlType::VecUInt64 => ValueRef::VecUInt64(&v.u64s),
                    _ => ValueRef::VecBool(&v.bools),
                }
            }
        }
    }
}

/// Copies `n` vector elements from `b` into the scratch vector of their
/// type; returns the bytes consumed.
fn fill_vector(s: &mut VecScratch, ty: OmlType, b: &[u8], n: usize) -> usize {
    fn fill<T, const W: usize>(
        v: &mut Vec<T>,
        b: &[u8],
        n: usize,
        conv: fn([u8; W]) -> T,
    ) -> usize {
        v.clear();
        for c in b[..n * W].chunks_exact(W) {
            let mut a = [0; W];
            a.copy_from_slice(c);
            v.push(conv(a));
        }
        n * W
    }
    match ty {
        OmlType::VecDouble => fill(&mut s.f64s, b, n, f64::from_ne_bytes),
        OmlType::VecInt32 => fill(&mut s.i32s, b, n, i32::from_ne_bytes),
        OmlType::VecUInt32 => fill(&mut s.u32s, b, n, u32::from_ne_bytes),
        OmlType::VecInt64 => fill(&mut s.i64s, b, n, i64::from_ne_bytes),
        OmlType::VecUInt64 => fill(&mut s.u64s, b, n, u64::from_ne_bytes),
        _ => fill(&mut s.bools, b, n, |[x]: [u8; 1]| x != 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use omsp::Value;

    #[test]
    fn every_type_round_trips() {
        let values = vec![
            Value::Int32(-7),
            Value::UInt32(u32::MAX),
            Value::Int64(i64::MIN),
            Value::UInt64(u64::MAX),
            Value::Double(-0.5),
            Value::String("tab\there é".into()),
            Value::Blob(vec![0, 1, 0xff]),
            Value::Guid(42),
            Value::Bool(true),
            Value::VecDouble(vec![1.5, f64::NAN]),
            Value::VecInt32(vec![-1, 2]),
            Value::VecUInt32(vec![]),
            Value::VecInt64(vec![i64::MAX]),
            Value::VecUInt64(vec![1, 2, 3]),
            Value::VecBool(vec![true, false]),
        ];
        let refs: Vec<ValueRef<'_>> = values.iter().map(Value::as_value_ref).collect();
        let types: Vec<OmlType> = values.iter().map(Value::oml_type).collect();
        let mut rec = vec![0xEE; 1000];
        let n = checked_size(&refs, &types).unwrap();
        write(&mut rec, n, 9, 3, 125, &refs);
        rec.truncate(n);
        assert_eq!(len(&rec), n);
        let mut parsed = Parsed::default();
        parsed.parse(&rec, &types);
        assert_eq!(mp(&rec), 9);
        assert_eq!(skipped(&rec), 3);
        assert_eq!(ts(&rec), 125);
        for (i, v) in values.iter().enumerate() {
            assert!(parsed.value(&rec, i).to_value().same_as(v), "field {i}");
        }
    }
}
