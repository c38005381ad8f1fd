//! Reading a C `OmlValueU` array as the MP's declared types (spec §8.1,
//! `omlc_inject`).
//!
//! Each value is read through the union member of its field's declared
//! type: `int32Value` for int32, `longValue` (clamped to the int32 range,
//! as liboml2 does) for the deprecated long type, `stringValue.ptr` and
//! `.length` for strings, and so on. Nothing is retained: the runtime copies
//! the sample before `omlc_inject` returns.
//!
//! Differences from liboml2, on purpose: a NULL string or blob pointer is
//! sent as an empty value with a warning (liboml2 re-sent the previous
//! sample's value, spec §11 defect 20); a string is cut at its first NUL and
//! invalid UTF-8 is replaced by U+FFFD; a vector whose `elt_sz` differs from
//! its type's natural size (e.g. `omlc_set_vector_long` into an int32
//! vector) is converted element by element, clamping integers.
#![allow(unsafe_code)]

use std::borrow::Cow;
use std::mem::size_of;

use omsp::ValueRef;

use crate::types::*;

/// One value read from C, owning what could not be borrowed.
pub(crate) enum Arg<'a> {
    /// A value that borrows nothing or borrows C memory directly.
    Ref(ValueRef<'a>),
    /// A string (borrowed if valid UTF-8).
    Str(Cow<'a, str>),
    /// `[double]`.
    F64(Cow<'a, [f64]>),
    /// `[int32]`.
    I32(Cow<'a, [i32]>),
    /// `[uint32]`.
    U32(Cow<'a, [u32]>),
    /// `[int64]`.
    I64(Cow<'a, [i64]>),
    /// `[uint64]`.
    U64(Cow<'a, [u64]>),
    /// `[bool]` (always copied: C bools may hold any byte).
    Bools(Vec<bool>),
}

impl Arg<'_> {
    /// The value as the runtime takes it.
    pub(crate) fn as_ref(&self) -> ValueRef<'_> {
        match self {
            Arg::Ref(v) => *v,
            Arg::Str(s) => ValueRef::String(s),
            Arg::F64(v) => ValueRef::VecDouble(v),
            Arg::I32(v) => ValueRef::VecInt32(v),
            Arg::U32(v) => ValueRef::VecUInt32(v),
            Arg::I64(v) => ValueRef::VecInt64(v),
            Arg::U64(v) => ValueRef::VecUInt64(v),
            Arg::Bools(v) => ValueRef::VecBool(v),
        }
    }
}

/// Something odd about a value, for the caller to log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Oddity {
    /// A string, blob or vector with a NULL pointer was sent empty.
    NullPointer,
    /// A vector element size that cannot be converted; sent empty.
    BadElementSize(u16),
}

/// Reads `v` as C type `t`.
///
/// # Safety
/// `v` must be a value of type `t` as the accessor macros leave it: string,
/// blob and vector pointers NULL or valid for their `length` / `nof_elts`.
pub(crate) unsafe fn read<'a>(v: &'a OmlValueU, t: OmlValueT, odd: &mut Option<Oddity>) -> Arg<'a> {
    // SAFETY: every union member is plain data, so reading any of them is
    // defined; pointers are dereferenced under the caller's contract.
    unsafe {
        match t {
            OML_INT32_VALUE => Arg::Ref(ValueRef::Int32(v.int32_value)),
            OML_LONG_VALUE => {
                // C long is 32 bits on some platforms.
                #[allow(clippy::useless_conversion)]
                let l = i64::from(v.long_value);
                Arg::Ref(ValueRef::Int32(
                    l.clamp(i32::MIN.into(), i32::MAX.into()) as i32
                ))
            }
            OML_UINT32_VALUE => Arg::Ref(ValueRef::UInt32(v.uint32_value)),
            OML_INT64_VALUE => Arg::Ref(ValueRef::Int64(v.int64_value)),
            OML_UINT64_VALUE => Arg::Ref(ValueRef::UInt64(v.uint64_value)),
            OML_DOUBLE_VALUE => Arg::Ref(ValueRef::Double(v.double_value)),
            OML_GUID_VALUE => Arg::Ref(ValueRef::Guid(v.guid_value)),
            OML_BOOL_VALUE => Arg::Ref(ValueRef::Bool(v.bool_value != 0)),
            OML_STRING_VALUE => {
                let s = v.string_value;
                if s.ptr.is_null() {
                    *odd = Some(Oddity::NullPointer);
                    return Arg::Str(Cow::Borrowed(""));
                }
                let bytes = std::slice::from_raw_parts(s.ptr.cast::<u8>(), s.length);
                let bytes = match bytes.iter().position(|&b| b == 0) {
                    Some(n) => &bytes[..n],
                    None => bytes,
                };
                Arg::Str(String::from_utf8_lossy(bytes))
            }
            OML_BLOB_VALUE => {
                let b = v.blob_value;
                if b.ptr.is_null() {
                    if b.length > 0 {
                        *odd = Some(Oddity::NullPointer);
                    }
                    return Arg::Ref(ValueRef::Blob(&[]));
                }
                Arg::Ref(ValueRef::Blob(std::slice::from_raw_parts(
                    b.ptr.cast::<u8>(),
                    b.length,
                )))
            }
            OML_VECTOR_DOUBLE_VALUE => Arg::F64(vector(&v.vector_value, odd, Conv::Float)),
            OML_VECTOR_INT32_VALUE => Arg::I32(vector(&v.vector_value, odd, Conv::Int)),
            OML_VECTOR_UINT32_VALUE => Arg::U32(vector(&v.vector_value, odd, Conv::Int)),
            OML_VECTOR_INT64_VALUE => Arg::I64(vector(&v.vector_value, odd, Conv::Int)),
            OML_VECTOR_UINT64_VALUE => Arg::U64(vector(&v.vector_value, odd, Conv::Int)),
            OML_VECTOR_BOOL_VALUE => Arg::Bools(bools(&v.vector_value, odd)),
            // Field types are checked by omlc_add_mp; nothing else gets here.
            _ => Arg::Ref(ValueRef::Int32(0)),
        }
    }
}

/// Reads `v` as C type `t` when that needs no conversion and nothing odd
/// is in it: any number, bool or GUID; a blob with a pointer (or empty); a
/// string with a pointer, valid UTF-8 and no NUL in its `length` bytes,
/// borrowed as it is. `None` for anything else (vectors included), which
/// [`read`] handles.
///
/// # Safety
/// As [`read`].
#[inline]
pub(crate) unsafe fn read_borrowed(v: &OmlValueU, t: OmlValueT) -> Option<ValueRef<'_>> {
    // SAFETY: as in `read`.
    unsafe {
        Some(match t {
            OML_INT32_VALUE => ValueRef::Int32(v.int32_value),
            OML_LONG_VALUE => match read(v, t, &mut None) {
                Arg::Ref(r) => r,
                _ => return None,
            },
            OML_UINT32_VALUE => ValueRef::UInt32(v.uint32_value),
            OML_INT64_VALUE => ValueRef::Int64(v.int64_value),
            OML_UINT64_VALUE => ValueRef::UInt64(v.uint64_value),
            OML_DOUBLE_VALUE => ValueRef::Double(v.double_value),
            OML_GUID_VALUE => ValueRef::Guid(v.guid_value),
            OML_BOOL_VALUE => ValueRef::Bool(v.bool_value != 0),
            OML_STRING_VALUE => {
                let s = v.string_value;
                if s.ptr.is_null() {
                    return None;
                }
                let bytes = std::slice::from_raw_parts(s.ptr.cast::<u8>(), s.length);
                if plain_ascii(bytes) {
                    // SAFETY: ASCII is UTF-8.
                    ValueRef::String(std::str::from_utf8_unchecked(bytes))
                } else if bytes.contains(&0) {
                    return None;
                } else {
                    ValueRef::String(std::str::from_utf8(bytes).ok()?)
                }
            }
            OML_BLOB_VALUE => {
                let b = v.blob_value;
                if b.ptr.is_null() {
                    return (b.length == 0).then_some(ValueRef::Blob(&[]));
                }
                ValueRef::Blob(std::slice::from_raw_parts(b.ptr.cast::<u8>(), b.length))
            }
            _ => return None,
        })
    }
}

/// True when every byte is ASCII and none is NUL: the string can be sent
/// as it is. One pass, eight bytes at a time (the usual label of a few
/// dozen characters costs a handful of instructions, where a NUL search
/// then a UTF-8 validation cost two calls and two passes).
#[inline]
fn plain_ascii(b: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut chunks = b.chunks_exact(8);
    let mut bad = 0u64;
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        let w = u64::from_ne_bytes(w);
        // A zero byte, or a byte with the high bit set.
        bad |= (w.wrapping_sub(ONES) & !w & HIGH) | (w & HIGH);
    }
    for &x in chunks.remainder() {
        bad |= u64::from(x == 0 || x >= 0x80);
    }
    bad == 0
}

/// How elements of another size convert.
#[derive(Clone, Copy)]
enum Conv {
    /// Integers: sign- or zero-extended by the source signedness of `T`,
    /// then clamped.
    Int,
    /// Floating point: `float` (4 bytes) widens to double.
    Float,
}

/// An element type of a numeric vector.
trait Elt: Copy + 'static {
    /// Whether the C elements of other sizes are read as signed.
    const SIGNED: bool;
    /// From a wide integer, clamped.
    fn from_i128(x: i128) -> Self;
    /// From a float.
    fn from_f64(x: f64) -> Self;
}

macro_rules! elt_int {
    ($($t:ty => $signed:expr),*) => {$(
        impl Elt for $t {
            const SIGNED: bool = $signed;
            fn from_i128(x: i128) -> Self {
                x.clamp(<$t>::MIN.into(), <$t>::MAX.into()) as $t
            }
            fn from_f64(x: f64) -> Self {
                x as $t
            }
        }
    )*};
}
elt_int!(i32 => true, u32 => false, i64 => true, u64 => false);

impl Elt for f64 {
    const SIGNED: bool = true;
    fn from_i128(x: i128) -> Self {
        x as f64
    }
    fn from_f64(x: f64) -> Self {
        x
    }
}

/// The elements of vector `v` as `T`, borrowed when the memory already
/// has `T`'s size and alignment.
///
/// # Safety
/// `v.ptr` is NULL or valid for `nof_elts * elt_sz` bytes.
unsafe fn vector<'a, T: Elt>(
    v: &'a OmlVector,
    odd: &mut Option<Oddity>,
    conv: Conv,
) -> Cow<'a, [T]> {
    let n = usize::from(v.nof_elts);
    if n == 0 {
        return Cow::Borrowed(&[]);
    }
    if v.ptr.is_null() {
        *odd = Some(Oddity::NullPointer);
        return Cow::Borrowed(&[]);
    }
    let es = if v.elt_sz == 0 {
        size_of::<T>()
    } else {
        usize::from(v.elt_sz)
    };
    let base = v.ptr.cast::<u8>().cast_const();
    if es == size_of::<T>() {
        if base.cast::<T>().is_aligned() {
            // SAFETY: aligned, n elements of T's size (caller contract).
            return Cow::Borrowed(unsafe { std::slice::from_raw_parts(base.cast::<T>(), n) });
        }
        // SAFETY: n * es readable bytes (caller contract).
        return Cow::Owned(
            (0..n)
                .map(|i| unsafe { base.add(i * es).cast::<T>().read_unaligned() })
                .collect(),
        );
    }
    let read = |i: usize| -> Option<T> {
        // SAFETY: element i lies within the n * es readable bytes.
        let p = unsafe { base.add(i * es) };
        // SAFETY (all arms): reads `es` bytes at `p`, unaligned.
        unsafe {
            Some(match (conv, es) {
                (Conv::Float, 4) => T::from_f64(f64::from(p.cast::<f32>().read_unaligned())),
                (Conv::Float, _) => return None,
                (Conv::Int, 1) if T::SIGNED => T::from_i128(p.cast::<i8>().read().into()),
                (Conv::Int, 1) => T::from_i128(p.read().into()),
                (Conv::Int, 2) if T::SIGNED => {
                    T::from_i128(p.cast::<i16>().read_unaligned().into())
                }
                (Conv::Int, 2) => T::from_i128(p.cast::<u16>().read_unaligned().into()),
                (Conv::Int, 4) if T::SIGNED => {
                    T::from_i128(p.cast::<i32>().read_unaligned().into())
                }
                (Conv::Int, 4) => T::from_i128(p.cast::<u32>().read_unaligned().into()),
                (Conv::Int, 8) if T::SIGNED => {
                    T::from_i128(p.cast::<i64>().read_unaligned().into())
                }
                (Conv::Int, 8) => T::from_i128(p.cast::<u64>().read_unaligned().into()),
                _ => return None,
            })
        }
    };
    match (0..n).map(read).collect::<Option<Vec<T>>>() {
        Some(v) => Cow::Owned(v),
        None => {
            *odd = Some(Oddity::BadElementSize(v.elt_sz));
            Cow::Borrowed(&[])
        }
    }
}

/// The elements of a bool vector: any non-zero element is true.
///
/// # Safety
/// As [`vector`].
unsafe fn bools(v: &OmlVector, odd: &mut Option<Oddity>) -> Vec<bool> {
    let n = usize::from(v.nof_elts);
    if n == 0 {
        return Vec::new();
    }
    if v.ptr.is_null() {
        *odd = Some(Oddity::NullPointer);
        return Vec::new();
    }
    let es = usize::from(v.elt_sz.max(1));
    let base = v.ptr.cast::<u8>().cast_const();
    (0..n)
        .map(|i| {
            // SAFETY: element i's `es` bytes are readable (caller contract).
            let e = unsafe { std::slice::from_raw_parts(base.add(i * es), es) };
            e.iter().any(|&b| b != 0)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vec_of<T>(data: &mut [T], elt: usize) -> OmlValueU {
        let mut u = OmlValueU::zeroed();
        u.vector_value = OmlVector {
            ptr: data.as_mut_ptr().cast(),
            length: data.len() * elt,
            size: 0,
            nof_elts: data.len() as u16,
            elt_sz: elt as u16,
        };
        u
    }

    #[test]
    fn scalars_and_clamping() {
        let mut odd = None;
        let mut u = OmlValueU::zeroed();
        u.long_value = 1 << 40;
        // SAFETY: plain values.
        unsafe {
            assert!(matches!(
                read(&u, OML_LONG_VALUE, &mut odd),
                Arg::Ref(ValueRef::Int32(i32::MAX))
            ));
            u.uint64_value = u64::MAX;
            assert!(matches!(
                read(&u, OML_UINT64_VALUE, &mut odd),
                Arg::Ref(ValueRef::UInt64(u64::MAX))
            ));
            u.bool_value = 7;
            assert!(matches!(
                read(&u, OML_BOOL_VALUE, &mut odd),
                Arg::Ref(ValueRef::Bool(true))
            ));
        }
        assert_eq!(odd, None);
    }

    #[test]
    fn strings() {
        let mut odd = None;
        let mut u = OmlValueU::zeroed();
        // SAFETY: the pointers outlive the reads.
        unsafe {
            assert!(matches!(read(&u, OML_STRING_VALUE, &mut odd), Arg::Str(s) if s.is_empty()));
            assert_eq!(odd, Some(Oddity::NullPointer));
            let text = b"ab\xffc\0tail";
            u.string_value.ptr = text.as_ptr() as *mut _;
            u.string_value.length = text.len();
            assert!(
                matches!(read(&u, OML_STRING_VALUE, &mut odd), Arg::Str(s) if s == "ab\u{fffd}c")
            );
        }
    }

    #[test]
    fn plain_ascii_finds_every_nul_and_high_byte() {
        let base = *b"0123456789abcdefghijklmnopqrs";
        for len in 0..base.len() {
            assert!(plain_ascii(&base[..len]));
            for at in 0..len {
                for bad in [0u8, 0x80, 0xff, 0xc3] {
                    let mut s = base;
                    s[at] = bad;
                    assert!(!plain_ascii(&s[..len]), "{len} {at} {bad}");
                }
            }
        }
        assert!(plain_ascii(&[1, 0x7f, 0x7f, 1, 1, 1, 1, 1, 0x7f]));
    }

    #[test]
    fn borrowed_reads_agree_with_read_or_decline() {
        let mut u = OmlValueU::zeroed();
        let text = b"plain text \xc3\xa9";
        // SAFETY: the pointers outlive the reads.
        unsafe {
            u.long_value = -(1 << 40);
            assert!(matches!(
                read_borrowed(&u, OML_LONG_VALUE),
                Some(ValueRef::Int32(i32::MIN))
            ));
            u.double_value = 2.5;
            assert!(matches!(
                read_borrowed(&u, OML_DOUBLE_VALUE),
                Some(ValueRef::Double(2.5))
            ));
            u.string_value.ptr = text.as_ptr() as *mut _;
            u.string_value.length = text.len();
            assert!(matches!(
                read_borrowed(&u, OML_STRING_VALUE),
                Some(ValueRef::String("plain text é"))
            ));
            // What `read` converts is declined: a NUL, bad UTF-8, NULL.
            for bad in [&b"a\0b"[..], b"a\xffb"] {
                u.string_value.ptr = bad.as_ptr() as *mut _;
                u.string_value.length = bad.len();
                assert!(read_borrowed(&u, OML_STRING_VALUE).is_none());
            }
            u.string_value.ptr = std::ptr::null_mut();
            assert!(read_borrowed(&u, OML_STRING_VALUE).is_none());
            u.blob_value.length = 3;
            assert!(read_borrowed(&u, OML_BLOB_VALUE).is_none());
            u.blob_value.length = 0;
            assert!(matches!(
                read_borrowed(&u, OML_BLOB_VALUE),
                Some(ValueRef::Blob(&[]))
            ));
            assert!(read_borrowed(&u, OML_VECTOR_INT32_VALUE).is_none());
        }
    }

    #[test]
    fn vectors_convert_element_sizes() {
        let mut odd = None;
        let mut longs: [i64; 3] = [-1, 1 << 40, 5];
        let u = vec_of(&mut longs, 8);
        // SAFETY: `u` points into `longs`.
        let got = unsafe { read(&u, OML_VECTOR_INT32_VALUE, &mut odd) };
        assert!(matches!(
            got.as_ref(),
            ValueRef::VecInt32(&[-1, i32::MAX, 5])
        ));
        let mut ints: [i32; 2] = [-1, 2];
        let u = vec_of(&mut ints, 4);
        // SAFETY: as above.
        let got = unsafe { read(&u, OML_VECTOR_UINT64_VALUE, &mut odd) };
        assert!(matches!(
            got.as_ref(),
            ValueRef::VecUInt64(&[0xffff_ffff, 2])
        ));
        let mut d = [1.5f64, -2.0];
        let u = vec_of(&mut d, 8);
        // SAFETY: as above.
        let got = unsafe { read(&u, OML_VECTOR_DOUBLE_VALUE, &mut odd) };
        assert!(matches!(got, Arg::F64(Cow::Borrowed(_))));
        assert_eq!(odd, None);
        let mut b = [0u8, 2, 1];
        let u = vec_of(&mut b, 1);
        // SAFETY: as above.
        let got = unsafe { read(&u, OML_VECTOR_BOOL_VALUE, &mut odd) };
        assert!(matches!(
            got.as_ref(),
            ValueRef::VecBool(&[false, true, true])
        ));
        let mut bad = [0u8; 6];
        let u = vec_of(&mut bad, 3);
        // SAFETY: as above.
        let got = unsafe { read(&u, OML_VECTOR_INT32_VALUE, &mut odd) };
        assert!(matches!(got.as_ref(), ValueRef::VecInt32(&[])));
        assert_eq!(odd, Some(Oddity::BadElementSize(3)));
    }
}
